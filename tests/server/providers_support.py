"""What the provider tests share besides their fixtures (tests/server/conftest.py): POST, send."""

from __future__ import annotations

import json
from typing import Any

import requests


def post(url: str, body: bytes | str, content_type: str = "application/json") -> requests.Response:
    """POST ``body`` as it is to ``url`` (no proxy), with ``content_type``."""
    with requests.Session() as session:
        session.trust_env = False
        return session.post(url, data=body, headers={"Content-Type": content_type}, timeout=30)


def answer(response: requests.Response) -> tuple[int, Any]:
    """The status and the JSON body of ``response`` (None for an empty one)."""
    return response.status_code, response.json() if response.content else None


def send_through_sendgrid(server: Any, to: str, subject: str) -> None:
    """Send a text mail to ``to`` through ``server``'s SendGrid endpoint; it must be accepted."""
    body = {
        "personalizations": [{"to": [{"email": to}]}],
        "from": {"email": "app@example.com"},
        "subject": subject,
        "content": [{"type": "text/plain", "value": "Hello"}],
    }
    response = post(server.provider_url("sendgrid") + "/v3/mail/send", json.dumps(body))
    assert response.status_code == 202, response.text
