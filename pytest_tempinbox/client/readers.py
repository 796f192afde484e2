"""How a test's program reaches an inbox over IMAP or POP3: :class:`ReaderAccount`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["ReaderAccount", "reader_account"]


@dataclass(frozen=True)
class ReaderAccount:
    """Where and as whom a program fetches one inbox's mail (docs/readers.md).

    ``tls`` is the server's mode for the listener: ``off``, ``starttls``,
    ``required`` (STARTTLS/STLS before login) or ``implicit`` (TLS from the
    first byte: IMAPS, POP3S).
    """

    host: str
    port: int
    user: str
    password: str
    tls: str


def reader_account(
    info: Mapping[str, Any], host: str, address: str, password: str | None, protocol: str
) -> ReaderAccount:
    """The account of inbox ``address`` on the ``protocol`` listener (``imap``, ``pop3``).

    ``info`` is the server's ``GET /api/info``, ``host`` where it is reached.

    Raises :class:`RuntimeError` when the server has no such listener (it was
    started without ``--imap-port``/``--pop3-port``) or did not hand out the
    inbox's password (a server older than the readers).
    """
    port = info.get(f"{protocol}_port")
    name = protocol.upper()
    if not port:
        raise RuntimeError(
            f"the server has no {name} listener: start it with --{protocol}-port 0 "
            f"(InboxServer({protocol}_port=0); the plugin's --tempinbox-readers)"
        )
    if password is None:
        raise RuntimeError(f"no {name} password for {address}: the server gave none")
    tls = str(info.get("smtp", {}).get("tls", "off"))
    return ReaderAccount(host, int(port), address, password, tls)
