"""``tempinbox_django`` with Django 6.1's ``MAILERS``: every mailer sent to the test server.

Each test runs a small Django project whose settings define ``MAILERS`` as a
pytest session of its own (see :mod:`.django_projects`); every warning is an
error there, so a deprecation warning the fixture caused would fail it. The
projects need Django 6.1 or later (Python 3.12 or later); the table of
:func:`~pytest_tempinbox.django_mail.mailers_settings` runs on any Django.
"""

from __future__ import annotations

from typing import Any

import pytest

from .django_projects import FakeServer, make_project, run_with_pytest_django

django = pytest.importorskip("django")
needs_mailers = pytest.mark.skipif(
    django.VERSION < (6, 1), reason=f"MAILERS came in Django 6.1; this is {django.__version__}"
)

MAILERS = """
MAILERS = {
    "default": {
        "BACKEND": "django.core.mail.backends.smtp.EmailBackend",
        "OPTIONS": {"host": "smtp.example.com", "port": 587, "use_tls": True, "timeout": 20},
    },
    "receipts": {
        "BACKEND": "django.core.mail.backends.smtp.EmailBackend",
        "OPTIONS": {"host": "bulk.example.com", "port": 465, "use_ssl": True},
    },
    "audit": {"BACKEND": "django.core.mail.backends.console.EmailBackend"},
}
"""

SEND_TEST = """
import pytest
from django.conf import settings
from django.core import mail


@pytest.mark.parametrize("mailer", ["default", "receipts", "audit"])
def test_each_mailer_reaches_the_inbox(tempinbox_django, tempinbox, mailer):
    mail.send_mail("Your order", f"Sent by {mailer}.", None, [tempinbox.address], using=mailer)

    message = tempinbox.wait_for_message(subject="Your order", timeout=10)
    assert mailer in message.text
    backend = mail.mailers[mailer]
    print(mailer, type(backend).__module__, "use_tls", backend.use_tls, "use_ssl", backend.use_ssl)


def test_the_mailers_are_restored_after_the_test():
    assert set(settings.MAILERS) == {"default", "receipts", "audit"}
    assert all("OPTIONS" not in mailer for mailer in settings.MAILERS.values())  # locmem
"""


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A Django project whose settings define three mailers; pytest.ini makes warnings errors."""
    return make_project(pytester, monkeypatch, MAILERS)


PLAIN = "django.core.mail.backends.smtp use_tls False use_ssl False"
STARTTLS = "pytest_tempinbox.django_mail use_tls True use_ssl False"
SMTPS = "pytest_tempinbox.django_mail use_tls False use_ssl True"


@needs_mailers
@pytest.mark.parametrize(
    ("tls", "default", "receipts", "audit"),
    [
        # Against a plain server, each mailer's TLS is off.
        ("off", PLAIN, PLAIN, PLAIN),
        # Each keeps its own: use_ssl becomes STARTTLS, a mailer without TLS stays plain.
        ("starttls", STARTTLS, STARTTLS, PLAIN),
        # The server refuses mail before STARTTLS: every mailer speaks it.
        ("required", STARTTLS, STARTTLS, STARTTLS),
        ("implicit", SMTPS, SMTPS, SMTPS),
    ],
)
def test_every_mailer_reaches_the_inbox_with_the_tls_the_server_serves(
    project: pytest.Pytester, tls: str, default: str, receipts: str, audit: str
) -> None:
    project.makepyfile(test_mail=SEND_TEST)

    result = run_with_pytest_django(project, "--tempinbox-tls", tls)

    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(
        [f"*default {default}*", f"*receipts {receipts}*", f"*audit {audit}*"]
    )


@needs_mailers
def test_a_mailer_named_in_the_ini_is_left_as_it_is(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = make_project(
        pytester, monkeypatch, MAILERS, ini="tempinbox_django_keep_mailers = audit\n"
    )
    project.makepyfile(
        test_mail="""
        from django.core import mail


        def test_the_kept_mailer_still_writes_to_the_outbox(tempinbox_django, tempinbox):
            mail.send_mail("Audit", "Kept.", None, [tempinbox.address], using="audit")
            mail.send_mail("Receipt", "Sent.", None, [tempinbox.address], using="receipts")

            assert [message.subject for message in mail.outbox] == ["Audit"]
            tempinbox.wait_for_message(subject="Receipt", timeout=10)
            tempinbox.assert_no_message(subject="Audit", within=0.2)
        """
    )

    run_with_pytest_django(project).assert_outcomes(passed=1)


@needs_mailers
def test_keeping_a_mailer_that_mailers_lacks_fails_with_one_line(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = make_project(
        pytester, monkeypatch, MAILERS, ini="tempinbox_django_keep_mailers = audit billing\n"
    )
    project.makepyfile(test_mail="def test_mail(tempinbox_django):\n    pass\n")

    result = run_with_pytest_django(project)

    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "tempinbox_django: tempinbox_django_keep_mailers: MAILERS has no mailer 'billing';"
            " its mailers: default, receipts, audit"
        ]
    )


@needs_mailers
def test_without_pytest_django_override_settings_points_the_mailers(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DJANGO_SETTINGS_MODULE", "mail_site.settings")
    project.makepyfile(
        test_mail="""
        import django
        from django.conf import settings
        from django.core import mail

        django.setup()


        def test_the_default_mailer_reaches_the_inbox(tempinbox_django, tempinbox):
            mail.send_mail("Your order", "Over STARTTLS.", None, [tempinbox.address])

            tempinbox.wait_for_message(subject="Your order", timeout=10)
            assert mail.mailers.default.use_tls


        def test_the_production_mailers_are_restored_after_the_test():
            assert settings.MAILERS["default"]["OPTIONS"]["host"] == "smtp.example.com"
        """
    )

    result = project.runpytest_subprocess(
        "-p", "pytest_tempinbox.plugin", "--tempinbox-tls", "starttls"
    )

    result.assert_outcomes(passed=2)


SMTP = "django.core.mail.backends.smtp.EmailBackend"
TRUSTING = "pytest_tempinbox.django_mail.EmailBackend"


def test_a_mailer_keeps_its_smtp_options_but_host_port_and_tls() -> None:
    from pytest_tempinbox.django_mail import mailers_settings

    options = {"host": "smtp.example.com", "port": 587, "use_tls": True, "username": "shop"}
    mailers = {"default": {"OPTIONS": {**options, "timeout": 20, "ssl_certfile": "c.pem"}}}

    values = mailers_settings(FakeServer("starttls"), mailers)

    assert values == {
        "MAILERS": {
            "default": {
                "BACKEND": TRUSTING,
                "OPTIONS": {
                    "username": "shop",
                    "timeout": 20,
                    "ssl_certfile": "c.pem",
                    "host": "127.0.0.1",
                    "port": 2525,
                    "use_tls": True,
                    "use_ssl": False,
                },
            }
        },
        "TEMPINBOX_CA_PATH": "/tmp/ca.pem",
    }


def test_another_backends_options_are_dropped() -> None:
    # A provider's backend that the server does not answer: the SMTP backend takes its place.
    from pytest_tempinbox.django_mail import mailers_settings

    mailjet = "anymail.backends.mailjet.EmailBackend"
    mailers = {"default": {"BACKEND": mailjet, "OPTIONS": {"api_key": "k"}}}

    values = mailers_settings(FakeServer("off"), mailers)

    expected = {"host": "127.0.0.1", "port": 2525, "use_tls": False, "use_ssl": False}
    assert values == {"MAILERS": {"default": {"BACKEND": SMTP, "OPTIONS": expected}}}


def test_the_tls_options_come_from_the_production_mailers() -> None:
    # What Django's test environment leaves in MAILERS: locmem, no options.
    from pytest_tempinbox.django_mail import mailers_settings

    locmem = {"default": {"BACKEND": "django.core.mail.backends.locmem.EmailBackend"}}
    production: dict[str, Any] = {"default": {"OPTIONS": {"host": "h", "use_ssl": True}}}

    values = mailers_settings(FakeServer("implicit"), locmem, production)

    assert values["MAILERS"]["default"]["BACKEND"] == TRUSTING
    assert values["MAILERS"]["default"]["OPTIONS"]["use_ssl"] is True


def test_a_mailer_with_options_of_its_own_keeps_its_tls() -> None:
    # A test's override_settings(MAILERS=...) over the project's: its own options count.
    from pytest_tempinbox.django_mail import mailers_settings

    overridden = {"default": {"OPTIONS": {"host": "test.example.com"}}}
    production: dict[str, Any] = {"default": {"OPTIONS": {"host": "h", "use_tls": True}}}

    values = mailers_settings(FakeServer("starttls"), overridden, production)

    assert values["MAILERS"]["default"]["OPTIONS"]["use_tls"] is False


def test_a_kept_mailer_is_left_as_it_is() -> None:
    from pytest_tempinbox.django_mail import mailers_settings

    console = {"BACKEND": "django.core.mail.backends.console.EmailBackend"}
    mailers = {"default": {}, "audit": console}

    values = mailers_settings(FakeServer("off"), mailers, keep=["audit"])

    assert values["MAILERS"]["audit"] is console
    assert values["MAILERS"]["default"]["BACKEND"] == SMTP
