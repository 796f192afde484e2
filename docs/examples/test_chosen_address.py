"""A chosen address, for an application whose test data seeds users with fixed addresses."""

from __future__ import annotations

import smtplib
from collections.abc import Callable
from email.message import EmailMessage

from pytest_tempinbox import Inbox
from pytest_tempinbox.plugin import TempInboxServer

# The application's fixtures, say: a user whose address is written down.
SEEDED_USERS = {"alice": "Alice@tempinbox.test"}


def send_password_reset(server: TempInboxServer, username: str) -> None:
    """Stands in for the application: mails a reset link to a seeded user."""
    message = EmailMessage()
    message["From"] = "accounts@example.com"
    message["To"] = SEEDED_USERS[username]
    message["Subject"] = "Reset your password"
    message.set_content("Reset it here: https://app.example/reset/7f3a")
    with smtplib.SMTP(server.smtp_host, server.smtp_port, local_hostname="localhost") as smtp:
        smtp.send_message(message)


def test_a_seeded_user_gets_the_reset_mail(
    tempinbox_factory: Callable[..., Inbox], tempinbox_server: TempInboxServer
) -> None:
    """The inbox is made at the seeded address itself, lowercased, and deleted at teardown."""
    alice = tempinbox_factory(address=SEEDED_USERS["alice"])
    assert alice.address == "alice@tempinbox.test"

    send_password_reset(tempinbox_server, "alice")

    message = alice.wait_for_message(subject="Reset your password")
    assert message.links == ("https://app.example/reset/7f3a",)
