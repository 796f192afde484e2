"""The plugin's server answers the providers' SDKs: a user's test sends through SendGrid, Resend."""

from __future__ import annotations

import pytest

SDK_TEST = """
import base64

import resend
from sendgrid import SendGridAPIClient
from sendgrid.helpers.mail import Mail


def test_sendgrid(tempinbox, tempinbox_server):
    client = SendGridAPIClient(api_key="SG.key", host=tempinbox_server.provider_url("sendgrid"))
    mail = Mail(
        from_email="app@example.com",
        to_emails=tempinbox.address,
        subject="Confirm your account",
        html_content='<a href="https://app.test/confirm?t=abc">Confirm</a>',
    )
    assert client.send(mail).status_code == 202
    message = tempinbox.wait_for_message(subject="Confirm your account")
    assert message.link(text="Confirm") == "https://app.test/confirm?t=abc"
    assert message.provider.name == "sendgrid"


def test_resend(tempinbox, tempinbox_server, monkeypatch):
    monkeypatch.setattr(resend, "api_url", tempinbox_server.provider_url("resend"))
    monkeypatch.setattr(resend, "api_key", "re_key")
    resend.Emails.send(
        {"from": "app@example.com", "to": tempinbox.address, "subject": "Code", "text": "482913"}
    )
    message = tempinbox.wait_for_message()
    assert message.code() == "482913"
    assert message.provider.endpoint == "/emails"


def test_an_unknown_provider_is_a_clear_error(tempinbox_server):
    import pytest

    with pytest.raises(ValueError, match="sendgrid, resend"):
        tempinbox_server.provider_url("mailchimp")
"""


def test_a_users_test_sends_through_the_providers_sdks(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(SDK_TEST)
    pytester.runpytest().assert_outcomes(passed=3)
