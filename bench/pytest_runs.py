"""Running a generated suite in a fresh ``python -m pytest`` process and timing the whole process.

Every run gets the same options: ``-q -p no:cacheprovider``, and ``-p no:NAME``
for every installed pytest plugin (entry point group ``pytest11``) that is not
the contender's own, so that the only difference between two runs is the
plugin under test. Environment variables that would change pytest's behaviour
are removed.
"""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
import time
from pathlib import Path

__all__ = ["CONTENDER_PLUGINS", "PytestRun", "plugin_options"]

# The plugin each contender brings (its pytest11 entry point name).
CONTENDER_PLUGINS = {
    "pytest-tempinbox": "tempinbox",
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


def _installed_plugins() -> list[str]:
    names = {entry.name for entry in importlib.metadata.entry_points(group="pytest11")}
    return sorted(names)


def plugin_options(keep: str | None) -> list[str]:
    """``-p no:NAME`` for every installed plugin but ``keep`` (a pytest11 entry point name)."""
    options: list[str] = []
    for name in _installed_plugins():
        if name != keep:
            options += ["-p", f"no:{name}"]
    return options


class PytestRun:
    """One suite directory and the command line that runs it; call :meth:`time` to run it once.

    ``bytecode`` is the directory that holds every compiled module of the runs.
    """

    def __init__(self, directory: Path, options: list[str], tests: int, bytecode: Path) -> None:
        self.directory = directory
        self.command = [sys.executable, "-m", "pytest", *BASE_OPTIONS, *options]
        self.tests = tests
        self.errors: list[str] = []
        env = {key: value for key, value in os.environ.items() if key not in _UNSET}
        # smtpdfix binds SMTPD_HOST (default "localhost"): loopback IPv4, as everyone else.
        env["SMTPD_HOST"] = "127.0.0.1"
        env["PYTHONPYCACHEPREFIX"] = str(bytecode)
        self.env = env

    def time(self) -> float:
        """Run the suite once; return the whole process's wall time in seconds.

        A run that does not report every test passed is recorded in :attr:`errors`.
        """
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
        if result.returncode != 0 or f"{self.tests} passed" not in summary[0]:
            output = (result.stdout + result.stderr).strip()[-600:]
            self.errors.append(f"{self.directory.name}: exit {result.returncode}: {output}")
        return seconds
