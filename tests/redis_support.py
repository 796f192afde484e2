"""One real ``redis-server`` for the test session, emptied before each test that uses it.

The process itself is :class:`~tests.redis_process.RedisProcess` (loopback,
ephemeral port, no persistence): a test needing Redis is skipped, saying why,
where ``redis-server`` or the redis package is missing. ``tests/conftest.py``
makes fixtures of :func:`session_redis` and :func:`clean_redis`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from .redis_process import RedisProcess


def session_redis(folder: Path) -> Iterator[RedisProcess]:
    """Start ``redis-server`` in ``folder`` (without persistence); stop it at the end."""
    process = RedisProcess(folder, appendonly=False)
    try:
        yield process
    finally:
        process.stop()


def clean_redis(process: RedisProcess) -> RedisProcess:
    """Start ``process`` again if a test stopped it, and empty it (``FLUSHALL``)."""
    import redis

    if process.process is None or process.process.poll() is not None:
        process.start()
    with redis.Redis.from_url(process.url) as client:
        client.flushall()
    return process
