"""Runs the Django recipe's project, ``django_signup/``, as its own pytest session.

Django's settings are global to a process, and once they are configured
pytest-django applies its test environment (the locmem mail backend, a test
database, blocked database access) to every test of the session. So the
project runs in a pytest subprocess of its own, with its own ``pytest.ini``,
exactly as ``cd django_signup && pytest`` would run it, and this project's
other tests never see Django configured.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

PROJECT = Path(__file__).parent / "django_signup"


def test_the_django_project_tests_pass(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The project's tests pass: the sign-up mail's link activates the account."""
    shutil.copytree(
        PROJECT, pytester.path, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__")
    )
    # Only the plugins the project needs, whatever else is installed.
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    result = pytester.runpytest_subprocess(
        "-p", "pytest_django.plugin", "-p", "pytest_tempinbox.plugin"
    )
    result.assert_outcomes(passed=4)
