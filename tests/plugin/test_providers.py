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


KEYED_TEST = """
import pytest
from python_http_client.exceptions import UnauthorizedError
from sendgrid import SendGridAPIClient
from sendgrid.helpers.mail import Mail


def send(server, key, to):
    client = SendGridAPIClient(api_key=key, host=server.provider_url("sendgrid"))
    mail = Mail(from_email="app@example.com", to_emails=to, subject="Hi", plain_text_content="x")
    return client.send(mail).status_code


def test_only_the_key_is_taken(tempinbox, tempinbox_server):
    assert send(tempinbox_server, "SG.secret", tempinbox.address) == 202
    with pytest.raises(UnauthorizedError):
        send(tempinbox_server, "SG.other", tempinbox.address)
"""


def test_the_provider_key_option_keys_the_sessions_server(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(KEYED_TEST)
    result = pytester.runpytest("--tempinbox-provider-key", "sendgrid=SG.secret")
    result.assert_outcomes(passed=1)


def test_the_provider_key_comes_from_the_ini_file_too(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\ntempinbox_provider_key =\n    sendgrid=SG.secret\n")
    pytester.makepyfile(KEYED_TEST)
    pytester.runpytest().assert_outcomes(passed=1)


def test_a_bad_provider_key_option_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_nothing(): pass")
    result = pytester.runpytest("--tempinbox-provider-key", "sendgrid")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--tempinbox-provider-key: a provider key is NAME=KEY*"])
