"""What every reader session is given: :class:`ReaderContext`, one per listener."""

from __future__ import annotations

import ssl
from dataclasses import dataclass, field

from ..counters import ServerCounters
from ..store.protocol import InboxStore
from .changes import InboxChanges
from .counters import ReaderCounters
from .passwords import InboxPasswords

__all__ = ["ReaderContext"]


@dataclass(frozen=True)
class ReaderContext:
    """The server's parts and settings that an IMAP or POP3 session reads.

    ``store`` holds the inboxes; ``hostname`` names the server in greetings;
    ``passwords`` checks a login (the user is an inbox's address, the password
    the one ``POST /api/generate`` handed out with it). ``tls_context`` is the
    SMTP side's server context (same CA or certificate), None when the server's
    ``tls`` mode is ``off``. ``tls`` is that mode: with ``implicit`` the
    listener wraps each connection at accept (``implicit_tls``); with
    ``starttls`` and ``required`` the protocol offers STARTTLS (IMAP) or STLS
    (POP3), and ``required`` refuses a login before it (:attr:`tls_required`).
    ``idle_timeout`` is the seconds a session may stay silent (the SMTP side's
    idle timeout), ``max_connections`` the sessions a listener serves at once.
    ``counters`` are the server's (``GET /metrics``), ``tally`` the readers'
    own counts among them; ``changes`` tells IDLE sessions of deletions made
    by the server's other reader sessions.
    """

    store: InboxStore
    hostname: str
    passwords: InboxPasswords
    tls_context: ssl.SSLContext | None
    implicit_tls: bool
    counters: ServerCounters
    tls: str = "off"
    idle_timeout: float = 300.0
    max_connections: int = 100
    tally: ReaderCounters = field(default_factory=ReaderCounters)
    changes: InboxChanges = field(default_factory=InboxChanges)

    @property
    def starttls(self) -> bool:
        """Tell whether the protocol offers STARTTLS/STLS (to a session not under TLS yet)."""
        return self.tls in ("starttls", "required") and self.tls_context is not None

    @property
    def tls_required(self) -> bool:
        """Tell whether a login must wait for STARTTLS/STLS (the ``required`` mode)."""
        return self.tls == "required"
