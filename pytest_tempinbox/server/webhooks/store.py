"""The store of a server with webhooks: its own, telling of deliveries and deletions.

:func:`announcing` is called only when some webhook is configured; without
one the server keeps its store untouched, and nothing of this package is
imported. Deliveries (SMTP and the providers' sends alike) are told by the
store itself, to :meth:`~.sender.Webhooks.delivered`, its watcher
(:meth:`~..store.protocol.InboxStore.on_delivered`): no layer in front of
``deliver``. Deletions are told by :meth:`~..store.protocol.InboxStore.delete`,
replaced on the store object itself, so that every other member costs exactly
what it did; each queues one event (:meth:`~.sender.Webhooks.announce`) once
the store has done its part. The server that took the delivery announces it:
with Redis, other servers hear of it through the store's notices, never
through this, so each event is sent once.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import TYPE_CHECKING

from ..store.addresses import fold_address
from .events import Event
from .sender import Webhooks

if TYPE_CHECKING:
    from ..store.protocol import InboxStore

__all__ = ["announcing"]


def announcing(store: InboxStore, webhooks: Webhooks) -> InboxStore:
    """``store`` itself, its deliveries and deletions announced to ``webhooks`` from now on."""
    delete, owner = store.delete, store.owner
    announce, by_tenant = webhooks.announce, webhooks.by_tenant
    store.on_delivered(webhooks.delivered)

    def announced_delete(address: str) -> int:
        """The store's ``delete``; then the deletion is announced to the webhooks."""
        tenant = owner(address) if by_tenant else None  # known before the inbox goes
        purged = delete(address)
        now = datetime.now(timezone.utc)
        announce(Event("inbox.deleted", fold_address(address), None, now, tenant, purged=purged))
        return purged

    announced_delete.__doc__ = (
        f"{delete.__doc__}\n\nThen the deletion is announced to the webhooks."
    )
    # On the instance: the store's class, and every other store, stay as they are.
    setattr(store, "delete", announced_delete)  # noqa: B010 (mypy: a method is read-only)
    return store
