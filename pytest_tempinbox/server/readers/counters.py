"""What the IMAP and POP3 listeners count, for ``GET /metrics``: plain integers, by protocol.

The server's :class:`~pytest_tempinbox.server.counters.ServerCounters` holds a
:class:`ReaderCounters` once a reader listener starts (None before, so that a
server without readers reports nothing of them); each session adds to its
protocol's :class:`ProtocolCounters` with an integer addition, nothing more.
"""

from __future__ import annotations

__all__ = ["ProtocolCounters", "ReaderCounters"]


class ProtocolCounters:
    """One protocol's counts since the server started.

    ``sessions`` counts the connections served (not those refused as over the
    connection limit), ``logins_failed`` the logins refused (a wrong user or
    password, an unknown or another tenant's inbox), ``commands`` the command
    lines read (bad ones too), ``messages_fetched`` the messages whose text
    was sent (IMAP: each message of a FETCH answer with a body or header item;
    POP3: each RETR), and ``messages_deleted`` the messages deleted from their
    inbox (IMAP: EXPUNGE, UID EXPUNGE, CLOSE; POP3: at QUIT).
    """

    __slots__ = ("commands", "logins_failed", "messages_deleted", "messages_fetched", "sessions")

    def __init__(self) -> None:
        self.sessions = 0
        self.logins_failed = 0
        self.commands = 0
        self.messages_fetched = 0
        self.messages_deleted = 0


class ReaderCounters:
    """The counts of each reader protocol, by its name in metrics' ``protocol`` label."""

    __slots__ = ("imap", "pop3")

    def __init__(self) -> None:
        self.imap = ProtocolCounters()
        self.pop3 = ProtocolCounters()

    def by_protocol(self) -> dict[str, ProtocolCounters]:
        """Each protocol's counters, by the label's value (``imap``, ``pop3``)."""
        return {"imap": self.imap, "pop3": self.pop3}
