"""The webhooks' queue and senders: events leave the delivery path at once, and are POSTed later.

:meth:`Webhooks.announce` is all a deletion pays, and
:meth:`Webhooks.delivered` (the store's watcher) all a delivery does: an
append to a bounded queue (O(1), never waiting; from any thread), or, beyond
:data:`QUEUE_LENGTH` events waiting, a drop that is counted. One dispatcher
task on the server's loop drains it: each event becomes one job per webhook
that hears it (the server's, and its tenant's), each job one POST
(:mod:`.client`) of at most :data:`ATTEMPT_TIMEOUT` seconds, :data:`SENDERS`
at once.

A connection error, a timeout, a 429 or a 5xx is tried again, :data:`ATTEMPTS`
times in all; another 4xx, a 3xx (redirects are not followed) or an answer
that is not HTTP fails at once. The backoff is the webhook's, not each job's:
a failure marks the endpoint down for a time that doubles from
:data:`FIRST_RETRY` seconds (x0.5 to x1.5 jitter), and meanwhile its jobs
wait without trying (so a dead endpoint costs a connection attempt per
backoff, not per message); then one of them tries again, and a success lets
the others go. A job still unsent :data:`GIVE_UP_AFTER` retries' time after
its event is given up. A stopping server gives what is queued for endpoints
that answer :data:`STOP_GRACE` seconds to be sent. The counters are read by
``GET /metrics``.

The module is long because the queue, the dispatcher, the endpoints' backoff
and the stop share one state (the jobs, the gates, the senders' slots and the
counters): split apart, each part would reach into the others'.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import random
import threading
from collections.abc import Callable, Coroutine, Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from ...errors import InboxNotFound, StoreUnavailable
from .client import BadResponse, post
from .events import Event, Pending, Webhook, event_body, request_headers

if TYPE_CHECKING:
    from ...config import ServerConfig
    from ..store.protocol import InboxStore, StoredMessage

__all__ = [
    "ATTEMPTS",
    "ATTEMPT_TIMEOUT",
    "FIRST_RETRY",
    "GIVE_UP_AFTER",
    "QUEUE_LENGTH",
    "SENDERS",
    "STOP_GRACE",
    "Webhooks",
]

log = logging.getLogger(__name__)

QUEUE_LENGTH = 10_000
"""Events and jobs waiting at most; one more is dropped and counted."""
SENDERS = 8
"""POSTs in flight at most, to all webhooks together."""
ATTEMPT_TIMEOUT = 10.0
"""Seconds for one attempt: connecting, sending and reading the status line."""
ATTEMPTS = 6
"""Attempts per event and webhook, the first included."""
FIRST_RETRY = 2.0
"""Seconds an endpoint is left alone after a failure; each next failure doubles it."""
BATCH_DELAY = 0.005
"""Seconds an event waits for others before the dispatcher wakes: a burst is one wake."""
GIVE_UP_AFTER = 45
"""A job unsent after this many times :data:`FIRST_RETRY` (90 s) is given up."""
STOP_GRACE = 2.0
"""Seconds a stopping server gives the events queued for endpoints that answer, to be sent."""


class _Gate:
    """One webhook's state: up, or down until a time, with the jobs that wait for it.

    A waiting job is a :class:`Pending`, or, for a delivery that came while
    the endpoint was down, the stored copy itself: its event and job are made
    when it leaves (:meth:`Webhooks._job`), so that a dead endpoint costs a
    delivery an append, and no object to allocate and to collect.
    """

    __slots__ = ("failures", "hook", "parked", "probing", "timer")

    def __init__(self, hook: int) -> None:
        self.hook = hook  # its number in Webhooks.hooks
        self.failures = 0  # in a row
        self.parked: collections.deque[Pending | StoredMessage] = collections.deque()
        self.probing = False  # down: one job is trying, or the backoff runs
        self.timer: asyncio.TimerHandle | None = None


class Webhooks:
    """The queue, the senders and the counters of one server's webhooks."""

    def __init__(self, hooks: Sequence[Webhook], messages_url: Callable[[], str]) -> None:
        self.hooks = tuple(hooks)
        self.by_tenant = any(hook.tenant is not None for hook in self.hooks)
        """Tell whether some webhook hears one tenant only: an event needs its inbox's owner."""
        self._messages_url = messages_url
        self.first_retry = FIRST_RETRY
        self.attempt_timeout = ATTEMPT_TIMEOUT
        self.queue_length = QUEUE_LENGTH
        self.stop_grace = STOP_GRACE
        self.counts = dict.fromkeys(("sent", "failed", "retried", "dropped"), 0)
        self._items: collections.deque[Event | Pending] = collections.deque()
        self._gates = [_Gate(number) for number in range(len(self.hooks))]
        self._parked = 0  # jobs waiting for their endpoint, all gates together
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread = 0
        self._wake: asyncio.Event | None = None
        self._waking = False  # a wake is scheduled
        self._slots: asyncio.Semaphore | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._store: InboxStore | None = None
        self._stopping = False

    @classmethod
    def from_config(cls, config: ServerConfig, messages_url: Callable[[], str]) -> Webhooks:
        """The server's ``--webhook`` URLs and each tenant's own, from ``config``."""
        hooks = [Webhook(url, config.webhook_secret) for url in config.webhooks]
        if config.tenants is not None:
            for tenant, (urls, secret) in config.tenants.webhooks.items():
                hooks.extend(Webhook(url, secret, tenant) for url in urls)
        return cls(hooks, messages_url)

    def pending(self) -> int:
        """Events and jobs queued or waiting for their endpoint now (the queue-length gauge)."""
        return len(self._items) + self._parked

    def metrics(self) -> dict[str, int]:
        """The counters and the queue's length, as ``GET /metrics`` reports them."""
        return {**self.counts, "queued": self.pending()}

    def start(self, store: InboxStore) -> None:
        """Start the dispatcher on the running loop; ``store`` tells an inbox's tenant."""
        self._store = store
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        self._wake = asyncio.Event()
        self._slots = asyncio.Semaphore(SENDERS)
        self._spawn(self._dispatch())

    async def stop(self) -> None:
        """Send what is queued for endpoints that answer, for :attr:`stop_grace` s at most; stop.

        An endpoint that is down is not tried again, and a failure now is
        not retried: what waits then, or still after the grace, is not sent.
        """
        self._stopping = True
        for gate in self._gates:
            if gate.timer is not None:
                gate.timer.cancel()
                gate.timer = None
        if self._loop is not None:
            deadline = self._loop.time() + self.stop_grace
            # Done when nothing is queued and no task but the dispatcher runs.
            while (self._items or len(self._tasks) > 1) and self._loop.time() < deadline:
                await asyncio.sleep(0.005)
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def delivered(self, messages: list[StoredMessage]) -> None:
        """Announce each copy of one delivery: the store's watcher (``on_delivered``).

        On the loop, while every endpoint is down and no webhook is a
        tenant's, the copies join the jobs that wait as they are (an append
        per webhook); else each becomes an :class:`Event` for :meth:`announce`.
        """
        gates = self._gates
        if (
            not self.by_tenant
            and len(self._items) + self._parked + len(messages) * len(gates) <= self.queue_length
            and threading.get_ident() == self._loop_thread
        ):
            for gate in gates:
                if not gate.probing:
                    break
            else:
                for gate in gates:
                    gate.parked.extend(messages)
                self._parked += len(messages) * len(gates)
                return
        owner_known, announce = not self.by_tenant, self.announce
        for message in messages:  # the owner is looked up later, off this path, if needed
            # tuple's own __new__: a NamedTuple's is a Python function, twice the cost.
            announce(tuple.__new__(Event, (
                "message.received", message.inbox, message.id, message.received_at,
                None, owner_known, 0, message,
            )))  # fmt: skip

    def announce(self, event: Event) -> None:
        """Queue ``event`` for its webhooks, or drop and count it when the queue is full.

        O(1) and never waits; from the loop or any other thread. On the loop,
        an event whose owner is known is fanned out to its webhooks at once:
        to their endpoints' waiting jobs when they are down (a dead endpoint
        costs a delivery no more than that), else to the dispatcher.
        """
        if len(self._items) + self._parked >= self.queue_length:  # self.pending(), inline
            self.counts["dropped"] += 1
            return
        loop = self._loop
        if event.owner_known and loop is not None and threading.get_ident() == self._loop_thread:
            if not self._fan_out(event):
                return  # every job waits for its endpoint: nothing to wake for
        else:
            self._items.append(event)
        if loop is None or self._waking:
            return
        self._waking = True  # one wake for a burst of events, not one per event
        if threading.get_ident() == self._loop_thread:
            loop.call_later(BATCH_DELAY, self._wake_up)
        else:
            loop.call_soon_threadsafe(loop.call_later, BATCH_DELAY, self._wake_up)

    def _wake_up(self) -> None:
        self._waking = False
        assert self._wake is not None
        self._wake.set()

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        assert self._loop is not None
        task = self._loop.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _dispatch(self) -> None:
        assert self._wake is not None
        assert self._slots is not None
        items, wake, slots = self._items, self._wake, self._slots
        while True:
            if not items:
                wake.clear()
                await wake.wait()
                continue
            item = items.popleft()
            if not isinstance(item, Pending):
                if item.owner_known:
                    self._fan_out(item)
                else:
                    self._spawn(self._fan_out_later(item))
                continue
            gate = self._gates[item.hook]
            if gate.probing:
                self._park(gate, item)
                continue
            await slots.acquire()
            if gate.probing:  # it failed while this job waited for a sender: it waits too
                slots.release()
                self._park(gate, item)
                continue
            self._spawn(self._attempt(item, gate))

    def _fan_out(self, event: Event) -> bool:
        """Queue ``event``'s job for each of its webhooks; whether one went to the dispatcher."""
        assert self._loop is not None
        given_up_at = self._loop.time() + self.first_retry * GIVE_UP_AFTER
        queued = False
        for number, hook in enumerate(self.hooks):
            if hook.tenant is not None and hook.tenant != event.owner:
                continue  # a tenant's webhook hears its own inboxes only
            if len(self._items) + self._parked >= self.queue_length:
                self.counts["dropped"] += 1
                continue
            # tuple's own __new__: a NamedTuple's is a Python function, twice the cost.
            job = tuple.__new__(Pending, (event, number, given_up_at, 0, ""))
            gate = self._gates[number]
            if gate.probing:  # its endpoint is down: straight to the jobs that wait for it
                gate.parked.append(job)
                self._parked += 1
            else:
                self._items.append(job)
                queued = True
        return queued

    async def _fan_out_later(self, event: Event) -> None:
        owner = None
        if self._store is not None:
            # Gone meanwhile: only the server-wide webhooks hear of it.
            with contextlib.suppress(InboxNotFound, StoreUnavailable):
                owner = await asyncio.to_thread(self._store.owner, event.email)
        self._fan_out(event._replace(owner=owner, owner_known=True))
        assert self._wake is not None
        self._wake.set()

    def _park(self, gate: _Gate, job: Pending) -> None:
        gate.parked.append(job)
        self._parked += 1

    async def _attempt(self, job: Pending, gate: _Gate) -> None:
        assert self._slots is not None
        job = job.next_attempt()
        try:
            outcome = await self._post(job)
        finally:
            self._slots.release()
        if outcome is None:
            self.counts["sent"] += 1
            self._endpoint_up(gate)
        elif outcome.startswith("!"):  # refused for good: the endpoint answers
            self._fail(job, outcome[1:])
            self._endpoint_up(gate)
        elif job.attempt >= ATTEMPTS:
            self._fail(job, f"{outcome}, after {job.attempt} attempts")
            self._endpoint_down(gate, self.hooks[job.hook], outcome)
        else:
            self.counts["retried"] += 1
            gate.parked.appendleft(job)  # first in line when the endpoint is tried again
            self._parked += 1
            self._endpoint_down(gate, self.hooks[job.hook], outcome)

    async def _post(self, job: Pending) -> str | None:
        """None: sent; a reason to retry; or ``!`` and a reason not to."""
        hook, event, store = self.hooks[job.hook], job.event, self._store
        messages_url = self._messages_url()
        assert store is not None

        def headers(body: bytes) -> list[tuple[str, str]]:
            return request_headers(hook, event.name, job.delivery, body)

        try:
            status = await post(
                hook.target,
                headers,
                lambda: event_body(event, store, messages_url),
                self.attempt_timeout,
            )
        except (OSError, TimeoutError) as exc:
            return f"{type(exc).__name__}: {exc}"
        except BadResponse as exc:
            return f"!{exc}"
        except Exception as exc:  # a bug must not stop the webhooks: log it, give the job up
            log.exception("webhook %r: %s %s failed", hook, event.name, job.delivery)
            return f"!{type(exc).__name__}"
        if 200 <= status < 300:
            return None
        if status == 429 or status >= 500:
            return f"status {status}"
        return f"!status {status}"  # another 4xx, or a redirect, which is not followed

    def _endpoint_up(self, gate: _Gate) -> None:
        if gate.failures:
            log.info("a webhook answers again after %d failed attempt(s)", gate.failures)
        gate.failures = 0
        gate.probing = False
        if gate.timer is not None:
            gate.timer.cancel()
            gate.timer = None
        if gate.parked:
            self._parked -= len(gate.parked)
            jobs = [self._job(item, gate) for item in reversed(gate.parked)]
            self._items.extendleft(jobs)  # oldest first, before newer events
            gate.parked.clear()
            assert self._wake is not None
            self._wake.set()

    def _endpoint_down(self, gate: _Gate, hook: Webhook, reason: str) -> None:
        assert self._loop is not None
        if gate.failures == 0:  # once per outage, not once per event
            log.warning(
                "webhook %r fails (%s): %s",
                hook,
                reason,
                "its waiting events are dropped, the server stopping"
                if self._stopping
                else "its events wait and it is tried again",
            )
        gate.probing = True
        if self._stopping:
            gate.failures += 1  # no attempt to come: said once
            return
        if gate.timer is not None:
            return  # the backoff runs already (another attempt of the burst failed)
        gate.failures += 1
        delay = self.first_retry * 2 ** min(gate.failures - 1, 4) * random.uniform(0.5, 1.5)
        gate.timer = self._loop.call_later(delay, self._try_again, gate)

    def _try_again(self, gate: _Gate) -> None:
        # The backoff is over: jobs too old are given up, the next one tries.
        assert self._loop is not None
        gate.timer = None
        now = self._loop.time()
        expired = 0
        while gate.parked and self._job(gate.parked[0], gate).given_up_at <= now:
            gate.parked.popleft()
            expired += 1
        if expired:
            self._parked -= expired
            self.counts["failed"] += expired
            log.warning("%d webhook event(s) given up: their endpoint failed for too long", expired)
        if not gate.parked:
            gate.probing = False
            return
        self._parked -= 1
        job = self._job(gate.parked.popleft(), gate)
        self._spawn(self._probe(job, gate))  # the others wait for its answer

    def _job(self, item: Pending | StoredMessage, gate: _Gate) -> Pending:
        """The job of a waiting ``item``: itself, or the one made now for a stored copy."""
        if isinstance(item, Pending):
            return item
        assert self._loop is not None
        age = (datetime.now(timezone.utc) - item.received_at).total_seconds()
        given_up_at = self._loop.time() - age + self.first_retry * GIVE_UP_AFTER
        event = Event("message.received", item.inbox, item.id, item.received_at, message=item)
        return Pending(event, gate.hook, given_up_at)

    async def _probe(self, job: Pending, gate: _Gate) -> None:
        assert self._slots is not None
        await self._slots.acquire()
        await self._attempt(job, gate)

    def _fail(self, job: Pending, reason: str) -> None:
        self.counts["failed"] += 1
        hook, name = self.hooks[job.hook], job.event.name
        log.warning("webhook %r: %s %s not sent (%s)", hook, name, job.delivery, reason)
