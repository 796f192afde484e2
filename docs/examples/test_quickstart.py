"""A first test: the application sends a welcome mail, the test reads it back."""

from __future__ import annotations

import smtplib
from email.message import EmailMessage

from pytest_tempinbox import Inbox
from pytest_tempinbox.plugin import TempInboxServer


def send_welcome(host: str, port: int, to: str) -> None:
    """Stands in for your application's mail code."""
    message = EmailMessage()
    message["From"] = "app@example.com"
    message["To"] = to
    message["Subject"] = "Welcome to Example"
    message.set_content("Confirm: https://app.example/confirm/abc123\nYour code: 482913\n")
    message.add_alternative(
        '<p><a href="https://app.example/confirm/abc123">Confirm your email</a></p>'
        "<p>Your code: <strong>482913</strong></p>",
        subtype="html",
    )
    with smtplib.SMTP(host, port, local_hostname="localhost") as smtp:
        smtp.send_message(message)


# --8<-- [start:test]
def test_signup(tempinbox: Inbox, tempinbox_server: TempInboxServer) -> None:
    """The welcome mail reaches the new address, with its link and its code."""
    # Point the application's SMTP settings at the server, e.g. in Django:
    # settings.EMAIL_HOST = tempinbox_server.smtp_host
    # settings.EMAIL_PORT = tempinbox_server.smtp_port
    send_welcome(tempinbox_server.smtp_host, tempinbox_server.smtp_port, tempinbox.address)

    message = tempinbox.wait_for_message(subject="Welcome")
    assert message.link(text="Confirm your email") == "https://app.example/confirm/abc123"
    assert message.code() == "482913"
    # --8<-- [end:test]
