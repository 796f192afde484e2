"""The selected ``INBOX`` as one IMAP session sees it, and the flags the server keeps.

A session's view (:class:`Mailbox`) is the inbox's messages at its last look,
numbered 1 to n in UID order; :meth:`Mailbox.refresh` looks again and says
which were expunged (by this session, another one, POP3 or the HTTP API) and
how many arrived. Flags live in memory, per server (:class:`FlagBook`): every
IMAP session of this server sees them, a restart or another server does not.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from datetime import datetime, timezone

from ...store.protocol import InboxStore, StoredMessage
from .tokens import SequenceSet, resolve

__all__ = ["FLAGS", "FlagBook", "Mailbox"]

FLAGS = ("\\Answered", "\\Flagged", "\\Deleted", "\\Seen", "\\Draft")
"""The flags kept: the system flags but ``\\Recent``; keywords are not kept."""
_CANONICAL = {flag.lower(): flag for flag in FLAGS}


class FlagBook:
    """The flags of every message this server's IMAP sessions touched, by inbox and message id."""

    def __init__(self) -> None:
        self._flags: dict[str, dict[str, set[str]]] = {}

    def of(self, address: str, message_id: str) -> set[str]:
        """The message's flags (a live set: changing it changes the book)."""
        inbox = self._flags.setdefault(address, {})
        flags = inbox.get(message_id)
        if flags is None:
            flags = inbox[message_id] = set()
        return flags

    def keep_only(self, address: str, message_ids: Iterable[str]) -> None:
        """Forget the flags of the inbox's messages that are gone (so the book stays small)."""
        inbox = self._flags.get(address)
        if inbox:
            live = set(message_ids)
            for gone in [key for key in inbox if key not in live]:
                del inbox[gone]


def canonical_flags(names: Iterable[str]) -> set[str]:
    """The kept flags among ``names`` (any case); others are dropped, as RFC 3501 lets a server."""
    return {_CANONICAL[name.lower()] for name in names if name.lower() in _CANONICAL}


class Mailbox:
    """One session's view of the selected inbox."""

    def __init__(self, store: InboxStore, address: str, flags: FlagBook, read_only: bool) -> None:
        self.store = store
        self.address = address
        self.book = flags
        self.read_only = read_only
        self.messages: list[StoredMessage] = store.messages(address)
        self.uids: list[int] = [message.uid for message in self.messages]
        self.uid_validity = store.uid_validity(address)
        self.uid_next = store.uid_next(address)
        flags.keep_only(address, (message.id for message in self.messages))

    def flags(self, message: StoredMessage) -> set[str]:
        """The message's flags (live)."""
        return self.book.of(self.address, message.id)

    def unseen_count(self) -> int:
        """How many messages lack the seen flag."""
        return sum("\\Seen" not in self.flags(message) for message in self.messages)

    def first_unseen(self) -> int | None:
        """The sequence number of the first message without the seen flag."""
        for number, message in enumerate(self.messages, 1):
            if "\\Seen" not in self.flags(message):
                return number
        return None

    def select(self, ranges: SequenceSet, *, by_uid: bool) -> list[tuple[int, StoredMessage]]:
        """The messages a sequence set (or UID set) names, as (sequence number, message)."""
        if not self.messages:
            return []
        if not by_uid:
            count = len(self.messages)
            numbers: set[int] = set()
            for low, high in resolve(ranges, count):
                numbers.update(range(max(low, 1), min(high, count) + 1))
            return [(number, self.messages[number - 1]) for number in sorted(numbers)]
        chosen: dict[int, StoredMessage] = {}
        for low, high in resolve(ranges, self.uids[-1]):
            start = bisect.bisect_left(self.uids, low)
            stop = bisect.bisect_right(self.uids, high)
            for index in range(start, stop):
                chosen[index + 1] = self.messages[index]
        return sorted(chosen.items())

    def refresh(self) -> tuple[list[int], int]:
        """Look at the inbox again: the numbers expunged (highest first), and how many exist.

        Raises as the store does when the inbox is gone.
        """
        current = self.store.messages(self.address)
        live = {message.id for message in current}
        expunged = [
            number for number, message in enumerate(self.messages, 1) if message.id not in live
        ]
        kept = {message.id for message in self.messages}
        arrived = [message for message in current if message.id not in kept]
        survivors = [message for message in self.messages if message.id in live]
        self.messages = survivors + arrived
        self.uids = [message.uid for message in self.messages]
        if self.uids:
            self.uid_next = max(self.uid_next, self.uids[-1] + 1)
        return expunged[::-1], len(self.messages)

    def forget(self, gone: list[tuple[int, StoredMessage]]) -> list[int]:
        """Drop messages this session deleted; their sequence numbers, highest first."""
        ids = {message.id for _, message in gone}
        self.messages = [message for message in self.messages if message.id not in ids]
        self.uids = [message.uid for message in self.messages]
        return sorted((number for number, _ in gone), reverse=True)


def internal_date(received: datetime) -> bytes:
    """INTERNALDATE's form: ``"28-Nov-2026 05:58:32 +0000"``."""
    received = received.astimezone(timezone.utc)
    month = _MONTHS[received.month - 1]
    text = f"{received.day:2d}-{month}-{received.year:04d} {received:%H:%M:%S} +0000"
    return b'"' + text.encode("ascii") + b'"'


_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
MONTHS = _MONTHS
