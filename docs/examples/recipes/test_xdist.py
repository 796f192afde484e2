"""The xdist recipe, checked: with ``-n 2``, both workers use one server, one inbox per test."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

TESTS = Path(__file__).parent / "xdist_workers"

# Records, from inside the pytest run under test, where each test's mail went.
RECORDER = """
import os

import pytest


@pytest.fixture(autouse=True)
def record_the_inbox(tempinbox, tempinbox_server):
    line = f"{os.environ['PYTEST_XDIST_WORKER']} {tempinbox_server.smtp_port} {tempinbox.address}"
    with open(os.environ["RECORD"], "a") as out:
        out.write(line + "\\n")
"""


def test_workers_share_one_server_and_each_test_has_its_own_inbox(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Six tests on two workers: two worker names, one SMTP port, six addresses."""
    shutil.copytree(
        TESTS, pytester.path, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__")
    )
    pytester.makeconftest(RECORDER)
    record = pytester.path / "record.txt"
    monkeypatch.setenv("RECORD", str(record))
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")

    result = pytester.runpytest_subprocess(
        "-p", "xdist", "-p", "pytest_tempinbox.plugin", "-n", "2"
    )

    result.assert_outcomes(passed=6)
    tests = [line.split() for line in record.read_text().splitlines()]
    assert {worker for worker, _, _ in tests} == {"gw0", "gw1"}
    assert len({smtp_port for _, smtp_port, _ in tests}) == 1
    assert len({address for _, _, address in tests}) == 6
