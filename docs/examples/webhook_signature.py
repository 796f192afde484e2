"""Checking a webhook request's signature, as a receiver does (docs/webhooks.md)."""

from __future__ import annotations

import hashlib
import hmac
import time

TOLERANCE = 300  # seconds: older requests may be replays


def verify(secret: str, headers: dict[str, str], body: bytes) -> bool:
    """Tell whether a webhook request was signed with ``secret`` lately.

    ``headers`` with lowercase names; ``body`` the raw bytes, before any JSON parsing.
    """
    timestamp = headers.get("x-tempinbox-timestamp", "")
    signature = headers.get("x-tempinbox-signature", "")
    if not timestamp.isdigit() or abs(time.time() - int(timestamp)) > TOLERANCE:
        return False
    signed = timestamp.encode() + b"." + body
    expected = "sha256=" + hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, signature)
