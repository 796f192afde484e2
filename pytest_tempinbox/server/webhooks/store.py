"""The store of a server with webhooks: its own, telling of deliveries and deletions.

:func:`announcing` is called only when some webhook is configured; without
one the server keeps its store untouched, and nothing of this package is
imported. It replaces two members on the store object itself, so that every
other member costs exactly what it did (a wrapper in front of the store would
add a layer to every call the SMTP side makes):
:meth:`~..store.protocol.InboxStore.deliver` (SMTP and the providers' sends
alike) and :meth:`~..store.protocol.InboxStore.delete` queue one event each
(:meth:`~.sender.Webhooks.announce`) once the store has done its part. The
server that took the delivery announces it: with Redis, other servers hear of
it through the store's notices, never through this, so each event is sent once.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from ..store.addresses import fold_address
from .events import Event
from .sender import Webhooks

if TYPE_CHECKING:
    from ...side_values import ProviderRecord
    from ..store.protocol import InboxStore, StoredMessage

__all__ = ["announcing"]


def announcing(store: InboxStore, webhooks: Webhooks) -> InboxStore:
    """``store`` itself, its deliveries and deletions announced to ``webhooks`` from now on."""
    deliver, delete, owner = store.deliver, store.delete, store.owner
    announce, by_tenant = webhooks.announce, webhooks.by_tenant

    async def announced_deliver(
        mail_from: str,
        rcpt_to: Sequence[str],
        raw: bytes,
        provider: ProviderRecord | None = None,
        *,
        within_quotas: bool = False,
    ) -> list[StoredMessage]:
        """The store's ``deliver``; then each copy is announced to the webhooks."""
        stored = await deliver(mail_from, rcpt_to, raw, provider, within_quotas=within_quotas)
        for message in stored:  # the owner is looked up later, off this path, if needed
            # tuple's own __new__: a NamedTuple's is a Python function, twice the cost.
            announce(tuple.__new__(Event, (
                "message.received", message.inbox, message.id, message.received_at,
                None, not by_tenant, 0, message,
            )))  # fmt: skip
        return stored

    def announced_delete(address: str) -> int:
        """The store's ``delete``; then the deletion is announced to the webhooks."""
        tenant = owner(address) if by_tenant else None  # known before the inbox goes
        purged = delete(address)
        now = datetime.now(timezone.utc)
        announce(Event("inbox.deleted", fold_address(address), None, now, tenant, purged=purged))
        return purged

    announced_deliver.__doc__ = f"{deliver.__doc__}\n\nThen each copy is announced to the webhooks."
    announced_delete.__doc__ = (
        f"{delete.__doc__}\n\nThen the deletion is announced to the webhooks."
    )
    # On the instance: the store's class, and every other store, stay as they are.
    setattr(store, "deliver", announced_deliver)  # noqa: B010 (mypy: a method is read-only)
    setattr(store, "delete", announced_delete)  # noqa: B010
    return store
