"""Runs the ``manage.py test`` recipe's project, ``django_runner/``, with Django's own runner.

In a subprocess of its own, as ``cd django_runner && python manage.py test``
would: Django's settings are global to a process.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

PROJECT = Path(__file__).parent / "django_runner"


def test_manage_py_test_passes(tmp_path: Path) -> None:
    """Django's runner finds the test, and the mail arrives over STARTTLS."""
    shutil.copytree(
        PROJECT, tmp_path, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__")
    )
    # Every warning an error, but Django 6.1's about the EMAIL_* settings, said where manage.py
    # loads them: the project's own, not the test's.
    warnings = "error,ignore:The EMAIL_:PendingDeprecationWarning:__main__"
    environment = {**os.environ, "PYTHONWARNINGS": warnings}
    environment.pop("DJANGO_SETTINGS_MODULE", None)

    finished = subprocess.run(
        [sys.executable, "manage.py", "test", "--verbosity", "2"],
        cwd=tmp_path,
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert finished.returncode == 0, finished.stderr
    assert "Ran 1 test" in finished.stderr
    assert "test_the_confirmation_arrives_over_tls" in finished.stderr
