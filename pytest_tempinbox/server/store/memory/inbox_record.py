"""The in-memory store's record of one inbox: its messages, its waiters, its faults.

Only :class:`~.store.Store` makes and changes these, under its lock; other
code sees them through :class:`~pytest_tempinbox.server.store.protocol.StoredInbox`.
"""

from __future__ import annotations

import asyncio
import bisect
from datetime import datetime

from ....errors import InvalidRequest
from ..faults import FaultQueue
from ..stored_message import StoredMessage
from ..waiting import wake_all

__all__ = ["InboxRecord"]


class InboxRecord:
    """One live inbox (a routing session): its messages, oldest first, waiters and faults."""

    # A plain class, not a dataclass: creating a dataclass costs about 1 ms of import.
    __slots__ = (
        "address",
        "by_id",
        "created_at",
        "deadline",
        "expires_at",
        "faults",
        "last_uid",
        "messages",
        "owner",
        "stored_bytes",
        "uid_validity",
        "waiters",
    )

    def __init__(
        self, address: str, created_at: datetime, owner: str | None = None, uid_validity: int = 1
    ) -> None:
        self.address = address
        self.uid_validity = uid_validity  # IMAP's UIDVALIDITY, fixed for the inbox's life
        self.last_uid = 0  # the uid of the last message delivered, kept or not
        self.owner = owner  # the tenant that generated it
        self.created_at = created_at
        self.expires_at: datetime | None = None
        self.deadline: float | None = None  # time.monotonic() of expires_at
        self.messages: list[StoredMessage] = []
        self.stored_bytes = 0  # of the messages' raw bytes, for a tenant's bytes quota
        self.by_id: dict[str, StoredMessage] = {}
        self.waiters: set[asyncio.Future[None]] = set()
        self.faults = FaultQueue()

    def __repr__(self) -> str:
        return f"InboxRecord(address={self.address!r}, messages={len(self.messages)})"

    def messages_after(self, after: str | None) -> list[StoredMessage]:
        """Return the messages received after the message ``after`` (all of them for None).

        Raises :class:`InvalidRequest` when ``after`` is not the id of a message in
        this inbox.
        """
        if after is None:
            return list(self.messages)
        if after not in self.by_id:
            raise InvalidRequest(f"after={after[:80]!r} is not the id of a message in this inbox")
        return self.messages_since(after)

    def messages_since(self, cursor: str) -> list[StoredMessage]:
        """Return the messages whose id sorts after ``cursor``, which need not be one of them.

        Ids sort in arrival order all over the store, so any id is a point in
        time, also one of a message since evicted; ``""`` is before them all.
        """
        return self.messages[bisect.bisect_right(self.messages, cursor, key=_message_id) :]

    def wake(self) -> None:
        """Wake every pending wait on this inbox (:meth:`.store.Store.wait`), from any thread."""
        if self.waiters:
            wake_all(self.waiters)
        self.waiters.clear()


def _message_id(message: StoredMessage) -> str:
    return message.id
