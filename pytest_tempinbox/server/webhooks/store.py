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
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, cast

from ..store.addresses import fold_address
from .events import Event
from .sender import Webhooks

if TYPE_CHECKING:
    from ...quotas import QuotaPolicy
    from ...side_values import ProviderRecord
    from ..store.protocol import InboxStore, StoredMessage

__all__ = ["AnnouncingStore", "announcing"]

_ANNOUNCED = frozenset({"deliver", "delete"})


class AnnouncingStore:
    """``store``, with its deliveries and deletions announced to ``webhooks``."""

    def __init__(self, store: InboxStore, webhooks: Webhooks) -> None:
        self._store = store
        self.webhooks = webhooks
        # The store's methods, bound once: a call costs what it costs on the store itself.
        for name in dir(type(store)):
            if name.startswith("_") or name in _ANNOUNCED:
                continue
            if not isinstance(getattr(type(store), name), property):
                setattr(self, name, getattr(store, name))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)  # the store's properties, read each time

    @property
    def faults_added(self) -> bool:
        """The store's, read on every SMTP transaction."""
        return self._store.faults_added

    @property
    def quotas(self) -> QuotaPolicy | None:
        """The store's, read on every SMTP transaction."""
        return self._store.quotas

    async def deliver(
        self,
        mail_from: str,
        rcpt_to: Sequence[str],
        raw: bytes,
        provider: ProviderRecord | None = None,
    ) -> list[StoredMessage]:
        """The store's :meth:`~..store.protocol.InboxStore.deliver`, then one event per copy."""
        stored = await self._store.deliver(mail_from, rcpt_to, raw, provider)
        announce, known = self.webhooks.announce, not self.webhooks.by_tenant
        for message in stored:
            announce(
                Event("message.received", message.inbox, message.id, message.received_at,
                      None, known)
            )  # fmt: skip
        return stored

    def delete(self, address: str) -> int:
        """The store's :meth:`~..store.protocol.InboxStore.delete`, then its event."""
        owner = self._store.owner(address) if self.webhooks.by_tenant else None  # before it goes
        purged = self._store.delete(address)
        now = datetime.now(timezone.utc)
        self.webhooks.announce(Event("inbox.deleted", fold_address(address), None, now, owner,
                                     purged=purged))  # fmt: skip
        return purged

    def __repr__(self) -> str:
        return f"<AnnouncingStore {self._store!r}>"


def announcing(store: InboxStore, webhooks: Webhooks) -> InboxStore:
    """``store`` with its deliveries and deletions announced to ``webhooks``."""
    return cast("InboxStore", AnnouncingStore(store, webhooks))
