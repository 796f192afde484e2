"""The webhooks' queue and senders: events leave the delivery path at once, and are POSTed later.

:meth:`Webhooks.announce` is all a delivery or a deletion pays: an append to a
bounded queue (O(1), never waiting; from any thread), or, beyond
:data:`QUEUE_LENGTH` events waiting, a drop that is counted. :data:`SENDERS`
tasks on the server's loop drain it: each event becomes one job per webhook
that hears it (the server's, and its tenant's), each job one POST
(:mod:`.client`) of at most :data:`ATTEMPT_TIMEOUT` seconds. A connection
error, a timeout, a 429 or a 5xx is tried again, :data:`ATTEMPTS` times in all,
after a backoff that doubles from :data:`FIRST_RETRY` seconds with jitter
(about a minute in all); another 4xx, a 3xx (redirects are not followed) or an
answer that is not HTTP fails at once. The counters are read by ``GET /metrics``.
"""

from __future__ import annotations

import asyncio
import collections
import hashlib
import hmac
import json
import logging
import random
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from ..._version import __version__
from ...errors import InboxNotFound, StoreUnavailable
from ...webhook_urls import WebhookTarget, webhook_target
from .client import BadResponse, post

if TYPE_CHECKING:
    from ...config import ServerConfig
    from ..store.protocol import InboxStore, StoredMessage

__all__ = [
    "ATTEMPTS",
    "ATTEMPT_TIMEOUT",
    "FIRST_RETRY",
    "QUEUE_LENGTH",
    "SENDERS",
    "Event",
    "Webhook",
    "Webhooks",
]

log = logging.getLogger(__name__)

QUEUE_LENGTH = 10_000
"""Events and retries waiting at most; one more is dropped and counted."""
SENDERS = 8
"""POSTs in flight at most, to all webhooks together."""
ATTEMPT_TIMEOUT = 10.0
"""Seconds for one attempt: connecting, sending and reading the status line."""
ATTEMPTS = 6
"""Attempts per event and webhook, the first included."""
FIRST_RETRY = 2.0
"""Seconds before the first retry; each next one waits twice as long (x0.5 to x1.5 jitter)."""

USER_AGENT = f"pytest-tempinbox/{__version__} (webhooks)"
_SUMMARY_LEFT_OUT = ("text", "html")


class Webhook:
    """One endpoint: its URL, its secret (None: unsigned), and whose inboxes it hears."""

    __slots__ = ("secret", "target", "tenant", "url")

    def __init__(self, url: str, secret: str | None, tenant: str | None = None) -> None:
        self.url = url
        self.target: WebhookTarget = webhook_target(url)
        self.secret = None if secret is None else secret.encode("utf-8")
        self.tenant = tenant
        """The tenant whose inboxes alone it hears; None: every inbox (``--webhook``)."""

    def __repr__(self) -> str:
        return f"<Webhook {self.target.scheme}://{self.target.host_header}>"  # no path, no secret


class Event:
    """One delivery (``message.received``) or deletion (``inbox.deleted``) to tell of."""

    __slots__ = ("_body", "at", "email", "extra", "message", "name", "owner")

    def __init__(
        self,
        name: str,
        email: str,
        message: StoredMessage | None = None,
        extra: dict[str, object] | None = None,
        owner: str | bool | None = False,
    ) -> None:
        self.name = name
        self.email = email
        self.message = message
        self.extra = extra or {}
        self.owner = owner
        """The inbox's tenant (None: no tenant); False: not looked up yet."""
        self.at = datetime.now(timezone.utc)
        self._body: bytes | None = None

    async def body(self, messages_url: str) -> bytes:
        """The JSON body, made once (the message parsed off the loop) for every webhook."""
        if self._body is None:
            data: dict[str, object] = {"event": self.name, "email": self.email}
            message = self.message
            stamp = _stamp(self.at if message is None else message.received_at)
            if message is not None:
                encoded = await asyncio.to_thread(lambda: message.json)
                summary = json.loads(encoded)
                for key in _SUMMARY_LEFT_OUT:
                    summary.pop(key, None)
                data["message"] = summary
                data["message_url"] = f"{messages_url}/{self.email}/{message.id}"
                data["delivered_at"] = stamp
            else:
                data["deleted_at"] = stamp
            data.update(self.extra)
            self._body = json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode()
        return self._body


def _stamp(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class _Job:
    __slots__ = ("attempt", "delivery", "event", "webhook")

    def __init__(self, event: Event, webhook: Webhook) -> None:
        self.event = event
        self.webhook = webhook
        self.delivery = str(uuid.uuid4())  # the same across the job's retries
        self.attempt = 0


_Item = Event | _Job


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
        self.counts = dict.fromkeys(("sent", "failed", "retried", "dropped"), 0)
        self._items: collections.deque[_Item] = collections.deque()
        self._waiting = 0  # jobs sleeping before a retry
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread = 0
        self._wake: asyncio.Event | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._store: InboxStore | None = None

    @classmethod
    def from_config(cls, config: ServerConfig, messages_url: Callable[[], str]) -> Webhooks:
        """The server's ``--webhook`` URLs and each tenant's own, from ``config``."""
        hooks = [Webhook(url, config.webhook_secret) for url in config.webhooks]
        if config.tenants is not None:
            for tenant, (urls, secret) in config.tenants.webhooks.items():
                hooks.extend(Webhook(url, secret, tenant) for url in urls)
        return cls(hooks, messages_url)

    def pending(self) -> int:
        """Events and jobs queued or waiting for a retry now (the queue-length gauge)."""
        return len(self._items) + self._waiting

    def metrics(self) -> dict[str, int]:
        """The counters and the queue's length, as ``GET /metrics`` reports them."""
        return {**self.counts, "queued": self.pending()}

    def start(self, store: InboxStore) -> None:
        """Start the senders on the running loop; ``store`` tells an inbox's tenant."""
        self._store = store
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        self._wake = asyncio.Event()
        self._tasks = [self._loop.create_task(self._send_forever()) for _ in range(SENDERS)]

    async def stop(self) -> None:
        """Stop the senders; what is still queued is not sent."""
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []

    def announce(self, event: Event) -> None:
        """Queue ``event`` for its webhooks, or drop and count it when the queue is full.

        O(1) and never waits; from the loop or any other thread.
        """
        if self.pending() >= self.queue_length:
            self.counts["dropped"] += 1
            return
        self._items.append(event)
        self._notify()

    def _notify(self) -> None:
        loop, wake = self._loop, self._wake
        if loop is None or wake is None:
            return
        if threading.get_ident() == self._loop_thread:
            wake.set()
        else:
            loop.call_soon_threadsafe(wake.set)

    async def _send_forever(self) -> None:
        assert self._wake is not None
        while True:
            while not self._items:
                self._wake.clear()
                await self._wake.wait()
            item = self._items.popleft()
            try:
                if isinstance(item, Event):
                    await self._fan_out(item)
                else:
                    await self._attempt(item)
            except asyncio.CancelledError:
                raise
            except Exception:  # a bug must not end a sender: log it and go on
                log.exception("a webhook event could not be sent")

    async def _fan_out(self, event: Event) -> None:
        owner = event.owner
        if owner is False and self.by_tenant:
            owner = await self._owner(event.email)
        for hook in self.hooks:
            if hook.tenant is not None and hook.tenant != owner:
                continue  # a tenant's webhook hears its own inboxes only
            if self.pending() >= self.queue_length:
                self.counts["dropped"] += 1
                continue
            self._items.append(_Job(event, hook))
        self._notify()

    async def _owner(self, address: str) -> str | None:
        store = self._store
        if store is None:
            return None
        try:
            return await asyncio.to_thread(store.owner, address)
        except (InboxNotFound, StoreUnavailable):
            return None  # gone meanwhile: only the server-wide webhooks hear of it

    async def _attempt(self, job: _Job) -> None:
        job.attempt += 1
        hook, event = job.webhook, job.event
        messages_url = self._messages_url()

        def headers(body: bytes) -> list[tuple[str, str]]:
            return _headers(hook, event.name, job.delivery, body)

        try:
            status = await post(
                hook.target, headers, lambda: event.body(messages_url), self.attempt_timeout
            )
        except (OSError, TimeoutError) as exc:
            self._retry_or_fail(job, f"{type(exc).__name__}: {exc}")
            return
        except BadResponse as exc:
            self._fail(job, str(exc))
            return
        if 200 <= status < 300:
            self.counts["sent"] += 1
        elif status == 429 or status >= 500:
            self._retry_or_fail(job, f"status {status}")
        else:  # another 4xx, or a redirect, which is not followed
            self._fail(job, f"status {status}")

    def _retry_or_fail(self, job: _Job, reason: str) -> None:
        if job.attempt >= ATTEMPTS:
            self._fail(job, f"{reason}, after {job.attempt} attempts")
            return
        assert self._loop is not None
        self.counts["retried"] += 1
        self._waiting += 1
        delay = self.first_retry * 2 ** (job.attempt - 1) * random.uniform(0.5, 1.5)
        self._loop.call_later(delay, self._requeue, job)

    def _requeue(self, job: _Job) -> None:
        self._waiting -= 1
        self._items.append(job)
        self._notify()

    def _fail(self, job: _Job, reason: str) -> None:
        self.counts["failed"] += 1
        log.warning(
            "webhook %r: %s %s not sent (%s)", job.webhook, job.event.name, job.delivery, reason
        )


def _headers(hook: Webhook, name: str, delivery: str, body: bytes) -> list[tuple[str, str]]:
    timestamp = str(int(time.time()))
    headers = [
        ("Content-Type", "application/json"),
        ("User-Agent", USER_AGENT),
        ("X-Tempinbox-Event", name),
        ("X-Tempinbox-Delivery", delivery),
        ("X-Tempinbox-Timestamp", timestamp),
    ]
    if hook.secret is not None:
        signed = timestamp.encode("ascii") + b"." + body
        digest = hmac.new(hook.secret, signed, hashlib.sha256).hexdigest()
        headers.append(("X-Tempinbox-Signature", f"sha256={digest}"))
    return headers
