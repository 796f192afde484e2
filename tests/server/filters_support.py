"""Mail for the filter tests: HTML and raw messages, deliveries later, subjects found."""

from __future__ import annotations

import smtplib
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from email.message import EmailMessage
from typing import Any

from pytest_tempinbox.server.inbox_server import InboxServer

from ..helpers import CLIENT_NAME, send


def html_message(to: str, subject: str, html: str, sender: str = "app@example.com") -> EmailMessage:
    """A message whose only body is HTML."""
    message = EmailMessage()
    message["From"] = sender
    message["To"] = to
    message["Subject"] = subject
    message.set_content(html, subtype="html")
    return message


def send_raw(server: InboxServer, to: str, raw: bytes) -> None:
    """Send ``raw`` as it is, envelope sender app@example.com."""
    with smtplib.SMTP(server.smtp_host, server.smtp_port, local_hostname=CLIENT_NAME) as smtp:
        smtp.sendmail("app@example.com", [to], raw)


@contextmanager
def sending_later(server: InboxServer, *timed: tuple[float, EmailMessage]) -> Iterator[None]:
    """Send each message at its delay (seconds from now) in a thread, during the block."""

    def run() -> None:
        started = time.monotonic()
        for delay, message in timed:
            time.sleep(max(0.0, started + delay - time.monotonic()))
            send(server, message)

    thread = threading.Thread(target=run)
    thread.start()
    try:
        yield
    finally:
        thread.join(30)


def subjects(found: list[Any]) -> list[str]:
    """The subjects of messages, as JSON objects or as Message objects."""
    return [item["subject"] if isinstance(item, dict) else item.subject for item in found]
