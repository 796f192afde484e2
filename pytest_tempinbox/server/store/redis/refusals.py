"""The recipients refused at RCPT or at the end of DATA, kept in Redis for every server to see.

The Redis store's :class:`~pytest_tempinbox.server.store.protocol.Refusals` (see
:mod:`.store`): the same contract as :class:`~pytest_tempinbox.server.store.refusals.RefusalLog`,
on a list that every server process on the Redis shares. Newest first, trimmed
to :data:`~pytest_tempinbox.server.store.refusals.MAX_REFUSALS`, and the whole list expires
:data:`~pytest_tempinbox.server.store.refusals.REFUSAL_MAX_AGE` seconds after the last refusal;
older entries are skipped when read. An entry is a JSON array: ``at``,
``address``, ``reply``, ``client_ip``, ``helo``, then ``tenant``,
``transcript`` and ``stage`` as far as needed: a refusal at RCPT is written
without its stage, as servers before stages wrote it (and read every entry
shorter than 8 items as one at RCPT), and a refusal at DATA with all 8, which
those servers read as one at RCPT. Also here, for every module
of the Redis store: :func:`unavailable`, which turns Redis being down into
:class:`~pytest_tempinbox.errors.StoreUnavailable`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any, TypeVar

import redis

from ....models import Refusal, Stage
from ..refusals import MAX_FIELD, MAX_REFUSALS, REFUSAL_MAX_AGE, RefusalFinder, read_transcript
from .scripts import REFUSALS

__all__ = ["RedisRefusals", "unavailable"]

_T = TypeVar("_T")

REDIS_DOWN = (
    redis.ConnectionError,  # BusyLoadingError too: Redis is reading its data back
    redis.TimeoutError,
    redis.exceptions.OutOfMemoryError,  # maxmemory reached under noeviction
    redis.exceptions.ReadOnlyError,  # a replica, as after a failover not yet followed
)
"""The redis-py errors that mean Redis does not take the request now (it may later)."""


def unavailable(call: Callable[[], _T]) -> _T:
    """Run ``call``, raising :class:`~pytest_tempinbox.errors.StoreUnavailable` if Redis is down."""
    from ....errors import StoreUnavailable

    try:
        return call()
    except REDIS_DOWN as exc:
        raise StoreUnavailable(f"Redis does not answer: {str(exc).rstrip('.')}") from None


class RedisRefusals(RefusalFinder):
    """The refusals of every server process on one Redis, from any thread."""

    def __init__(self, client: redis.Redis, max_age: float = REFUSAL_MAX_AGE) -> None:
        self.max_age = max_age
        self._redis = client

    def record(
        self,
        address: str,
        reply: str,
        client_ip: str | None,
        helo: str | None,
        tenant: str | None = None,
        transcript: dict[str, Any] | None = None,
        stage: Stage = "rcpt",
    ) -> None:
        """Remember that mail to ``address`` was refused with ``reply`` at ``stage``.

        ``tenant``: the tenant the session logged in as, if any (kept only then, or
        as null before a ``transcript``: the JSON of the session's transcript, or
        null before a ``stage`` other than ``"rcpt"``).
        """
        fields: list[Any] = [
            datetime.now(timezone.utc).isoformat(),
            address[:MAX_FIELD],
            reply,
            client_ip,
            None if helo is None else helo[:MAX_FIELD],
        ]
        if stage != "rcpt":
            fields += [tenant, transcript, stage]
        elif transcript is not None:
            fields += [tenant, transcript]
        elif tenant is not None:
            fields.append(tenant)
        entry = json.dumps(fields)
        pipe = self._redis.pipeline(transaction=True)
        pipe.lpush(REFUSALS, entry)
        pipe.ltrim(REFUSALS, 0, MAX_REFUSALS - 1)
        pipe.pexpire(REFUSALS, int(self.max_age * 1000))
        unavailable(pipe.execute)

    def _newest_first(self, since: datetime | None) -> list[Refusal]:
        entries: list[Any] = unavailable(lambda: self._redis.lrange(REFUSALS, 0, -1))
        oldest = datetime.now(timezone.utc).timestamp() - self.max_age
        found = []
        for entry in entries:
            at, address, reply, client_ip, helo, *rest = json.loads(entry)
            tenant = rest[0] if rest else None
            written = rest[1] if len(rest) > 1 else None
            refusal = Refusal(
                datetime.fromisoformat(at),
                address,
                reply,
                client_ip,
                helo,
                None,
                tenant,
                None if written is None else read_transcript(written),
                "data" if len(rest) > 2 and rest[2] == "data" else "rcpt",
            )
            if refusal.at.timestamp() >= oldest and (since is None or refusal.at >= since):
                found.append(refusal)
        return found
