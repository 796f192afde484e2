"""Serving a store from a test: its coroutines run on a loop of their own, as in a server.

A server awaits :meth:`~pytest_tempinbox.server.store.protocol.InboxStore.start` on
its loop and runs the store's coroutines there (the SMTP side's members and
the waits). :class:`ServingLoop` does the same in a thread, for tests that
call a store directly; :func:`run` and the helpers below run one coroutine on
the loop that serves the store, or on a loop of its own for a store nobody
serves.
"""

from __future__ import annotations

import asyncio
import importlib.util
import threading
import weakref
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, TypeVar

import pytest

from pytest_tempinbox.models import Fault, Stage
from pytest_tempinbox.server.store.protocol import InboxStore, StoredMessage

__all__ = ["ServingLoop", "accepts", "deliver", "run", "take_fault"]

_T = TypeVar("_T")
_Store = TypeVar("_Store", bound=InboxStore)

# The server's event loops, as test parameters: uvloop's only where it is installed.
_NO_UVLOOP = importlib.util.find_spec("uvloop") is None
LOOPS = [
    "asyncio",
    pytest.param("uvloop", marks=pytest.mark.skipif(_NO_UVLOOP, reason="uvloop is not installed")),
]
_TIMEOUT = 30.0
_serving: weakref.WeakKeyDictionary[Any, asyncio.AbstractEventLoop] = weakref.WeakKeyDictionary()


class ServingLoop:
    """A loop in a thread that serves the stores given to :meth:`serve`, until :meth:`close`."""

    def __init__(
        self, new_loop: Callable[[], asyncio.AbstractEventLoop] = asyncio.new_event_loop
    ) -> None:
        self.loop = new_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="serving-loop")
        self._thread.start()
        self._stores: list[InboxStore] = []

    def call(self, coroutine: Coroutine[Any, Any, _T]) -> _T:
        """Run ``coroutine`` on the loop and return what it returns."""
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(_TIMEOUT)

    def serve(self, store: _Store) -> _Store:
        """Start ``store`` on the loop, as a server does; return it."""
        self.call(store.start())
        _serving[store] = self.loop
        self._stores.append(store)
        return store

    def close(self) -> None:
        """Close every store served, let what runs on the loop end, then close the loop."""
        self.call(self._close_stores())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(_TIMEOUT)
        self.loop.close()

    async def _close_stores(self) -> None:
        for store in self._stores:
            store.close()
        tasks = asyncio.all_tasks() - {asyncio.current_task()}
        if tasks:  # a Redis store's subscription closes its connection as it ends
            await asyncio.wait(tasks, timeout=_TIMEOUT)


def run(store: InboxStore, coroutine: Coroutine[Any, Any, _T]) -> _T:
    """Run ``coroutine`` on the loop serving ``store``, or with :func:`asyncio.run` if none does."""
    loop = _serving.get(store)
    if loop is None:
        return asyncio.run(coroutine)
    return asyncio.run_coroutine_threadsafe(coroutine, loop).result(_TIMEOUT)


def deliver(
    store: InboxStore, mail_from: str, rcpt_to: Sequence[str], raw: bytes
) -> list[StoredMessage]:
    """``store.deliver(...)`` as the SMTP side awaits it."""
    return run(store, store.deliver(mail_from, rcpt_to, raw))


def accepts(store: InboxStore, address: str) -> bool:
    """``store.accepts(address)`` as the SMTP side awaits it."""
    return run(store, store.accepts(address))


def take_fault(store: InboxStore, address: str, stage: Stage) -> Fault | None:
    """``store.take_fault(address, stage)`` as the SMTP side awaits it."""
    return run(store, store.take_fault(address, stage))
