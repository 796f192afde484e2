"""The trusted reverse proxies (``--trusted-proxy``): whose forwarded headers name the client.

Standard library only. A connection from a trusted proxy has its client named
by the proxy's ``X-Forwarded-For`` or ``Forwarded`` header; from anyone else
those headers are ignored, so a client cannot choose the address it is
counted under (``docs/tenants.md``, "Rate limits").
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

__all__ = ["MAX_KEYS", "TrustedProxies", "parse_proxy"]

MAX_KEYS = 65_536
"""Entries a table of client addresses or tokens holds at most; the oldest goes first."""


def parse_proxy(text: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network:
    """A ``--trusted-proxy``: an IP address or a CIDR network; :class:`ValueError` otherwise."""
    try:
        return ipaddress.ip_network(text.strip(), strict=False)
    except ValueError:
        raise ValueError(f"{text!r} is not an IP address or a network (10.0.0.0/8, ::1)") from None


class TrustedProxies:
    """The proxies whose ``X-Forwarded-For`` and ``Forwarded`` headers name the client.

    :meth:`client` is the peer's address, unless the peer is a trusted proxy:
    then the address that proxy was reached from, the right-most one of its
    header that is no trusted proxy itself (a client may write anything on the
    left of what the proxies add). Verdicts on peers are kept, bounded.
    """

    __slots__ = ("_known", "networks")

    def __init__(self, proxies: Iterable[str]) -> None:
        self.networks = tuple(parse_proxy(text) for text in proxies)
        self._known: dict[str, bool] = {}

    def __bool__(self) -> bool:
        return bool(self.networks)

    def trusts(self, address: str) -> bool:
        """Whether ``address`` is one of the trusted proxies."""
        known = self._known.get(address)
        if known is None:
            try:
                ip = ipaddress.ip_address(address.strip("[]"))
            except ValueError:
                known = False
            else:
                known = any(ip in network for network in self.networks)
            if len(self._known) >= MAX_KEYS:
                self._known.clear()
            self._known[address] = known
        return known

    def client(self, peer: str, headers: Iterable[tuple[bytes, bytes]]) -> str:
        """The client's address for a connection from ``peer`` with request ``headers``."""
        if not self.networks or not self.trusts(peer):
            return peer
        forwarded: list[str] = []
        for name, value in headers:
            if name == b"forwarded":
                forwarded += _forwarded_for(value.decode("latin-1"))
            elif name == b"x-forwarded-for" and not forwarded:
                forwarded += [hop.strip() for hop in value.decode("latin-1").split(",")]
        address = peer
        for hop in reversed(forwarded):
            address = _bare(hop)
            if not address or not self.trusts(address):
                break
        return address or peer


def _forwarded_for(value: str) -> list[str]:
    """The ``for=`` addresses of a ``Forwarded`` header (RFC 7239), in order."""
    hops = []
    for element in value.split(","):
        for pair in element.split(";"):
            name, _, found = pair.strip().partition("=")
            if name.lower() == "for":
                hops.append(found.strip().strip('"'))
    return hops


def _bare(hop: str) -> str:
    """An address without its port: ``[2001:db8::1]:443`` and ``192.0.2.1:80`` alike."""
    if hop.startswith("["):
        return hop[1 : hop.find("]")] if "]" in hop else ""
    return hop.rsplit(":", 1)[0] if hop.count(":") == 1 else hop
