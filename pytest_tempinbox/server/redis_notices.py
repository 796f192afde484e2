"""The Redis store's notices between server processes: pub/sub, and the waits they wake.

Each store (:mod:`.redis_store`) keeps one subscription to the store's channel,
in a task on the loop that serves its waits: a delivery anywhere publishes
``d <address>``, a delete or expiry ``x <address>``, a new fault ``f``. The
task wakes this process's waits on that address (they read Redis again) and
notes the faults. When the connection drops it wakes every wait (which then
finds Redis down, or mail that came meanwhile) and subscribes again after a
short backoff, for as long as the store is open.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Callable

import redis.asyncio
from redis.backoff import NoBackoff
from redis.retry import Retry

from ..errors import StoreUnavailable
from .redis_refusals import REDIS_DOWN
from .redis_scripts import CHANNEL, FAULTS_ADDED

__all__ = ["Listener", "Waiters"]

log = logging.getLogger(__name__)

SUBSCRIBE_TIMEOUT = 5.0
"""Seconds a wait gives the subscription to start before it answers that Redis is down."""
_FIRST_BACKOFF, _LAST_BACKOFF = 0.05, 1.0  # seconds between attempts to subscribe again


class Waiters:
    """The pending waits of this process, by address; woken from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_address: dict[str, set[asyncio.Future[None]]] = {}

    def add(self, address: str, waiter: asyncio.Future[None]) -> None:
        """Have ``waiter`` woken by the next notice about ``address``."""
        with self._lock:
            self._by_address.setdefault(address, set()).add(waiter)

    def discard(self, address: str, waiter: asyncio.Future[None]) -> None:
        """Forget ``waiter``, woken or not."""
        with self._lock:
            waiters = self._by_address.get(address)
            if waiters is not None:
                waiters.discard(waiter)
                if not waiters:
                    del self._by_address[address]

    def wake(self, address: str) -> None:
        """Wake the waits on ``address``; nearly free when there is none."""
        if address not in self._by_address:
            return
        with self._lock:
            waiters = self._by_address.pop(address, ())
        _wake_all(waiters)

    def wake_every(self) -> None:
        """Wake every pending wait."""
        with self._lock:
            waiters = [waiter for group in self._by_address.values() for waiter in group]
            self._by_address.clear()
        _wake_all(waiters)


def _wake_all(waiters: set[asyncio.Future[None]] | list[asyncio.Future[None]] | tuple[()]) -> None:
    try:
        running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    for waiter in waiters:
        loop = waiter.get_loop()
        if loop is running:
            _wake(waiter)
        elif not loop.is_closed():
            loop.call_soon_threadsafe(_wake, waiter)


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


class Listener:
    """The store's subscription to its channel: one connection, one task on the serving loop.

    ``on_fault`` is called when a fault was added by any process (also at
    each subscription, if one ever was).
    """

    def __init__(self, url: str, waiters: Waiters, on_fault: Callable[[], None]) -> None:
        self._url = url
        self._waiters = waiters
        self._on_fault = on_fault
        self._task: asyncio.Task[None] | None = None
        self._ready: asyncio.Event | None = None
        self._closed = False

    @property
    def listening(self) -> bool:
        """Tell whether the subscription is up: notices reach this process."""
        ready = self._ready
        return ready is not None and ready.is_set()

    def begin(self, loop: asyncio.AbstractEventLoop) -> asyncio.Event:
        """Subscribe from ``loop`` (the running one) unless done already; return its readiness."""
        task, ready = self._task, self._ready
        if task is None or ready is None or task.done() or task.get_loop() is not loop:
            ready = self._ready = asyncio.Event()
            self._task = loop.create_task(self._listen(ready))
        return ready

    async def ensure(self) -> None:
        """Subscribe from the running loop unless done already; wait until subscribed.

        Raises :class:`~pytest_tempinbox.errors.StoreUnavailable` when it cannot
        subscribe within :data:`SUBSCRIBE_TIMEOUT` seconds.
        """
        ready = self.begin(asyncio.get_running_loop())
        if ready.is_set():
            return
        try:
            await asyncio.wait_for(ready.wait(), SUBSCRIBE_TIMEOUT)
        except asyncio.TimeoutError:
            raise StoreUnavailable("Redis does not answer: cannot subscribe to notices") from None

    def stop(self) -> None:
        """End the subscription, from any thread; the task closes its connection."""
        self._closed = True
        task = self._task
        if task is not None and not task.done() and not task.get_loop().is_closed():
            task.get_loop().call_soon_threadsafe(task.cancel)

    async def _listen(self, ready: asyncio.Event) -> None:
        backoff = _FIRST_BACKOFF
        while not self._closed:
            client = redis.asyncio.Redis.from_url(
                self._url, retry=Retry(NoBackoff(), 0), socket_connect_timeout=2
            )
            pubsub = client.pubsub()
            try:
                await pubsub.subscribe(CHANNEL)
                if await client.exists(FAULTS_ADDED):
                    self._on_fault()
                ready.set()
                backoff = _FIRST_BACKOFF
                self._waiters.wake_every()  # mail may have come before the subscription
                async for notice in pubsub.listen():
                    if notice["type"] == "message":
                        self._notice(notice["data"])
            except (*REDIS_DOWN, OSError) as exc:
                log.debug("Redis notices interrupted (%s); subscribing again", exc)
                ready.clear()
                self._waiters.wake_every()
            finally:
                with contextlib.suppress(Exception):
                    await pubsub.aclose()  # type: ignore[no-untyped-call]
                with contextlib.suppress(Exception):
                    await client.aclose()
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, _LAST_BACKOFF)

    def _notice(self, data: bytes) -> None:
        kind, _, address = data.decode("utf-8", "replace").partition(" ")
        if kind == "f":
            self._on_fault()
        else:
            self._waiters.wake(address)
