"""The store of a server with webhooks: its own, telling of deliveries and deletions.

:func:`announcing` wraps the server's store only when some webhook is
configured; without one the server keeps its store as it is, and nothing of
this package is imported. Every member goes straight to the store, but
:meth:`AnnouncingStore.deliver` (SMTP and the providers' sends alike) and
:meth:`AnnouncingStore.delete`, which queue one event each
(:meth:`~.sender.Webhooks.announce`) once the store has done its part. The
server that took the delivery announces it: with Redis, other servers hear of
it through the store's notices, never through this, so each event is sent once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from ..store.addresses import fold_address
from .events import Event
from .sender import Webhooks

if TYPE_CHECKING:
    from ...side_values import ProviderRecord
    from ..store.protocol import InboxStore, StoredMessage

__all__ = ["AnnouncingStore", "announcing"]


class AnnouncingStore:
    """``store``, with its deliveries and deletions announced to ``webhooks``."""

    def __init__(self, store: InboxStore, webhooks: Webhooks) -> None:
        self._store = store
        self.webhooks = webhooks

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    async def deliver(
        self,
        mail_from: str,
        rcpt_to: Sequence[str],
        raw: bytes,
        provider: ProviderRecord | None = None,
    ) -> list[StoredMessage]:
        """The store's :meth:`~..store.protocol.InboxStore.deliver`, then one event per copy."""
        stored = await self._store.deliver(mail_from, rcpt_to, raw, provider)
        announce = self.webhooks.announce
        for message in stored:
            announce(Event("message.received", message.inbox, message))
        return stored

    def delete(self, address: str) -> int:
        """The store's :meth:`~..store.protocol.InboxStore.delete`, then its event."""
        owner: str | bool | None = False
        if self.webhooks.by_tenant:  # known before the inbox goes
            owner = self._store.owner(address)
        purged = self._store.delete(address)
        event = Event("inbox.deleted", fold_address(address), extra={"purged": purged})
        event.owner = owner
        self.webhooks.announce(event)
        return purged

    def __repr__(self) -> str:
        return f"<AnnouncingStore {self._store!r}>"


def announcing(store: InboxStore, webhooks: Webhooks) -> InboxStore:
    """``store`` with its deliveries and deletions announced to ``webhooks``."""
    return cast("InboxStore", AnnouncingStore(store, webhooks))
