"""Django sends over TLS to the test server; a wrong password fails as in production."""

from __future__ import annotations

import smtplib

import pytest
from django.core.mail import get_connection, send_mail
from pytest_django import Settings

from pytest_tempinbox import Inbox
from pytest_tempinbox.plugin import TempInboxServer


# --8<-- [start:fixture]
@pytest.fixture(autouse=True)
def email_over_tls(
    settings: Settings, tempinbox_server: TempInboxServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Point Django's SMTP backend at the test server, over TLS, with its credentials.

    For a run with tempinbox_tls = starttls (or implicit) and tempinbox_smtp_auth =
    app:s3cret. Django verifies the certificate with ssl.create_default_context(),
    which trusts the CA that $SSL_CERT_FILE names, for the time of the test.
    """
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST = tempinbox_server.smtp_host
    settings.EMAIL_PORT = tempinbox_server.smtp_port
    settings.EMAIL_USE_TLS = tempinbox_server.tls in ("starttls", "required")  # STARTTLS
    settings.EMAIL_USE_SSL = tempinbox_server.tls == "implicit"  # SMTPS
    settings.EMAIL_HOST_USER = "app"
    settings.EMAIL_HOST_PASSWORD = "s3cret"
    assert tempinbox_server.ca_path is not None  # TLS is on
    monkeypatch.setenv("SSL_CERT_FILE", tempinbox_server.ca_path)
    # --8<-- [end:fixture]


def test_the_order_confirmation_arrives(tempinbox: Inbox) -> None:
    """send_mail() goes through the SMTP backend, over TLS, logged in."""
    send_mail("Your order", "Order 1042 is confirmed.", None, [tempinbox.address])

    message = tempinbox.wait_for_message(subject="Your order")
    assert message.text is not None
    assert "1042" in message.text


# --8<-- [start:auth-failure]
def test_a_wrong_password_fails_loudly(settings: Settings, tempinbox: Inbox) -> None:
    """The server refuses any other credentials with 535, as a real relay would."""
    settings.EMAIL_HOST_PASSWORD = "expired-password"

    # Django leaves the connection open when the login fails: close it.
    connection = get_connection()
    with pytest.raises(smtplib.SMTPAuthenticationError) as refused:
        send_mail(
            "Your order",
            "Order 1043 is confirmed.",
            None,
            [tempinbox.address],
            connection=connection,
        )
    connection.close()

    assert refused.value.smtp_code == 535
    assert tempinbox.messages() == []
    # --8<-- [end:auth-failure]
