"""A Flask app that mails a one-time code from a request handler, through smtplib.

The app reads its SMTP server from its config, as most apps do; the test
points that config at ``tempinbox_server``, drives the app with Flask's test
client, and reads the code from the mail. Any WSGI app works the same way.
"""

from __future__ import annotations

import secrets
import smtplib
from collections.abc import Mapping
from email.message import EmailMessage
from typing import Any

from flask import Flask, request

from pytest_tempinbox import Inbox
from pytest_tempinbox.plugin import TempInboxServer


def create_app(config: Mapping[str, Any]) -> Flask:
    """The application under test: a password reset by a code sent by mail."""
    app = Flask(__name__)
    app.config.update(MAIL_SERVER="localhost", MAIL_PORT=25, MAIL_SENDER="security@shop.test")
    app.config.update(config)
    pending: dict[str, str] = {}  # address -> the code mailed to it

    def send_code(to: str, code: str) -> None:
        message = EmailMessage()
        message["From"] = app.config["MAIL_SENDER"]
        message["To"] = to
        message["Subject"] = "Your password reset code"
        message.set_content(f"Your code is {code}. It expires in 10 minutes.")
        # local_hostname: smtplib would otherwise look up this machine's name.
        with smtplib.SMTP(
            app.config["MAIL_SERVER"], app.config["MAIL_PORT"], local_hostname="localhost"
        ) as smtp:
            smtp.send_message(message)

    @app.post("/password-reset")
    def start_reset() -> tuple[str, int]:
        email = request.form["email"]
        pending[email] = f"{secrets.randbelow(1_000_000):06d}"
        send_code(email, pending[email])
        return "We sent you a code.", 202

    @app.post("/password-reset/confirm")
    def confirm_reset() -> tuple[str, int]:
        email, code = request.form["email"], request.form["code"]
        if pending.get(email) != code:
            return "Wrong code.", 400
        del pending[email]
        return "Your password was changed.", 200

    return app


def test_the_mailed_code_resets_the_password(
    tempinbox: Inbox, tempinbox_server: TempInboxServer
) -> None:
    """The code from the mail, sent back, completes the reset; a wrong one does not."""
    app = create_app(
        {"MAIL_SERVER": tempinbox_server.smtp_host, "MAIL_PORT": tempinbox_server.smtp_port}
    )
    client = app.test_client()

    response = client.post("/password-reset", data={"email": tempinbox.address})
    assert response.status_code == 202

    message = tempinbox.wait_for_message(subject="password reset", sender="security@shop.test")
    (code,) = message.codes
    wrong = f"{(int(code) + 1) % 1_000_000:06d}"

    assert (
        client.post(
            "/password-reset/confirm", data={"email": tempinbox.address, "code": wrong}
        ).status_code
        == 400
    )
    response = client.post(
        "/password-reset/confirm", data={"email": tempinbox.address, "code": code}
    )
    assert response.status_code == 200
    assert response.text == "Your password was changed."
