"""Which tenant generated each inbox, as the Redis store keeps it for every server.

An inbox's owner is a key beside its others (``...{address}:owner``), with the
inbox's time to live, so both go together: the create script
(:data:`.scripts.CREATE`) writes it with the inbox, in the same atomic step,
and the purge of the inbox drops it. Each tenant's addresses are a set,
pruned of the dead ones when listed. An inbox with no owner key belongs to no
tenant: with tenants on, no caller can see it (the check fails closed).
"""

from __future__ import annotations

import redis

from . import scripts

__all__ = ["addresses", "count", "disown", "owner"]


def _owned_key(owner: str) -> str:
    return f"{scripts.PREFIX}tenant:{owner}:inboxes"


def owner(connection: redis.Redis, address: str) -> str | None:
    """The tenant that generated the inbox at ``address`` (folded); None when none did."""
    value = connection.get(scripts.inbox_key(address, "owner"))
    return None if value is None else _text(value)


def addresses(connection: redis.Redis, owner: str) -> list[str]:
    """The addresses ``owner`` generated, sorted: some may be dead since."""
    return sorted(_text(member) for member in connection.smembers(_owned_key(owner)))


def count(connection: redis.Redis, address: str) -> int:
    """How many messages the inbox at ``address`` holds."""
    return int(connection.zcard(scripts.inbox_key(address, "ids")))


def disown(connection: redis.Redis, address: str, owner: str) -> None:
    """Take a dead ``address`` off ``owner``'s list."""
    connection.srem(_owned_key(owner), address)


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
