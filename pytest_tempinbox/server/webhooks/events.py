"""What the webhooks send: the endpoints, the events and their signed requests' headers."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import time
import uuid
from datetime import datetime, timezone
from typing import TYPE_CHECKING, NamedTuple

from ..._version import __version__
from ...errors import InboxNotFound, MessageNotFound
from ...webhook_urls import WebhookTarget, webhook_target

if TYPE_CHECKING:
    from ..store.protocol import InboxStore, StoredMessage

__all__ = ["USER_AGENT", "Event", "Pending", "Webhook", "event_body", "request_headers"]

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


class Event(NamedTuple):
    """One delivery (``message.received``) or deletion (``inbox.deleted``) to tell of.

    A delivery's event holds its stored message, so that its summary is there
    when the event is sent, even after the test deleted the inbox: a queued
    event keeps its message alive at most until it is sent or given up (the
    queue's length and the give-up time bound that). Its summary is made
    then, off the SMTP path. The delivery path makes it with ``tuple.__new__``
    (``store.py``), by the fields' order: keep it.
    """

    name: str
    email: str
    id: str | None  # the message's; None for a deletion
    at: datetime  # when it was received, or deleted
    owner: str | None = None
    owner_known: bool = True
    purged: int = 0
    message: StoredMessage | None = None


class Pending(NamedTuple):
    """One event for one webhook (``hooks[hook]``), waiting or in flight; plain values too."""

    event: Event
    hook: int
    given_up_at: float  # the loop's time after which it is given up unsent
    attempt: int = 0
    delivery: str = ""  # the X-Tempinbox-Delivery UUID, made at the first attempt, then kept

    def next_attempt(self) -> Pending:
        """The same job, one attempt further, with its delivery id."""
        return self._replace(attempt=self.attempt + 1, delivery=self.delivery or str(uuid.uuid4()))


async def event_body(event: Event, store: InboxStore, messages_url: str) -> bytes:
    """The JSON body of ``event``; a message gone meanwhile (its inbox deleted) is ``null``."""
    data: dict[str, object] = {"event": event.name, "email": event.email}
    if event.id is None:
        data["deleted_at"] = _stamp(event.at)
        data["purged"] = event.purged
    else:
        data["message"] = await asyncio.to_thread(_summary, store, event)
        data["message_url"] = f"{messages_url}/{event.email}/{event.id}"
        data["delivered_at"] = _stamp(event.at)
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode()


def _summary(store: InboxStore, event: Event) -> dict[str, object] | None:
    try:
        message = event.message
        if message is None:
            assert event.id is not None
            message = store.message(event.email, event.id)
        encoded = message.json
    except (InboxNotFound, MessageNotFound):
        return None
    summary: dict[str, object] = json.loads(encoded)
    for key in _SUMMARY_LEFT_OUT:
        summary.pop(key, None)
    return summary


def _stamp(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def request_headers(hook: Webhook, name: str, delivery: str, body: bytes) -> list[tuple[str, str]]:
    """The request's headers: what it is, its delivery id, and its signature with a secret."""
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
