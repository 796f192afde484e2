"""``tempinbox_django`` keeps a project's provider backend (anymail, django-ses), pointed here.

The projects run as pytest sessions of their own (see :mod:`.django_projects`),
sending with django-anymail's SendGrid and Resend backends to the server's
provider endpoints, on the ``EMAIL_BACKEND`` of Django 4.2 to 6.1 and the
``MAILERS`` of Django 6.1. The table of the other backends (Amazon SES,
Mailgun, Postmark, Brevo, django-ses) is pinned without a project.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from pytest_tempinbox.django_providers import (
    STAND_IN_AWS_KEYS,
    STAND_IN_KEY,
    backend_settings,
    mailer_options,
    provider_mailer,
    provider_of,
    served_url,
)
from pytest_tempinbox.values import provider_url

from .django_projects import FakeServer, make_project, run_with_pytest_django

django = pytest.importorskip("django")
pytest.importorskip("anymail")
needs_mailers = pytest.mark.skipif(
    django.VERSION < (6, 1), reason=f"MAILERS came in Django 6.1; this is {django.__version__}"
)

SENDGRID = "anymail.backends.sendgrid.EmailBackend"
RESEND = "anymail.backends.resend.EmailBackend"
# The project's own warnings: Django 6.1's about EMAIL_*, anymail's about SendGrid's support.
LET_PASS = (
    "-W",
    "ignore:The EMAIL_:PendingDeprecationWarning",
    "-W",
    "ignore::anymail.exceptions.AnymailNotSupportedWarning",
)

SEND_TEST = """
from django.conf import settings
from django.core import mail
from django.core.mail import EmailMultiAlternatives, send_mail


def test_send_mail_goes_through_the_providers_api(tempinbox_django, tempinbox):
    send_mail("Your order", "Order 1042 is confirmed.", None, [tempinbox.address])

    message = tempinbox.wait_for_message(subject="Your order", timeout=10)
    assert "1042" in message.text
    assert message.provider.name == "{provider}"
    assert mail.outbox == []


def test_html_and_an_attachment_arrive_as_sent(tempinbox_django, tempinbox):
    email = EmailMultiAlternatives("Invoice", "See the invoice.", None, [tempinbox.address])
    email.attach_alternative('<a href="https://shop.test/invoices/7">Invoice</a>', "text/html")
    email.attach("invoice.txt", b"Total: 7 EUR", "text/plain")
    email.send()

    message = tempinbox.wait_for_message(subject="Invoice", timeout=10)
    assert message.link(text="Invoice") == "https://shop.test/invoices/7"
    assert message.attachment("invoice.txt").content() == b"Total: 7 EUR"


def test_the_settings_are_restored_after_the_test():
    assert settings.ANYMAIL == {anymail}
"""


@pytest.mark.parametrize(
    ("backend", "provider", "anymail"),
    [
        # The project's key is kept; SendGrid's URL comes with the fixture.
        (SENDGRID, "sendgrid", {"SENDGRID_API_KEY": "SG.production"}),
        # No key in the test settings: a stand-in.
        (RESEND, "resend", {}),
    ],
)
def test_an_anymail_backend_is_kept_and_sends_to_the_server(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    backend: str,
    provider: str,
    anymail: dict[str, str],
) -> None:
    settings = f'EMAIL_BACKEND = "{backend}"\nANYMAIL = {anymail!r}\n'
    project = make_project(pytester, monkeypatch, settings)
    project.makepyfile(
        test_mail=SEND_TEST.replace("{provider}", provider).replace("{anymail}", repr(anymail))
    )

    result = run_with_pytest_django(project, *LET_PASS)

    result.assert_outcomes(passed=3)


def test_a_provider_backend_the_test_sets_itself_is_kept(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The settings module's backend is SMTP; the test's own, set before the fixture, counts.
    project = make_project(
        pytester, monkeypatch, 'EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"\n'
    )
    project.makepyfile(
        test_mail=f"""
        import pytest
        from django.core.mail import send_mail


        @pytest.fixture
        def resend_backend(settings):
            settings.EMAIL_BACKEND = "{RESEND}"


        def test_the_mail_goes_through_resends_api(resend_backend, tempinbox_django, tempinbox):
            send_mail("Your order", "Order 7.", None, [tempinbox.address])
            assert tempinbox.wait_for_message(timeout=10).provider.name == "resend"
        """
    )

    run_with_pytest_django(project, *LET_PASS).assert_outcomes(passed=1)


MAILERS = """
MAILERS = {
    "default": {
        "BACKEND": "anymail.backends.resend.EmailBackend",
        "OPTIONS": {"api_key": "re_production"},
    },
    "receipts": {"OPTIONS": {"host": "relay.example.com", "port": 465, "use_ssl": True}},
}
"""


@needs_mailers
def test_a_mailer_with_an_anymail_backend_sends_through_the_providers_api(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = make_project(pytester, monkeypatch, MAILERS)
    project.makepyfile(
        test_mail="""
        from django.conf import settings
        from django.core.mail import send_mail


        def test_each_mailer_reaches_the_inbox_its_own_way(tempinbox_django, tempinbox):
            send_mail("Your order", "Order 7.", None, [tempinbox.address])
            send_mail("Your receipt", "Paid.", None, [tempinbox.address], using="receipts")

            order = tempinbox.wait_for_message(subject="Your order", timeout=10)
            receipt = tempinbox.wait_for_message(subject="Your receipt", timeout=10)
            assert order.provider.name == "resend"
            assert receipt.provider is None  # by SMTP


        def test_the_mailers_are_restored_after_the_test():
            assert "OPTIONS" not in settings.MAILERS["default"]  # locmem
        """
    )

    run_with_pytest_django(project).assert_outcomes(passed=2)


# --- the table of backends --------------------------------------------------------------

URL = "http://127.0.0.1:8025/providers/{}"


def no_settings(**values: Any) -> SimpleNamespace:
    """Django's settings as the table reads them: by attribute."""
    return SimpleNamespace(**values)


@pytest.mark.parametrize(
    ("backend", "esp", "api_url", "key"),
    [
        (SENDGRID, "SENDGRID", "sendgrid/v3/", "API_KEY"),
        (RESEND, "RESEND", "resend/", "API_KEY"),
        ("anymail.backends.mailgun.EmailBackend", "MAILGUN", "mailgun/v3/", "API_KEY"),
        ("anymail.backends.postmark.EmailBackend", "POSTMARK", "postmark/", "SERVER_TOKEN"),
        ("anymail.backends.brevo.EmailBackend", "BREVO", "brevo/v3/", "API_KEY"),
        ("anymail.backends.sendinblue.EmailBackend", "SENDINBLUE", "brevo/v3/", "API_KEY"),
    ],
)
def test_an_anymail_backend_gets_its_api_url_and_a_stand_in_key(
    backend: str, esp: str, api_url: str, key: str
) -> None:
    provider = provider_of(backend)
    assert provider is not None
    settings = no_settings(ANYMAIL={"IGNORE_UNSUPPORTED_FEATURES": True})

    values = backend_settings(backend, URL.format(provider), settings, {})

    assert values == {
        "EMAIL_BACKEND": backend,
        "ANYMAIL": {
            "IGNORE_UNSUPPORTED_FEATURES": True,
            f"{esp}_API_URL": "http://127.0.0.1:8025/providers/" + api_url,
            f"{esp}_{key}": STAND_IN_KEY,
        },
    }


@pytest.mark.parametrize(
    "settings",
    [
        no_settings(ANYMAIL={"POSTMARK_SERVER_TOKEN": "production"}),
        no_settings(ANYMAIL_POSTMARK_SERVER_TOKEN="production"),
        no_settings(POSTMARK_SERVER_TOKEN="production"),
    ],
    ids=["ANYMAIL", "ANYMAIL_<ESP>_<NAME>", "bare"],
)
def test_a_key_the_project_sets_anywhere_anymail_reads_is_kept(settings: SimpleNamespace) -> None:
    backend = "anymail.backends.postmark.EmailBackend"

    values = backend_settings(backend, URL.format("postmark"), settings, {})

    assert STAND_IN_KEY not in values["ANYMAIL"].values()


def test_a_key_set_to_none_gets_a_stand_in() -> None:
    # ANYMAIL = {"SENDGRID_API_KEY": os.environ.get("SENDGRID_API_KEY")} without the variable.
    settings = no_settings(ANYMAIL={"SENDGRID_API_KEY": None})
    values = backend_settings(SENDGRID, URL.format("sendgrid"), settings, {})
    assert values["ANYMAIL"]["SENDGRID_API_KEY"] == STAND_IN_KEY


AMAZON_SES = "anymail.backends.amazon_ses.EmailBackend"


def test_anymails_amazon_ses_gets_boto3s_endpoint_a_region_and_stand_in_keys() -> None:
    config = {"retries": {"max_attempts": 1}}
    settings = no_settings(ANYMAIL={"AMAZON_SES_CLIENT_PARAMS": {"config": config}})

    values = backend_settings(AMAZON_SES, URL.format("ses"), settings, {})

    access, secret = STAND_IN_AWS_KEYS
    assert values["ANYMAIL"] == {
        "AMAZON_SES_CLIENT_PARAMS": {
            "config": config,
            "endpoint_url": URL.format("ses"),
            "region_name": "us-east-1",
        },
        "AMAZON_SES_SESSION_PARAMS": {"aws_access_key_id": access, "aws_secret_access_key": secret},
    }


def test_anymails_amazon_ses_keeps_the_credentials_and_region_boto3_finds() -> None:
    session = {"profile_name": "production", "region_name": "eu-west-1"}
    settings = no_settings(ANYMAIL={"AMAZON_SES_SESSION_PARAMS": session})

    values = backend_settings(AMAZON_SES, URL.format("ses"), settings, {})

    assert values["ANYMAIL"]["AMAZON_SES_CLIENT_PARAMS"] == {"endpoint_url": URL.format("ses")}
    assert values["ANYMAIL"]["AMAZON_SES_SESSION_PARAMS"] == session


def test_anymails_amazon_ses_keeps_the_environments_credentials() -> None:
    environ = {"AWS_ACCESS_KEY_ID": "AKIAREAL", "AWS_DEFAULT_REGION": "eu-west-1"}
    values = backend_settings(AMAZON_SES, URL.format("ses"), no_settings(), environ)
    assert values["ANYMAIL"] == {"AMAZON_SES_CLIENT_PARAMS": {"endpoint_url": URL.format("ses")}}


DJANGO_SES = "django_ses.SESBackend"


def test_django_ses_gets_its_region_endpoint_url_and_stand_in_keys() -> None:
    values = backend_settings(DJANGO_SES, URL.format("ses"), no_settings(), {})

    assert values == {
        "EMAIL_BACKEND": DJANGO_SES,
        "AWS_SES_REGION_ENDPOINT_URL": URL.format("ses"),
        "AWS_SES_ACCESS_KEY_ID": STAND_IN_AWS_KEYS[0],
        "AWS_SES_SECRET_ACCESS_KEY": STAND_IN_AWS_KEYS[1],
    }


@pytest.mark.parametrize(
    "setting", ["AWS_SES_ACCESS_KEY_ID", "AWS_ACCESS_KEY_ID", "AWS_SESSION_PROFILE"]
)
def test_django_ses_keeps_the_credentials_of_its_settings(setting: str) -> None:
    settings = no_settings(**{setting: "production"})
    values = backend_settings(DJANGO_SES, URL.format("ses"), settings, {})
    assert "AWS_SES_ACCESS_KEY_ID" not in values


def test_a_mailer_gets_the_url_and_keys_as_its_options() -> None:
    options = {"api_key": "production", "esp_extra": {"track": False}}

    assert mailer_options(SENDGRID, URL.format("sendgrid"), options, no_settings(), {}) == {
        "api_key": "production",
        "esp_extra": {"track": False},
        "api_url": URL.format("sendgrid") + "/v3/",
    }
    assert mailer_options(DJANGO_SES, URL.format("ses"), {}, no_settings(), {}) == {
        "aws_region_endpoint": URL.format("ses"),
        "aws_access_key": STAND_IN_AWS_KEYS[0],
        "aws_secret_key": STAND_IN_AWS_KEYS[1],
    }


def test_a_mailers_key_may_come_from_the_anymail_settings() -> None:
    settings = no_settings(ANYMAIL={"RESEND_API_KEY": "re_production"})
    options = mailer_options(RESEND, URL.format("resend"), {}, settings, {})
    assert options == {"api_url": URL.format("resend") + "/"}


def test_a_locmem_mailer_of_the_test_environment_takes_the_projects_backend() -> None:
    locmem = {"BACKEND": "django.core.mail.backends.locmem.EmailBackend"}
    production = {"BACKEND": RESEND, "OPTIONS": {"api_key": "re_production"}}

    mailer = provider_mailer(FakeServer("off"), locmem, production, no_settings(), {})

    assert mailer == {
        "BACKEND": RESEND,
        "OPTIONS": {"api_key": "re_production", "api_url": URL.format("resend") + "/"},
    }


def test_an_smtp_mailer_is_no_provider_mailer() -> None:
    smtp = {"OPTIONS": {"host": "smtp.example.com"}}
    assert provider_mailer(FakeServer("off"), smtp, smtp, no_settings(), {}) is None


class RealURLs:
    """A server's ``provider_url``, which refuses a provider the server does not answer."""

    def provider_url(self, name: str) -> str:
        return provider_url("http://127.0.0.1:8025/api", name)


def test_a_backend_of_a_provider_the_server_does_not_answer_is_not_kept() -> None:
    assert served_url(RealURLs(), SENDGRID) == URL.format("sendgrid")
    assert served_url(RealURLs(), "anymail.backends.mailjet.EmailBackend") is None
    assert served_url(RealURLs(), "django.core.mail.backends.smtp.EmailBackend") is None
