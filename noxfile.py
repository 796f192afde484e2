"""The test suite on every supported Python, each in a fresh virtual environment: ``nox``.

``nox`` alone runs the whole suite on every supported Python, and on 3.14 where the
machine has it, and the Django tests on Django 4.2; CI (``.ci/run``) runs all of it
but the machine's own Python, which the README's test command has just covered.
``nox -s tests-3.12 -- -k django`` runs one, passing pytest's options on. A Python
the machine lacks is skipped with one line saying so, never silently, and none is
downloaded. pyenv's interpreters are found without ``pyenv shell``.
"""

from __future__ import annotations

import os
import shutil
import subprocess

import nox

SUPPORTED = ["3.10", "3.11", "3.12", "3.13"]
"""Every Python the project supports: ``requires-python`` and the classifiers say the same."""

NEXT = "3.14"
"""The next Python: its suite runs the day the machine carries it, and is skipped until then."""

OLDEST = SUPPORTED[0]

DJANGO_TESTS = [
    "tests/plugin/test_django.py",
    "tests/plugin/test_django_mailers.py",
    "docs/examples/recipes/test_django_signup.py",
    "docs/examples/recipes/test_django_runner.py",
    "docs/examples/test_tls.py::test_the_django_project_sends_over_tls",
]
"""What Django 4.2 is held to: the fixture's tests and the Django recipes' projects."""

nox.options.default_venv_backend = "venv"
nox.options.download_python = "never"
nox.options.error_on_missing_interpreters = False
nox.options.sessions = ["tests", "django-4.2"]


def _find_pyenv_pythons() -> None:
    """Make every interpreter pyenv has reachable as ``pythonX.Y`` (its shims answer only one)."""
    pyenv = shutil.which("pyenv")
    if pyenv is None or "PYENV_VERSION" in os.environ:
        return
    versions = subprocess.run(
        [pyenv, "versions", "--bare"], capture_output=True, text=True, check=False
    ).stdout.split()
    if versions:
        os.environ["PYENV_VERSION"] = ":".join(versions)


_find_pyenv_pythons()


@nox.session(python=[*SUPPORTED, NEXT])
def tests(session: nox.Session) -> None:
    """The whole suite, with the test extra as the README installs it (the oldest Python: h11)."""
    session.install("-e", ".[test]")
    if session.python == OLDEST:
        # The API then parses HTTP with h11, as it does where the httptools extra is not
        # installed: one whole suite on each of uvicorn's two parsers.
        session.run("python", "-m", "pip", "uninstall", "-q", "-y", "httptools")
    session.run("python", "-m", "pytest", *session.posargs)


@nox.session(python=OLDEST, name="django-4.2")
def django_42(session: nox.Session) -> None:
    """The Django fixture and recipes on Django 4.2, the oldest Django the plugin supports."""
    session.install("-e", ".[test]")
    # After the extra, whose Django (5.2 or 6.1, by Python) pip would not trade in one step.
    session.install("django>=4.2,<4.3")
    session.run("python", "-m", "pytest", *(session.posargs or DJANGO_TESTS))
