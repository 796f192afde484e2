"""The store a server keeps its inboxes in, as its configuration names it.

``memory`` is :class:`~.memory.store.Store`, in this process. A ``redis://`` or
``rediss://`` URL is the Redis store (:mod:`.redis.store`), which several
servers can share; redis-py and hiredis (the ``redis`` extra) are imported
only then.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import TYPE_CHECKING

from ...config import DEFAULT_STORE, ServerConfig
from ...errors import ServerStartError
from .memory.store import Store
from .protocol import InboxStore

if TYPE_CHECKING:
    from ...quotas import QuotaPolicy

__all__ = ["open_store", "quota_policy"]

REDIS_EXTRA_MISSING = (
    "the Redis store needs the {} package, which is not installed: "
    "pip install 'pytest-tempinbox[redis]'"
)


def quota_policy(config: ServerConfig) -> QuotaPolicy | None:
    """The quotas the store checks: None without tenants and without a ``--quota-*`` flag."""
    given = config.quotas
    if config.tenants is None and (given is None or not given.any_active()):
        return None  # nothing counted: the quotas' module is not even loaded
    from ...quotas import QuotaPolicy, Quotas

    if config.tenants is None:
        return QuotaPolicy(given or Quotas())
    return QuotaPolicy(given or Quotas(), config.tenants.quotas)


def open_store(config: ServerConfig) -> InboxStore:
    """The store ``config.store`` names, with the configuration's domains and limits.

    Raises :class:`~pytest_tempinbox.errors.ServerStartError` when the Redis
    store is asked for and redis-py or hiredis is not installed. Nothing is connected
    yet: the server checks that the store answers when it starts.
    """
    dkim_keys = MappingProxyType(dict(config.dkim_keys))
    quotas = quota_policy(config)
    if config.store == DEFAULT_STORE:
        return Store(
            config.domains,
            max_messages_per_inbox=config.max_messages_per_inbox,
            max_stored_bytes=config.max_stored_bytes,
            inbox_ttl=config.inbox_ttl,
            dkim_keys=dkim_keys,
            quotas=quotas,
            compress_read_messages=config.compress_read_messages,
        )
    try:
        from .redis.store import RedisStore
    except ImportError as exc:
        if exc.name not in ("redis", "hiredis"):
            raise
        raise ServerStartError(REDIS_EXTRA_MISSING.format(exc.name)) from None
    return RedisStore(
        config.store,
        config.domains,
        max_messages_per_inbox=config.max_messages_per_inbox,
        max_stored_bytes=config.max_stored_bytes,
        inbox_ttl=config.inbox_ttl,
        dkim_keys=dkim_keys,
        quotas=quotas,
    )
