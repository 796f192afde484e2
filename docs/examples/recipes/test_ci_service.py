"""The CI recipe in miniature: start the standalone server, run the tests against it.

As a CI job does: ``python -m pytest_tempinbox`` runs as a service, and a
separate pytest run (``ci_service/``) uses it through ``--tempinbox-url``.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

TESTS = Path(__file__).parent / "ci_service"

# Records, from inside the pytest run under test, which server each test used.
RECORDER = """
import os

import pytest


@pytest.fixture(autouse=True)
def record_the_server(tempinbox_server):
    with open(os.environ["RECORD"], "a") as out:
        out.write(tempinbox_server.api_url + "\\n")
"""


@pytest.fixture
def service() -> Iterator[str]:
    """``python -m pytest_tempinbox`` running as a service; yields its API URL.

    Free ports here (a CI job would keep the defaults, 1025 and 8025), and
    loopback: a container network would need ``--host 0.0.0.0``.
    """
    command = [sys.executable, "-m", "pytest_tempinbox", "--smtp-port", "0", "--api-port", "0"]
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert process.stdout is not None
        printed = process.stdout.readline() + process.stdout.readline()
        api = re.search(r"API listening on (http://\S+/api)", printed)
        assert api, f"no API URL in {printed!r}"
        yield api.group(1)
    finally:
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=20)
    assert process.returncode == 0, stderr


def test_the_tests_pass_against_the_shared_server(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, service: str
) -> None:
    """The test file passes with ``--tempinbox-url``, and used that server."""
    shutil.copytree(
        TESTS, pytester.path, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__")
    )
    pytester.makeconftest(RECORDER)
    record = pytester.path / "record.txt"
    monkeypatch.setenv("RECORD", str(record))
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")

    result = pytester.runpytest_subprocess(
        "-p", "pytest_tempinbox.plugin", "--tempinbox-url", service
    )

    result.assert_outcomes(passed=1)
    assert record.read_text().split() == [service]
