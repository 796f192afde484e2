"""Sign-up tests that pytest-xdist spreads over its workers: ``pytest -n 2``.

Nothing in them is about xdist: the controller starts one server, every worker
uses it, and each test still gets a brand new inbox of its own, so tests that
run at the same time never see each other's mail.
"""

from __future__ import annotations

import smtplib
from email.message import EmailMessage

import pytest

from pytest_tempinbox import Inbox
from pytest_tempinbox.plugin import TempInboxServer


def send_welcome(smtp_host: str, smtp_port: int, email: str, name: str) -> None:
    """Stands in for the application under test, which welcomes a new user."""
    message = EmailMessage()
    message["From"] = "welcome@app.test"
    message["To"] = email
    message["Subject"] = f"Welcome, {name}"
    message.set_content(f"Hello {name}, your account is ready.")
    with smtplib.SMTP(smtp_host, smtp_port, local_hostname="localhost") as smtp:
        smtp.send_message(message)


@pytest.mark.parametrize("name", ["Ada", "Grace", "Edsger", "Barbara", "Donald", "Frances"])
def test_each_signup_gets_only_its_own_mail(
    name: str, tempinbox: Inbox, tempinbox_server: TempInboxServer
) -> None:
    """The welcome mail arrives, and it is the only mail in this test's inbox."""
    send_welcome(tempinbox_server.smtp_host, tempinbox_server.smtp_port, tempinbox.address, name)

    message = tempinbox.wait_for_message(subject="Welcome")

    assert message.subject == f"Welcome, {name}"
    assert [received.id for received in tempinbox.messages()] == [message.id]
