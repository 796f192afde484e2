"""Fault injection tests' tools: the fault API by HTTP, and SMTP transactions to strike."""

from __future__ import annotations

import smtplib
from typing import Any

import requests

from pytest_tempinbox.server.inbox_server import InboxServer

from ..helpers import CLIENT_NAME, RawSMTP

TIMEOUT = 10.0
MAIL = b"From: app@example.com\r\nSubject: Hello\r\n\r\nHi there.\r\n"
PROBLEM_KEYS = {"type", "title", "status", "detail", "code"}


def add(http: requests.Session, api: str, address: str, body: Any) -> requests.Response:
    """POST /api/faults/{address} with ``body`` as JSON."""
    return http.post(f"{api}/faults/{address}", json=body, timeout=TIMEOUT)


def pending(http: requests.Session, api: str, address: str) -> list[dict[str, Any]]:
    """The inbox's pending faults, as JSON."""
    response = http.get(f"{api}/faults/{address}", timeout=TIMEOUT)
    assert response.status_code == 200, response.text
    faults: list[dict[str, Any]] = response.json()
    return faults


def stored(server: InboxServer, address: str) -> int:
    """How many messages the inbox holds."""
    return len(server.store.messages(address))


def generate(server: InboxServer) -> str:
    """Another fresh address."""
    return server.store.generate().address


def assert_problem(response: requests.Response, status: int, code: str) -> None:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    assert set(response.json()) == PROBLEM_KEYS
    assert response.json()["code"] == code


def send(server: InboxServer, to: list[str], timeout: float = TIMEOUT) -> dict[str, Any]:
    """One transaction over a new smtplib connection; what sendmail returns."""
    with smtplib.SMTP(
        server.smtp_host, server.smtp_port, local_hostname=CLIENT_NAME, timeout=timeout
    ) as client:
        refused: dict[str, Any] = client.sendmail("app@example.com", to, MAIL)
        return refused


def begin(raw: RawSMTP, *recipients: str) -> list[tuple[int, str]]:
    """EHLO and MAIL, then RCPT for each recipient; the RCPT replies."""
    assert raw.command(f"EHLO {CLIENT_NAME}")[0] == 250
    assert raw.command("MAIL FROM:<app@example.com>")[0] == 250
    return [raw.command(f"RCPT TO:<{recipient}>") for recipient in recipients]


def finish(raw: RawSMTP) -> tuple[int, str]:
    """DATA with the message; the reply to its end."""
    assert raw.command("DATA")[0] == 354
    raw.send(MAIL + b".\r\n")
    return raw.reply()
