"""How a store's pending wait sleeps: one future, woken by a delivery or by its time.

Both stores park each long-poll, filtered wait and event stream on a future
of its own, which a delivery's notice sets (:func:`wake`, :func:`wake_all`),
and awaits it with an :func:`alarm` of the loop's for its time:
``asyncio.wait_for`` would add a second future, a callback and a coroutine
of its own to every pending wait (about 800 bytes each, and a hop more on
every wake).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

__all__ = ["alarm", "running_loop", "wake", "wake_all"]


def wake(waiter: asyncio.Future[None]) -> None:
    """End the wait on ``waiter`` (on its loop), unless it has ended already."""
    if not waiter.done():
        waiter.set_result(None)


def wake_all(waiters: Iterable[asyncio.Future[None]]) -> None:
    """End the waits on ``waiters``, from any thread: on its own loop, each at once."""
    running = running_loop()
    for waiter in waiters:
        loop = waiter.get_loop()
        if loop is running:
            wake(waiter)
        elif not loop.is_closed():
            loop.call_soon_threadsafe(wake, waiter)


def alarm(waiter: asyncio.Future[None], timeout: float) -> asyncio.TimerHandle:
    """Wake ``waiter`` in ``timeout`` seconds: the waiting coroutine then awaits it directly.

    The caller cancels the handle once the wait ends, however it ends.
    """
    return waiter.get_loop().call_later(max(timeout, 0.0), wake, waiter)


def running_loop() -> asyncio.AbstractEventLoop | None:
    """The loop running in this thread, or None: what a caller from any thread asks first.

    The public form of ``asyncio._get_running_loop()``: as cheap on the loop's
    own thread; elsewhere the RuntimeError costs about 0.3 us, against the
    several of the ``call_soon_threadsafe()`` that follows it there.
    """
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
