"""Pointing the application's SMTP settings at the server, once, with an autouse fixture."""

from __future__ import annotations

import os
import smtplib
from email.message import EmailMessage

import pytest

from pytest_tempinbox import Inbox
from pytest_tempinbox.plugin import TempInboxServer


def send_password_reset(to: str) -> None:
    """Stands in for the application, which reads its SMTP settings from the environment."""
    message = EmailMessage()
    message["From"] = "noreply@app.example"
    message["To"] = to
    message["Subject"] = "Reset your password"
    message.set_content("Reset it here: https://app.example/reset/9f8e7d")
    host, port = os.environ["SMTP_HOST"], int(os.environ["SMTP_PORT"])
    with smtplib.SMTP(host, port, local_hostname="localhost") as smtp:
        smtp.login(os.environ["SMTP_USER"], os.environ["SMTP_PASSWORD"])
        smtp.send_message(message)


# --8<-- [start:fixture]
@pytest.fixture(autouse=True)
def smtp_settings(tempinbox_server: TempInboxServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """Send the application's mail to the test server, in every test that sees this fixture."""
    monkeypatch.setenv("SMTP_HOST", tempinbox_server.smtp_host)
    monkeypatch.setenv("SMTP_PORT", str(tempinbox_server.smtp_port))
    # Any username and password are accepted: the application's login code runs as in production.
    monkeypatch.setenv("SMTP_USER", "app")
    monkeypatch.setenv("SMTP_PASSWORD", "not-a-secret")
    # --8<-- [end:fixture]


def test_password_reset_mail(tempinbox: Inbox) -> None:
    """The application, configured by the fixture, mails the reset link."""
    send_password_reset(tempinbox.address)

    message = tempinbox.wait_for_message(subject="Reset")
    assert message.links == ("https://app.example/reset/9f8e7d",)
