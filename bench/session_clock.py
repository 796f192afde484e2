"""A pytest plugin the bench loads into every suite run: it writes the session's duration to a file.

The duration is what pytest's summary line reports ("200 passed in 1.23s"):
from the session's start to its end, collection and tests, without the
interpreter's and the plugins' start-up before it. Written with full precision
to the file named by ``TEMPINBOX_BENCH_SESSION_FILE``. The bench copies this
file beside the suites and loads it with ``-p``; it imports nothing but pytest.
"""

from __future__ import annotations

import os
import time

import pytest

ENVIRONMENT = "TEMPINBOX_BENCH_SESSION_FILE"
_started: list[float] = []
_first_setup: list[float] = []


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """Note the session's start, before any other plugin's hook runs."""
    _started.append(time.perf_counter())


@pytest.hookimpl(trylast=True)
def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Note the first test's setup time: where a session-wide server starts."""
    if report.when == "setup" and not _first_setup:
        _first_setup.append(report.duration)


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Write the seconds since the session started, after every other plugin's hook ran."""
    path = os.environ.get(ENVIRONMENT)
    if path and _started:
        with open(path, "w") as file:
            first = _first_setup[0] if _first_setup else float("nan")
            file.write(f"{time.perf_counter() - _started[0]!r} {first!r}")
