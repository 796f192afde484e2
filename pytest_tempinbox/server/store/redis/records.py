"""What the Redis store (:mod:`.store`) reads back from Redis: inboxes, messages, faults.

Plain records built from a script's reply; no I/O but the one callback that
keeps a message's parsed JSON form in Redis.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from ....models import Envelope, Fault
from ..stored_message import NO_KEYS, Facets, StoredMessage

if TYPE_CHECKING:
    from ....side_values import ProviderRecord

__all__ = ["RedisInbox", "RedisStoredMessage", "SaveJSON", "fault_entry", "read_fault"]

SaveJSON = Callable[[str, str, bytes], None]
"""Keeps message ``id``'s JSON form in Redis: called with the address, the id and the JSON."""


class RedisInbox:
    """One live inbox as read from Redis; ``gen`` tells it from one made again at its address."""

    __slots__ = ("address", "created_at", "expires_at", "gen")

    def __init__(self, address: str, created: bytes, ttl: bytes, gen: bytes) -> None:
        self.address = address
        self.created_at = datetime.fromisoformat(created.decode())
        self.expires_at = self.created_at + timedelta(seconds=float(ttl)) if ttl else None
        self.gen = int(gen)

    def __repr__(self) -> str:
        return f"RedisInbox(address={self.address!r})"


class RedisStoredMessage(StoredMessage):
    """A message read from Redis: its JSON form, once computed, is kept there for every server."""

    __slots__ = ("_store_json",)

    def __init__(
        self,
        save: SaveJSON,
        id: str,
        inbox: str,
        envelope: Envelope,
        raw: bytes,
        received_at: datetime,
        parsed: bytes | None = None,
        dkim_keys: Mapping[str, str] = NO_KEYS,
        provider: ProviderRecord | None = None,
        uid: int = 0,
    ) -> None:
        super().__init__(id, inbox, envelope, raw, received_at, dkim_keys, provider, uid)
        self._store_json = save
        self._json = parsed

    @property
    def json(self) -> bytes:
        """The message's JSON object, UTF-8 encoded: computed once, by whichever server first."""
        if self._json is None:
            self._save(StoredMessage.json.fget(self))  # type: ignore[attr-defined]
        assert self._json is not None
        return self._json

    def facets(self) -> Facets:
        """What the message filters look at; the JSON form they compute goes to Redis too."""
        parsed = self._json is not None
        facets = super().facets()
        if not parsed and self._json is not None:
            self._save(self._json)
        return facets

    def _save(self, parsed: bytes) -> None:
        self._json = parsed
        self._store_json(self.inbox, self.id, parsed)


def fault_entry(fault: Fault) -> str:
    """A queued fault as Redis keeps it: ``stage times json``, the JSON without its times."""
    data = fault.to_json()
    del data["times"]
    return f"{fault.stage} {fault.times} {json.dumps(data)}"


def read_fault(entry: bytes) -> Fault:
    """The fault that :func:`fault_entry` wrote."""
    _, times, data = entry.decode().split(" ", 2)
    return Fault.from_json({**json.loads(data), "times": int(times)})
