"""The Redis store's notices between server processes: pub/sub, and the waits they wake.

Each store (:mod:`.store`) keeps one subscription to the store's channel,
in a task on the loop that serves its waits: a delivery anywhere publishes
``d <address>`` (to an inbox some process waits on: a wait's read marks it
watched), a delete or expiry ``x <address>``, a new fault ``f``, messages
deleted from a watched inbox ``m <address>`` (told to the store's deletion
watchers, IMAP's IDLE, without waking a wait). The
task wakes this process's waits on that address (they read Redis again), notes
the faults, and forgets a deleted inbox in :class:`LiveInboxes` (what ``RCPT``
is answered from). When the connection drops it wakes every wait (which then
finds Redis down, or mail that came meanwhile), forgets every live inbox, and
subscribes again after a short backoff, for as long as the store is open.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable

from ....errors import StoreUnavailable
from ..waiting import wake_all
from .connection import RedisConnection
from .scripts import CHANNEL, FAULTS_ADDED

__all__ = ["Listener", "LiveInboxes", "Waiters"]

log = logging.getLogger(__name__)

SUBSCRIBE_TIMEOUT = 5.0
"""Seconds a wait gives the subscription to start before it answers that Redis is down."""
_FIRST_BACKOFF, _LAST_BACKOFF = 0.05, 1.0  # seconds between attempts to subscribe again


MAX_LIVE = 100_000
"""How many live inboxes :class:`LiveInboxes` remembers; past it, it starts again empty."""
EXPIRY_MARGIN = 0.1
"""Seconds before an inbox's expiry when :class:`LiveInboxes` stops vouching for it."""


class LiveInboxes:
    """The inboxes this process knows are live, so that ``RCPT`` need not ask Redis each time.

    An inbox is remembered when this process creates it or Redis says it is
    live, until its expiry (less :data:`EXPIRY_MARGIN`, for the clocks' skew),
    its delete (the notice of any process), a delivery that finds it gone, or
    the subscription dropping: notices may have been missed then. Only
    consulted while notices reach this process. An inbox deleted on another
    server in the instant before a ``RCPT`` here may still be accepted at
    ``RCPT``: the delivery then finds it gone, and ``DATA`` is refused.
    From any thread.
    """

    def __init__(self) -> None:
        self._deadlines: dict[str, float] = {}

    def remember(self, address: str, seconds_left: float | None) -> None:
        """Vouch for ``address`` for ``seconds_left`` seconds (None: until deleted)."""
        deadlines = self._deadlines
        if len(deadlines) >= MAX_LIVE:
            deadlines.clear()
        left = float("inf") if seconds_left is None else seconds_left - EXPIRY_MARGIN
        if left > 0:
            deadlines[address] = time.monotonic() + left

    def vouches(self, address: str) -> bool:
        """Tell whether ``address`` is known live now."""
        deadline = self._deadlines.get(address)
        return deadline is not None and deadline > time.monotonic()

    def forget(self, address: str) -> None:
        """No longer vouch for ``address``."""
        self._deadlines.pop(address, None)

    def clear(self) -> None:
        """No longer vouch for any inbox."""
        self._deadlines.clear()


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
        wake_all(waiters)

    def wake_every(self) -> None:
        """Wake every pending wait."""
        with self._lock:
            waiters = [waiter for group in self._by_address.values() for waiter in group]
            self._by_address.clear()
        wake_all(waiters)


class Listener:
    """The store's subscription to its channel: one connection, one task on the serving loop.

    ``on_fault`` is called when a fault was added by any process (also at
    each subscription, if one ever was). ``live`` forgets the inboxes deleted
    anywhere, and all of them while not subscribed. ``on_deleted`` is called
    with the address of an inbox whose messages a process deleted (no wait is
    woken: no message arrived).
    """

    def __init__(
        self,
        url: str,
        waiters: Waiters,
        live: LiveInboxes,
        on_fault: Callable[[], None],
        on_deleted: Callable[[str], None] = lambda address: None,
    ) -> None:
        self._url = url
        self._waiters = waiters
        self._live = live
        self._on_fault = on_fault
        self._on_deleted = on_deleted
        self._task: asyncio.Task[None] | None = None
        self._ready: asyncio.Event | None = None
        self._closed = False

    @property
    def listening(self) -> bool:
        """Tell whether the subscription is up: notices reach this process."""
        ready, task = self._ready, self._task
        return ready is not None and ready.is_set() and task is not None and not task.done()

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
            subscription = RedisConnection(self._url)
            try:
                await subscription.subscribe(CHANNEL, self._notice)
                self._live.clear()  # deletes may have gone unnoticed until now
                if await self._faults_were_added():
                    self._on_fault()
                ready.set()
                backoff = _FIRST_BACKOFF
                self._waiters.wake_every()  # mail may have come before the subscription
                await subscription.wait_closed()
                log.debug("Redis notices interrupted (the connection closed); subscribing again")
            except (StoreUnavailable, OSError) as exc:
                log.debug("Redis notices interrupted (%s); subscribing again", exc)
            finally:
                subscription.close()
            ready.clear()
            self._live.clear()
            self._waiters.wake_every()
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, _LAST_BACKOFF)

    async def _faults_were_added(self) -> bool:
        """Ask Redis whether any process ever added a fault, on a connection of its own."""
        probe = RedisConnection(self._url)
        try:
            return bool(await probe.call(b"EXISTS", FAULTS_ADDED))
        finally:
            probe.close()

    def _notice(self, data: bytes) -> None:
        kind, _, address = data.decode("utf-8", "replace").partition(" ")
        if kind == "f":
            self._on_fault()
            return
        if kind == "m":
            self._on_deleted(address)
            return
        if kind == "x":
            self._live.forget(address)
        self._waiters.wake(address)
