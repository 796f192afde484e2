"""The plugin's cost when no test uses it: a suite of plain tests with the plugin and without.

Both runs disable every other installed plugin; one leaves pytest-tempinbox
loaded (as installing it does), the other adds ``-p no:tempinbox``.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from .measure import Row, Section, alternate, median, ratio
from .pytest_runs import PytestRun, plugin_options
from .suite_files import write_plain_suite

__all__ = ["NAME", "measure"]

NAME = "plugin unused"
WITH = "plugin installed"
WITHOUT = "-p no:tempinbox"
TARGET = 1.05


def measure(*, rounds: int, tests: int = 200) -> Section:
    """Time the plain suite with and without the plugin, alternating; return the ratio."""
    print(f"{NAME}: {tests} tests without fixtures, {rounds} rounds")
    section = Section(NAME)
    with tempfile.TemporaryDirectory(prefix="tempinbox-bench-") as scratch:
        directory = write_plain_suite(Path(scratch) / "plain", tests)
        bytecode = Path(scratch) / "pycache"
        runs = {
            WITH: PytestRun(directory, plugin_options("tempinbox"), tests, bytecode),
            WITHOUT: PytestRun(directory, plugin_options(None), tests, bytecode),
        }
        samples = alternate(
            {label: run.time for label, run in runs.items()}, rounds, label="unused"
        )
        for run in runs.values():
            section.errors += run.errors
    medians = {label: median(values) for label, values in samples.items()}
    overhead = ratio(medians[WITH], medians[WITHOUT])
    section.rows += [
        Row(
            NAME,
            WITH,
            f"{medians[WITH]:.3f} s",
            f"{overhead:.3f}x without",
            f"<= {TARGET:.2f}x without",
            overhead <= TARGET,
            f"{overhead:.3f}x without the plugin (target {TARGET:.2f}x),"
            f" {(medians[WITH] - medians[WITHOUT]) * 1000:+.0f} ms per run",
        ),
        Row(NAME, WITHOUT, f"{medians[WITHOUT]:.3f} s", "1.000x"),
    ]
    section.data = {
        "tests": tests,
        "rounds": rounds,
        "commands": {label: run.command[1:] for label, run in runs.items()},
        "samples_s": samples,
        "median_s": medians,
        "ratio": overhead,
    }
    return section
