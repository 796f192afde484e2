"""The plugin's server answers the providers' SDKs: a user's test sends through SendGrid, Resend."""

from __future__ import annotations

import pytest

from pytest_tempinbox.plugin.providers import provider_environment

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


# --- tempinbox_providers -------------------------------------------------------------------

ENVIRONMENT_TEST = """
import os
import sys

from sendgrid import SendGridAPIClient
from sendgrid.helpers.mail import Mail


def test_resend_imported_in_the_test_reads_the_servers_url(tempinbox_providers, tempinbox):
    assert "resend" not in sys.modules
    import resend

    assert resend.api_url == tempinbox_providers["resend"]
    resend.Emails.send(
        {"from": "app@example.com", "to": tempinbox.address, "subject": "Code", "text": "482913"}
    )
    assert tempinbox.wait_for_message().code() == "482913"


def test_sendgrid_takes_the_url_from_the_fixture_and_the_key_from_the_environment(
    tempinbox_providers, tempinbox
):
    client = SendGridAPIClient(host=tempinbox_providers["sendgrid"])
    assert client.api_key == "SG.tempinbox-fake-key"
    mail = Mail("app@example.com", tempinbox.address, "Welcome", "Hello")
    assert client.send(mail).status_code == 202
    assert tempinbox.wait_for_message().provider.name == "sendgrid"


def test_after_the_tests_the_environment_and_resend_are_as_before():
    import resend

    assert "RESEND_API_URL" not in os.environ
    assert "SENDGRID_API_KEY" not in os.environ
    assert (resend.api_url, resend.api_key) == ("https://api.resend.com", None)
"""

IMPORTED_TEST = """
import resend


def test_an_imported_resend_is_pointed_at_the_server(tempinbox_providers):
    assert resend.api_url == tempinbox_providers["resend"]
    assert resend.api_key == "re_tempinbox_fake_key"


def test_and_restored_after_the_test():
    assert (resend.api_url, resend.api_key) == ("https://api.resend.com", None)
"""


@pytest.fixture
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """No provider's variable set, and only this plugin in a pytest subprocess."""
    for variable in ("RESEND_API_URL", "RESEND_API_KEY", "SENDGRID_API_KEY", "TEMPINBOX_URL"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    monkeypatch.delenv("PYTEST_ADDOPTS", raising=False)


@pytest.mark.usefixtures("clean_environment")
def test_the_sdks_send_to_the_server_through_the_environment(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(ENVIRONMENT_TEST)
    result = pytester.runpytest_subprocess("-p", "pytest_tempinbox.plugin")
    result.assert_outcomes(passed=3)


@pytest.mark.usefixtures("clean_environment")
def test_a_resend_imported_before_the_test_is_pointed_and_restored(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(IMPORTED_TEST)
    result = pytester.runpytest_subprocess("-p", "pytest_tempinbox.plugin")
    result.assert_outcomes(passed=2)


SES_URL = "http://127.0.0.1:8025/providers/ses"
URLS = {
    "ses": SES_URL,
    "sendgrid": "http://127.0.0.1:8025/providers/sendgrid",
    "resend": "http://127.0.0.1:8025/providers/resend",
}


def test_boto3_gets_the_ses_endpoints_stand_in_keys_and_a_region() -> None:
    values, removed = provider_environment({"ses": SES_URL}, {})

    assert values == {
        "AWS_ENDPOINT_URL_SES": SES_URL,
        "AWS_ENDPOINT_URL_SESV2": SES_URL,
        "AWS_ACCESS_KEY_ID": "AKIATEMPINBOXFAKEKEY",
        "AWS_SECRET_ACCESS_KEY": "tempinbox-fake-secret-access-key-0000000",
        "AWS_DEFAULT_REGION": "us-east-1",
    }
    assert removed == ()


def test_keys_and_a_region_already_set_are_kept() -> None:
    environ = {"AWS_ACCESS_KEY_ID": "AKIAREAL", "AWS_DEFAULT_REGION": "eu-west-1"}
    environ |= {"SENDGRID_API_KEY": "SG.real", "RESEND_API_KEY": "re_real"}

    values, _ = provider_environment(URLS, environ)

    assert set(values) == {"AWS_ENDPOINT_URL_SES", "AWS_ENDPOINT_URL_SESV2", "RESEND_API_URL"}


def test_an_environment_telling_boto3_to_ignore_endpoints_loses_that_variable() -> None:
    _, removed = provider_environment(URLS, {"AWS_IGNORE_CONFIGURED_ENDPOINT_URLS": "true"})
    assert removed == ("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS",)


def test_behind_a_proxy_the_servers_host_is_added_to_no_proxy() -> None:
    environ = {"HTTPS_PROXY": "http://proxy:3128", "NO_PROXY": "localhost, .internal"}

    values, _ = provider_environment(URLS, environ)

    assert values["NO_PROXY"] == "localhost,.internal,127.0.0.1"
    assert values["no_proxy"] == "127.0.0.1"


def test_without_a_proxy_no_proxy_is_left_alone() -> None:
    values, _ = provider_environment(URLS, {"NO_PROXY": "localhost"})
    assert "NO_PROXY" not in values
    assert "no_proxy" not in values


def test_a_provider_without_variables_gets_only_its_url_by_name() -> None:
    values, _ = provider_environment({"postmark": "http://127.0.0.1:8025"}, {})
    assert values == {}


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


ANYMAIL_CONFTEST = """
import django
from django.conf import settings

settings.configure(DEFAULT_FROM_EMAIL="App <app@example.com>")
django.setup()
"""
ANYMAIL_TEST = """
from anymail.exceptions import AnymailAPIError
from django.core.mail import EmailMultiAlternatives, get_connection
from django.test import override_settings
import pytest


def brevo(server):
    url = server.provider_url("brevo") + "/v3/"
    with override_settings(ANYMAIL={"BREVO_API_KEY": "xkeysib-test", "BREVO_API_URL": url}):
        return get_connection("anymail.backends.brevo.EmailBackend")


def test_anymail_brevo(tempinbox, tempinbox_server):
    mail = EmailMultiAlternatives(
        "Confirm", "Code 482913", to=[tempinbox.address], connection=brevo(tempinbox_server)
    )
    mail.attach_alternative('<a href="https://app.test/c">Confirm</a>', "text/html")
    mail.attach("note.txt", "hello", "text/plain")
    mail.tags = ["signup"]
    mail.metadata = {"user": "7"}
    assert mail.send() == 1
    message = tempinbox.wait_for_message(subject="Confirm")
    assert message.code() == "482913"
    assert message.link(text="Confirm") == "https://app.test/c"
    assert message.attachment("note.txt").content() == b"hello"
    assert message.provider.name == "brevo"
    assert message.provider.tags == ("signup",)
    assert message.provider.metadata == {"user": "7"}
    assert mail.anymail_status.message_id == message.message_id


def test_anymail_brevo_batch(tempinbox_factory, tempinbox_server):
    first, second = tempinbox_factory(), tempinbox_factory()
    mail = EmailMultiAlternatives(
        "Hi {{ params.name }}", "Code {{ params.code }}", to=[first.address, second.address],
        connection=brevo(tempinbox_server),
    )
    mail.merge_data = {first.address: {"name": "Ann", "code": "111111"},
                       second.address: {"name": "Bob", "code": "222222"}}
    mail.send()
    assert first.wait_for_message().subject == "Hi Ann"
    assert second.wait_for_message().code() == "222222"


def test_anymail_brevo_error(tempinbox, tempinbox_server):
    tempinbox.fail_next(429, times=5)
    connection = brevo(tempinbox_server)
    mail = EmailMultiAlternatives("x", "y", to=[tempinbox.address], connection=connection)
    with pytest.raises(AnymailAPIError) as raised:
        mail.send()
    assert raised.value.status_code == 429
"""


def test_django_anymails_brevo_backend_sends_to_the_server(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(ANYMAIL_CONFTEST)
    pytester.makepyfile(ANYMAIL_TEST)
    pytester.runpytest_subprocess("-p", "no:django").assert_outcomes(passed=3)
