"""Runs the Django recipe's projects, ``django_signup/`` and ``django_orders/``, as pytest sessions.

Django's settings are global to a process, and once they are configured
pytest-django applies its test environment (the locmem mail backend, a test
database, blocked database access) to every test of the session. So each
project runs in a pytest subprocess of its own, with its own ``pytest.ini``,
exactly as ``cd django_signup && pytest`` would run it, and this project's
other tests never see Django configured.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import django
import pytest

RECIPES = Path(__file__).parent
# Django 6.1 deprecates the sign-up project's EMAIL_* settings and its shared connection:
# the warnings about its own code pass (the settings', where pytest-django loads them).
DJANGO_61_WARNINGS = (
    "-W",
    "ignore:The EMAIL_:PendingDeprecationWarning:pytest_django.plugin",
    "-W",
    "ignore::PendingDeprecationWarning:signup_site.tests_connection",
)


def run_project(
    name: str, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, *args: str
) -> pytest.RunResult:
    """Run the tests of the project in ``name``, in a copy, as ``cd name && pytest`` would."""
    shutil.copytree(
        RECIPES / name,
        pytester.path,
        dirs_exist_ok=True,
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    # Only the plugins the project needs, whatever else is installed.
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    return pytester.runpytest_subprocess(
        "-p", "pytest_django.plugin", "-p", "pytest_tempinbox.plugin", *args
    )


def test_the_django_project_tests_pass(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The project's tests pass: the sign-up mail's link activates the account."""
    deprecated = DJANGO_61_WARNINGS if django.VERSION >= (6, 1) else ()
    result = run_project("django_signup", pytester, monkeypatch, *deprecated)
    result.assert_outcomes(passed=4)


@pytest.mark.skipif(
    django.VERSION < (6, 1), reason=f"MAILERS came in Django 6.1; this is {django.__version__}"
)
def test_the_mailers_project_tests_pass(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each mailer's mail goes where the recipe says: the inbox, or the kept one's outbox."""
    result = run_project("django_orders", pytester, monkeypatch)
    result.assert_outcomes(passed=3)
