"""Running a generated suite in a fresh ``python -m pytest`` process, timed two ways.

Every run gets the same options: ``-q -p no:cacheprovider``, ``-p no:NAME``
for every installed pytest plugin (entry point group ``pytest11``) that is not
the contender's own, so that the only difference between two runs is the
plugin under test, and ``-p`` :mod:`bench.session_clock`, which writes the
session's duration as pytest reports it (collection and tests). A run is timed
by that, and as the whole process's wall time (interpreter and plugin start-up
too). Environment variables that would change pytest's behaviour are removed.
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Collection, Mapping
from pathlib import Path

from . import session_clock
from .measure import alternate

__all__ = ["CONTENDER_PLUGINS", "PytestRun", "alternate_runs", "plugin_options"]

# The plugin each contender brings (its pytest11 entry point name).
CONTENDER_PLUGINS = {
    "pytest-tempinbox": "tempinbox",
    "pytest-tempinbox (asyncio loop)": "tempinbox",
    "smtpdfix": "smtpd",
    "pytest-localserver": "localserver",
}
BASE_OPTIONS = ("-q", "-p", "no:cacheprovider")
_UNSET = (
    "PYTEST_ADDOPTS",
    "PYTEST_PLUGINS",
    "PYTEST_DISABLE_PLUGIN_AUTOLOAD",
    "PYTHONDONTWRITEBYTECODE",
    "TEMPINBOX_URL",
)
_TIMEOUT = 600.0
_CLOCK = "tempinbox_bench_clock"


def _installed_plugins() -> list[str]:
    names = {entry.name for entry in importlib.metadata.entry_points(group="pytest11")}
    return sorted(names)


def plugin_options(keep: str | Collection[str] | None) -> list[str]:
    """``-p no:NAME`` for every installed plugin but those in ``keep`` (pytest11 entry points)."""
    kept = {keep} if isinstance(keep, str) else set(keep or ())
    options: list[str] = []
    for name in _installed_plugins():
        if name not in kept:
            options += ["-p", f"no:{name}"]
    return options


class PytestRun:
    """One suite directory and the command line that runs it; :meth:`run` runs it once.

    ``bytecode`` is the directory that holds every compiled module of the runs;
    the session clock plugin is copied beside it. ``env`` adds variables to the
    run's environment (a server's address, a settings module).
    """

    def __init__(
        self,
        directory: Path,
        options: list[str],
        tests: int,
        bytecode: Path,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.directory = directory
        self.command = [sys.executable, "-m", "pytest", *BASE_OPTIONS, "-p", _CLOCK, *options]
        self.tests = tests
        self.errors: list[str] = []
        self.first_setups: list[float] = []
        """The first test's setup time of each run (where a session-wide server starts)."""
        plugins = bytecode.parent / "bench-plugins"
        plugins.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(session_clock.__file__, plugins / f"{_CLOCK}.py")
        self.session_file = directory.parent / f"{directory.name}.session"
        environment = {key: value for key, value in os.environ.items() if key not in _UNSET}
        # smtpdfix binds SMTPD_HOST (default "localhost"): loopback IPv4, as everyone else.
        environment["SMTPD_HOST"] = "127.0.0.1"
        environment["PYTHONPYCACHEPREFIX"] = str(bytecode)
        path = environment.get("PYTHONPATH")
        environment["PYTHONPATH"] = str(plugins) + (os.pathsep + path if path else "")
        environment[session_clock.ENVIRONMENT] = str(self.session_file)
        environment.update(env or {})
        self.env = environment

    def run(self) -> tuple[float, float]:
        """Run the suite once; return the whole process's and the pytest session's seconds.

        A run that does not report every test passed is recorded in :attr:`errors`
        (its session time is then nan).
        """
        self.session_file.unlink(missing_ok=True)
        started = time.perf_counter()
        result = subprocess.run(
            self.command,
            cwd=self.directory,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=_TIMEOUT,
            check=False,
        )
        seconds = time.perf_counter() - started
        summary = result.stdout.strip().splitlines()[-1:] or [""]
        try:
            session, first_setup = map(float, self.session_file.read_text().split())
        except (OSError, ValueError):
            session = first_setup = float("nan")
        self.first_setups.append(first_setup)
        if result.returncode != 0 or f"{self.tests} passed" not in summary[0]:
            output = (result.stdout + result.stderr).strip()[-600:]
            self.errors.append(f"{self.directory.name}: exit {result.returncode}: {output}")
            session = float("nan")
        return seconds, session

    def time(self) -> float:
        """Run the suite once; return the whole process's wall time in seconds."""
        return self.run()[0]


def alternate_runs(
    runs: Mapping[str, PytestRun], rounds: int, *, label: str
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Run the suites in alternating rounds (:func:`bench.measure.alternate`), untimed once first.

    Returns each contender's pytest session times, the compared figure, and its
    whole-process times, in round order.
    """
    processes: dict[str, list[float]] = {name: [] for name in runs}

    def contender(name: str, run: PytestRun) -> Callable[[], float]:
        def one() -> float:
            process, session = run.run()
            processes[name].append(process)
            return session

        return one

    sessions = alternate(
        {name: contender(name, run) for name, run in runs.items()}, rounds, label=label
    )
    # The warm-up's process time is the first of each list: not a sample.
    return sessions, {name: values[-rounds:] for name, values in processes.items()}
