"""The ``tempinbox_django`` fixture: a real Django project's mail, sent to the test server.

Each test runs a small Django project whose settings use ``EMAIL_*`` (the
settings before Django 6.1's ``MAILERS``) as a pytest session of its own (see
:mod:`.django_projects`). They run on Django 4.2, 5.2 and 6.1. On 6.1 Django
warns about the project's ``EMAIL_*`` settings when it loads them; that
warning, said where pytest-django (or the project's conftest) loads the
settings, is the project's, and let pass; any other, one the fixture caused
included, is an error. The ``MAILERS`` projects are in test_django_mailers.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_tempinbox.server.inbox_server import InboxServer

from . import django_projects
from .django_projects import FakeServer, run_with_pytest_django

MAIL_SETTINGS = """
# Production mail settings: the fixture points them at the test server.
EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
EMAIL_HOST = "smtp.example.com"
EMAIL_PORT = 587
"""
# Django 6.1's warning about the project's EMAIL_* settings, where they are loaded.
PROJECTS_OWN_WARNING = (
    r"ignore:The EMAIL_:PendingDeprecationWarning:(pytest_django[.]plugin|conftest)$"
)

SEND_TEST = """
import socket

import pytest
from django.conf import settings
from django.core.mail import send_mail

from pytest_tempinbox.django_mail import email_settings_quiet, project_tls


def test_send_mail_reaches_the_inbox(tempinbox_django, tempinbox, monkeypatch):
    def slow_getfqdn(name=""):
        raise AssertionError("socket.getfqdn() was called: it can take seconds")

    monkeypatch.setattr(socket, "getfqdn", slow_getfqdn)
    send_mail("Your order", "Order 1042 is confirmed.", None, [tempinbox.address])

    message = tempinbox.wait_for_message(subject="Your order", timeout=10)
    assert "1042" in message.text
    print("EMAIL_USE_TLS {} EMAIL_USE_SSL {}".format(*project_tls()))


def test_the_settings_are_restored_after_the_test():
    with email_settings_quiet():  # Django 6.1 warns the test itself reading them
        assert (settings.EMAIL_HOST, settings.EMAIL_PORT) == ("smtp.example.com", 587)
"""


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A Django project, ``mail_site``, with only the plugins named on each run's command line."""
    return django_projects.make_project(
        pytester, monkeypatch, MAIL_SETTINGS, let_pass=PROJECTS_OWN_WARNING
    )


def write_settings(pytester: pytest.Pytester, extra: str) -> None:
    django_projects.write_settings(pytester, MAIL_SETTINGS + extra)


def test_send_mail_reaches_the_inbox_through_the_smtp_backend(project: pytest.Pytester) -> None:
    project.makepyfile(test_mail=SEND_TEST)

    result = run_with_pytest_django(project)

    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*EMAIL_USE_TLS False EMAIL_USE_SSL False*"])


@pytest.mark.parametrize("tls", ["starttls", "required"])
def test_email_use_tls_is_kept_and_sends_over_starttls(project: pytest.Pytester, tls: str) -> None:
    # With tls = required, the server refuses mail sent before STARTTLS.
    write_settings(project, "EMAIL_USE_TLS = True\n")
    project.makepyfile(test_mail=SEND_TEST)

    result = run_with_pytest_django(project, "--tempinbox-tls", tls)

    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*EMAIL_USE_TLS True EMAIL_USE_SSL False*"])


def test_the_tls_backends_share_one_context_for_the_test_ca(project: pytest.Pytester) -> None:
    # Django builds a backend for each send_mail; loading the CA for each cost 0.4 ms.
    write_settings(project, "EMAIL_USE_TLS = True\n")
    project.makepyfile(
        test_mail="""
        from django.core import mail
        from django.core.mail import send_mail


        def connection():
            # Django 6.1 deprecates get_connection(); mailers.default makes one from EMAIL_*.
            return mail.mailers.default if hasattr(mail, "mailers") else mail.get_connection()


        def test_two_mails(tempinbox_django, tempinbox):
            assert connection().ssl_context is connection().ssl_context
            send_mail("first", "One.", None, [tempinbox.address])
            send_mail("second", "Two.", None, [tempinbox.address])

            assert len(tempinbox.wait_for_messages(2, timeout=10)) == 2
        """
    )

    run_with_pytest_django(project, "--tempinbox-tls", "starttls").assert_outcomes(passed=1)


def test_a_rewritten_ca_file_gets_a_new_context(tmp_path: Path) -> None:
    from pytest_tempinbox.django_mail import _context, _version

    server = InboxServer(tls="starttls")
    server.start()
    try:
        assert server.ca_path is not None
        ca = tmp_path / "ca.pem"
        ca.write_bytes(Path(server.ca_path).read_bytes())
        files = (str(ca), None, None)
        first = _context(*files, versions=tuple(_version(path) for path in files))
        again = _context(*files, versions=tuple(_version(path) for path in files))
        ca.write_bytes(ca.read_bytes() + b"\n")
        rewritten = _context(*files, versions=tuple(_version(path) for path in files))
    finally:
        server.stop()

    assert again is first
    assert rewritten is not first


def test_email_use_ssl_is_kept_and_sends_over_implicit_tls(project: pytest.Pytester) -> None:
    write_settings(project, "EMAIL_USE_SSL = True\n")
    project.makepyfile(test_mail=SEND_TEST)

    result = run_with_pytest_django(project, "--tempinbox-tls", "implicit")

    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*EMAIL_USE_TLS False EMAIL_USE_SSL True*"])


@pytest.mark.parametrize("setting", ["EMAIL_USE_TLS", "EMAIL_USE_SSL"])
def test_tls_settings_are_turned_off_against_a_plain_server(
    project: pytest.Pytester, setting: str
) -> None:
    write_settings(project, f"{setting} = True\n")
    project.makepyfile(test_mail=SEND_TEST)

    result = run_with_pytest_django(project)

    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*EMAIL_USE_TLS False EMAIL_USE_SSL False*"])


def test_only_the_settings_that_differ_are_overridden(project: pytest.Pytester) -> None:
    # EMAIL_USE_SSL is already False: left alone. EMAIL_USE_TLS = 0 is falsy but no bool:
    # overridden, so that the test reads False.
    write_settings(project, "EMAIL_USE_TLS = 0\n")
    project.makepyfile(
        test_mail="""
        from django.conf import settings
        from django.test.signals import setting_changed

        from pytest_tempinbox.django_mail import email_settings_quiet

        changed = set()
        setting_changed.connect(lambda setting, **kwargs: changed.add(setting), weak=False)


        def test_mail(tempinbox_django):
            with email_settings_quiet():
                assert settings.EMAIL_USE_TLS is False
                assert settings.EMAIL_USE_SSL is False
            emails = sorted(name for name in changed if name.startswith("EMAIL_"))
            assert emails == ["EMAIL_BACKEND", "EMAIL_HOST", "EMAIL_PORT", "EMAIL_USE_TLS"]


        def test_the_settings_are_restored_after_the_test():
            with email_settings_quiet():
                assert (settings.EMAIL_HOST, settings.EMAIL_USE_TLS) == ("smtp.example.com", 0)
        """
    )

    run_with_pytest_django(project).assert_outcomes(passed=2)


def test_the_tests_own_settings_changes_are_undone_with_the_fixtures(
    project: pytest.Pytester,
) -> None:
    # pytest-django's settings fixture, set up before tempinbox_django, undoes both in order.
    project.makepyfile(
        test_mail="""
        from django.conf import settings as django_settings

        from pytest_tempinbox.django_mail import email_settings_quiet


        def test_changes(settings, tempinbox_django):
            settings.DEFAULT_FROM_EMAIL = "test@example.com"


        def test_every_change_is_undone():
            assert django_settings.DEFAULT_FROM_EMAIL == "shop@example.com"
            with email_settings_quiet():
                assert django_settings.EMAIL_HOST == "smtp.example.com"
        """
    )

    run_with_pytest_django(project).assert_outcomes(passed=2)


def test_a_django_test_case_uses_the_fixture_through_usefixtures(
    project: pytest.Pytester,
) -> None:
    write_settings(project, "EMAIL_USE_TLS = True\n")
    project.makepyfile(
        test_case="""
        import pytest
        from django.core import mail
        from django.test import TestCase


        @pytest.mark.usefixtures("tempinbox_django")
        class OrderMailTests(TestCase):
            @pytest.fixture(autouse=True)
            def _inbox(self, tempinbox):
                self.inbox = tempinbox

            def test_the_confirmation_arrives(self):
                mail.send_mail("Your order", "Order 7 is confirmed.", None, [self.inbox.address])

                message = self.inbox.wait_for_message(subject="Your order", timeout=10)
                self.assertIn("Order 7", message.text)
                self.assertEqual(mail.outbox, [])  # not the locmem backend
        """
    )

    run_with_pytest_django(project, "--tempinbox-tls", "starttls").assert_outcomes(passed=1)


def test_without_pytest_django_override_settings_is_used(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DJANGO_SETTINGS_MODULE", "mail_site.settings")
    write_settings(project, "EMAIL_USE_SSL = True\n")
    # Without pytest-django, the project sets Django up itself.
    project.makeconftest("import django\n\ndjango.setup()\n")
    project.makepyfile(test_mail=SEND_TEST)

    result = project.runpytest_subprocess(
        "-p", "pytest_tempinbox.plugin", "-s", "--tempinbox-tls", "implicit"
    )

    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*EMAIL_USE_TLS False EMAIL_USE_SSL True*"])


def test_unconfigured_django_fails_the_test_with_one_line(project: pytest.Pytester) -> None:
    project.makepyfile(test_mail="def test_mail(tempinbox_django):\n    pass\n")

    result = project.runpytest_subprocess("-p", "pytest_tempinbox.plugin")

    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["tempinbox_django: Django's settings are not configured: set DJANGO_SETTINGS_MODULE*"]
    )
    result.stdout.no_fnmatch_line("*During handling*")


def test_missing_django_fails_the_test_with_one_line(project: pytest.Pytester) -> None:
    # A None entry in sys.modules makes importlib find no module of that name.
    project.makeconftest("import sys\nsys.modules['django'] = None\n")
    project.makepyfile(test_mail="def test_mail(tempinbox_django):\n    pass\n")

    result = project.runpytest_subprocess("-p", "pytest_tempinbox.plugin")

    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["tempinbox_django needs Django, which is not installed"])


def test_django_is_imported_only_by_the_fixture(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_mail="""
        import sys

        def test_mail(tempinbox):
            assert "django" not in sys.modules
        """
    )

    project.runpytest_subprocess("-p", "pytest_tempinbox.plugin").assert_outcomes(passed=1)


@pytest.mark.parametrize(
    ("tls", "project_tls", "project_ssl", "expected"),
    [
        ("off", True, False, (False, False)),
        ("off", False, True, (False, False)),
        ("starttls", False, False, (False, False)),
        ("starttls", True, False, (True, False)),
        ("starttls", False, True, (True, False)),
        ("required", False, False, (True, False)),
        ("implicit", False, False, (False, True)),
        ("implicit", True, False, (False, True)),
    ],
)
def test_the_tls_settings_become_what_the_server_speaks(
    tls: str, project_tls: bool, project_ssl: bool, expected: tuple[bool, bool]
) -> None:
    from pytest_tempinbox.django_mail import mail_settings

    values = mail_settings(FakeServer(tls), project_tls, project_ssl)

    assert (values["EMAIL_USE_TLS"], values["EMAIL_USE_SSL"]) == expected
    assert (values["EMAIL_HOST"], values["EMAIL_PORT"]) == ("127.0.0.1", 2525)
    if any(expected):
        assert values["EMAIL_BACKEND"] == "pytest_tempinbox.django_mail.EmailBackend"
        assert values["TEMPINBOX_CA_PATH"] == "/tmp/ca.pem"
    else:
        assert values["EMAIL_BACKEND"] == "django.core.mail.backends.smtp.EmailBackend"
