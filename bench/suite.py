"""A suite of email tests: a whole pytest process's wall time, against the floor and peers.

Each contender runs the same ``tests`` tests (see :mod:`bench.suite_files`) in
its own ``python -m pytest`` process. The floor is one session-wide bare
aiosmtpd server in a conftest, with every plugin disabled. One untimed run per
contender first writes pytest's bytecode caches, so that no contender pays for
them in a timed run.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from .measure import Row, Section, alternate, median, ratio
from .pytest_runs import CONTENDER_PLUGINS, PytestRun, plugin_options
from .suite_files import SUITES, write_suite

__all__ = ["NAME", "measure"]

NAME = "200-test email suite"
FLOOR = "floor (bare aiosmtpd)"
OURS = "pytest-tempinbox"
TARGET_FLOOR = 1.0
TARGET_PEER = 0.75


def measure(*, rounds: int, tests: int = 200) -> Section:
    """Run the suite comparison; return wall times and ratios to the floor and the faster peer."""
    name = NAME.replace("200", str(tests))
    print(f"{name}: {tests} tests per suite, {rounds} rounds of one pytest process each")
    section = Section(name)
    with tempfile.TemporaryDirectory(prefix="tempinbox-bench-") as scratch:
        runs: dict[str, PytestRun] = {}
        for number, contender in enumerate(SUITES):
            directory = write_suite(Path(scratch) / f"suite{number}", contender, tests)
            options = plugin_options(CONTENDER_PLUGINS.get(contender))
            runs[contender] = PytestRun(directory, options, tests, Path(scratch) / "pycache")
        samples = alternate({label: run.time for label, run in runs.items()}, rounds, label="suite")
        for run in runs.values():
            section.errors += run.errors
    medians = {label: median(values) for label, values in samples.items()}
    peers = {label: value for label, value in medians.items() if label not in (FLOOR, OURS)}
    faster_peer = min(peers, key=lambda label: peers[label])
    floor = medians[FLOOR]
    for label, value in medians.items():
        to_floor = ratio(value, floor)
        shown = f"{to_floor:.2f}x floor"
        target, passed, shortfall = "", None, ""
        if label == OURS:
            to_peer = ratio(value, medians[faster_peer])
            shown += f", {to_peer:.2f}x {faster_peer}"
            target = f"<= {TARGET_FLOOR:.2f}x floor, <= {TARGET_PEER:.2f}x faster peer"
            passed = to_floor <= TARGET_FLOOR and to_peer <= TARGET_PEER
            shortfall = (
                f"{to_floor:.2f}x the floor (target {TARGET_FLOOR:.2f}x), {to_peer:.2f}x"
                f" {faster_peer}, the faster peer (target {TARGET_PEER:.2f}x);"
                f" {(value - floor) / tests * 1000:.2f} ms per test above the floor"
            )
        section.rows.append(
            Row(
                name,
                label,
                f"{value:.2f} s ({value / tests * 1000:.1f} ms/test)",
                shown,
                target,
                passed,
                shortfall,
            )
        )
    section.data = {
        "tests": tests,
        "rounds": rounds,
        "commands": {label: run.command[1:] for label, run in runs.items()},
        "samples_s": samples,
        "median_s": medians,
        "ratio_to_floor": {label: ratio(value, floor) for label, value in medians.items()},
        "faster_peer": faster_peer,
        "ours_to_faster_peer": ratio(medians[OURS], medians[faster_peer]),
    }
    return section
