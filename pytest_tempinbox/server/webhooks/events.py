"""What the webhooks send: the endpoints, the events and their signed requests' headers."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import time
import uuid
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from ..._version import __version__
from ...webhook_urls import WebhookTarget, webhook_target

if TYPE_CHECKING:
    from ..store.protocol import StoredMessage

__all__ = ["USER_AGENT", "Event", "Job", "Webhook", "request_headers"]

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


class Job:
    """One event for one webhook: its delivery id (the same on every retry) and its attempts."""

    __slots__ = ("attempt", "delivery", "event", "given_up_at", "webhook")

    def __init__(self, event: Event, webhook: Webhook, given_up_at: float) -> None:
        self.event = event
        self.webhook = webhook
        self.delivery = str(uuid.uuid4())
        self.attempt = 0
        self.given_up_at = given_up_at
        """The loop's time after which the job is given up unsent."""


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
