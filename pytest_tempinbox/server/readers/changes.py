"""Messages deleted from an inbox, told to the IMAP sessions in IDLE on it.

The store's delivery notice wakes IDLE for new mail, and must not wake a
long-poll for a deletion; so the store tells deletions apart
(:meth:`~pytest_tempinbox.server.store.protocol.InboxStore.on_messages_deleted`:
the memory store at once, the Redis store for a deletion by any of its
servers, through its notices), to :meth:`InboxChanges.deleted`. Each IDLE
session, waiting on :meth:`InboxChanges.waiter` beside the delivery notice,
then reports ``* n EXPUNGE`` at once.
"""

from __future__ import annotations

import asyncio

__all__ = ["InboxChanges"]


class InboxChanges:
    """The IDLE sessions waiting to hear of deletions, by inbox; on the store's serving loop."""

    def __init__(self) -> None:
        self._waiting: dict[str, set[asyncio.Future[None]]] = {}

    def waiter(self, address: str) -> asyncio.Future[None]:
        """A future done when messages of ``address`` are next deleted; cancel it once done with."""
        key = address.lower()
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(key, set()).add(future)
        future.add_done_callback(lambda done: self._forget(key, done))
        return future

    def deleted(self, address: str) -> None:
        """Wake every session waiting on ``address``: some of its messages were deleted."""
        for future in self._waiting.pop(address.lower(), set()):
            if not future.done():
                future.set_result(None)

    def _forget(self, key: str, future: asyncio.Future[None]) -> None:
        waiting = self._waiting.get(key)
        if waiting is not None:
            waiting.discard(future)
            if not waiting:
                del self._waiting[key]
