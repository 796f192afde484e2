"""Runs the provider recipe's Django project, ``provider_shop/``, as a pytest session of its own.

Django's settings are global to a process (see ``test_django_signup.py``): the
project runs in a pytest subprocess, with its own ``pytest.ini``, exactly as
``cd provider_shop && pytest`` would run it.
"""

from __future__ import annotations

import django
import pytest
from test_django_signup import run_project

pytest.importorskip("anymail")


def test_the_anymail_project_tests_pass(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The shop's order mail goes through Postmark's API to the inbox, its link and tag intact."""
    # Django 6.1 deprecates EMAIL_BACKEND for MAILERS: its warning about the settings passes.
    deprecated = ("-W", "ignore:The EMAIL_:PendingDeprecationWarning")
    result = run_project(
        "provider_shop", pytester, monkeypatch, *(deprecated if django.VERSION >= (6, 1) else ())
    )
    result.assert_outcomes(passed=1)
