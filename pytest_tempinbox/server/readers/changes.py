"""Deletions made by this server's readers, told to its IMAP sessions in IDLE.

The store's delivery notice wakes IDLE for new mail; nothing in the store
tells of single messages deleted (a long-poll must not wake for them). So an
IMAP EXPUNGE or a POP3 QUIT that deleted messages calls
:meth:`InboxChanges.deleted`, and each IDLE session of the same server on that
inbox, waiting on :meth:`InboxChanges.waiter` beside the store's notice,
reports ``* n EXPUNGE`` at once. Deletions made by another server on the same
Redis are reported at the next delivery or at IDLE's periodic look (a minute).
"""

from __future__ import annotations

import asyncio

__all__ = ["InboxChanges"]


class InboxChanges:
    """The IDLE sessions waiting to hear of deletions, by inbox; used on the server's loop only."""

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
