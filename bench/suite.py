"""A suite of email tests in a pytest process, against the physical floor, bare aiosmtpd and peers.

Each contender runs the same ``tests`` tests (see :mod:`bench.suite_files`) in
its own ``python -m pytest`` process. The references: the same tests sending
to Postfix's smtp-sink (C, another process started before the clock, nothing
stored or checked: the physical floor of a mail test), and one session-wide
bare aiosmtpd server in a conftest (the floor a Python server sets). Ours runs
twice: as installed (uvloop where it is) and on asyncio's own loop. Suites are
compared on the session time pytest reports (collection and tests: what each
test costs); the whole process's time, start-up included, is shown beside it.
One untimed run per contender first writes pytest's bytecode caches, so that
no contender pays for them in a timed run.

Ours is judged three ways against the smtp-sink suite, each on a row of its
own: what each test after the first costs (the session less the first test's
setup, over the tests after it) at most 1.5x the sink's; the first test's
setup (where our server starts) at most 50 ms; the whole session at most 1.7x
the sink's, and at most 1.0x the floor and 0.6x the faster peer.
"""

from __future__ import annotations

import contextlib
import math
import tempfile
from collections.abc import Callable
from pathlib import Path

from .measure import Row, Section, median, ratio
from .pytest_runs import CONTENDER_PLUGINS, PytestRun, alternate_runs, plugin_options
from .smtp_sink import SmtpSink, available
from .suite_files import SINK_ENVIRONMENT, SUITES, write_suite

__all__ = ["NAME", "measure", "rows"]

NAME = "200-test email suite"
FLOOR = "floor (bare aiosmtpd)"
SINK = "smtp-sink"
OURS = "pytest-tempinbox"
OURS_ASYNCIO = "pytest-tempinbox (asyncio loop)"
# What a contender's pytest gets besides its plugin: the asyncio variant names its loop.
OPTIONS = {OURS_ASYNCIO: ["--tempinbox-loop", "asyncio"]}
TARGET_PER_TEST = 1.5
TARGET_SETUP = 0.050
TARGET_SINK = 1.7
TARGET_FLOOR = 1.0
TARGET_PEER = 0.6


def time_suites(
    contenders: list[str],
    write: Callable[[Path, str], Path],
    options: Callable[[str], list[str]],
    section: Section,
    *,
    rounds: int,
    tests: int,
    label: str,
    sink: str = SINK,
) -> tuple[dict[str, list[str]], dict[str, list[float]], dict[str, list[float]]]:
    """Write each contender's suite, run them in alternating rounds, smtp-sink with them.

    ``sink`` is the contender that sends to smtp-sink: the sink runs while the
    suites do when it is among ``contenders``. Returns each contender's
    command, its pytest session times and its whole process's times; a run's
    errors go to ``section``, and each contender's first-test setup times to
    ``section.data["first_setup_s"]``.
    """
    with contextlib.ExitStack() as stack:
        scratch = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="tempinbox-bench-")))
        env: dict[str, str] = {}
        if sink in contenders:
            running = stack.enter_context(SmtpSink())
            env[SINK_ENVIRONMENT] = f"{running.host}:{running.port}"
        runs: dict[str, PytestRun] = {}
        for number, contender in enumerate(contenders):
            directory = write(scratch / f"{label}{number}", contender)
            runs[contender] = PytestRun(
                directory, options(contender), tests, scratch / "pycache", env
            )
        sessions, processes = alternate_runs(runs, rounds, label=label)
        for run in runs.values():
            section.errors += run.errors
        section.data["first_setup_s"] = {
            name: run.first_setups[-rounds:] for name, run in runs.items()
        }
    return {name: run.command[1:] for name, run in runs.items()}, sessions, processes


def measure(*, rounds: int, tests: int = 200) -> Section:
    """Run the suite comparison; return session times and ratios to the references and peers."""
    name = NAME.replace("200", str(tests))
    print(f"{name}: {tests} tests per suite, {rounds} rounds of one pytest process each")
    section = Section(name)
    contenders = list(SUITES)
    if not available():
        contenders.remove(SINK)
        section.errors.append(f"{name}: {SINK} is not installed (Debian package postfix)")
    commands, sessions, processes = time_suites(
        contenders,
        lambda folder, contender: write_suite(folder, contender, tests),
        lambda contender: [
            *plugin_options(CONTENDER_PLUGINS.get(contender)),
            *OPTIONS.get(contender, []),
        ],
        section,
        rounds=rounds,
        tests=tests,
        label="suite",
    )
    first_setups = section.data["first_setup_s"]
    section.rows = rows(name, tests, sessions, processes, first_setups)
    medians = {label: median(values) for label, values in sessions.items()}
    section.data = {
        "first_setup_s": first_setups,
        "tests": tests,
        "rounds": rounds,
        "compared_on": "pytest session time (collection and tests)",
        "commands": commands,
        "samples_s": sessions,
        "median_s": medians,
        "process_samples_s": processes,
        "process_median_s": {label: median(values) for label, values in processes.items()},
        "ratio_to_smtp_sink": {
            label: ratio(value, medians.get(SINK, math.nan)) for label, value in medians.items()
        },
        "ratio_to_floor": {label: ratio(value, medians[FLOOR]) for label, value in medians.items()},
    }
    return section


def rows(
    name: str,
    tests: int,
    sessions: dict[str, list[float]],
    processes: dict[str, list[float]],
    first_setups: dict[str, list[float]],
) -> list[Row]:
    """One row per contender: session median (process median beside it), ratios, our target.

    Ours and smtp-sink's also show the first test's setup (our server's start)
    and what each test after it costs, with their ratio; ours has a row more
    for each of these two, with its target.
    """
    medians = {label: median(values) for label, values in sessions.items()}
    after = {
        label: _after_first(values, first_setups[label], tests)
        for label, values in sessions.items()
    }
    setups = {label: median(values) for label, values in first_setups.items()}
    whole = {label: median(values) for label, values in processes.items()}
    ours = (FLOOR, SINK, OURS, OURS_ASYNCIO)
    peers = {label: value for label, value in medians.items() if label not in ours}
    faster_peer = min(peers, key=lambda label: peers[label])
    floor, sink = medians[FLOOR], medians.get(SINK, math.nan)
    sink_then = after.get(SINK, math.nan)
    result = []
    for label, value in medians.items():
        to_sink, to_floor = ratio(value, sink), ratio(value, floor)
        shown = f"{to_sink:.2f}x {SINK}, {to_floor:.2f}x floor"
        target, passed, shortfall = "", None, ""
        if label in (OURS, OURS_ASYNCIO, SINK):
            then = after[label]
            shown += (
                f"; first test's setup {setups[label] * 1000:.0f} ms, then"
                f" {then * 1000:.2f} ms/test ({ratio(then, sink_then):.2f}x {SINK}'s)"
            )
        if label == OURS:
            to_peer = ratio(value, medians[faster_peer])
            shown += f", {to_peer:.2f}x {faster_peer}"
            target = (
                f"whole session <= {TARGET_SINK:.2f}x {SINK}, <= {TARGET_FLOOR:.2f}x floor,"
                f" <= {TARGET_PEER:.2f}x faster peer"
            )
            passed = to_sink <= TARGET_SINK and to_floor <= TARGET_FLOOR and to_peer <= TARGET_PEER
            shortfall = (
                f"whole session {to_sink:.2f}x {SINK} (target {TARGET_SINK:.2f}x),"
                f" {to_floor:.2f}x the floor (target {TARGET_FLOOR:.2f}x),"
                f" {to_peer:.2f}x {faster_peer}, the faster peer (target {TARGET_PEER:.2f}x);"
                f" {(value - sink) / tests * 1000:.2f} ms per test above {SINK}"
            )
        result.append(
            Row(
                name,
                label,
                f"{value:.3f} s ({value / tests * 1000:.2f} ms/test); process {whole[label]:.2f} s",
                shown,
                target,
                passed,
                shortfall,
            )
        )
        if label == OURS:
            result += _our_phases(name, after[OURS], sink_then, setups[OURS], setups.get(SINK))
    return result


def _after_first(sessions: list[float], first_setups: list[float], tests: int) -> float:
    """The median, over the runs, of what each test after the first cost: (session - setup) / rest.

    A run that failed (its session nan) is left out.
    """
    per_test = [
        (session - first) / (tests - 1)
        for session, first in zip(sessions, first_setups, strict=True)
        if not math.isnan(session - first)
    ]
    return median(per_test)


def _our_phases(
    name: str, then: float, sink_then: float, setup: float, sink_setup: float | None
) -> list[Row]:
    """Ours, two rows more: each test after the first against smtp-sink's, the server's start."""
    per_test = ratio(then, sink_then)
    sink_setup_shown = "" if sink_setup is None else f"{SINK}'s {sink_setup * 1000:.1f} ms"
    return [
        Row(
            name,
            f"{OURS}, each test after the first",
            f"{then * 1000:.2f} ms/test",
            f"{per_test:.2f}x {SINK}'s {sink_then * 1000:.2f} ms/test",
            f"<= {TARGET_PER_TEST:.2f}x {SINK}'s",
            per_test <= TARGET_PER_TEST,
            f"{per_test:.2f}x {SINK}'s per test after the first (target {TARGET_PER_TEST:.2f}x);"
            f" {(then - sink_then) * 1000:.2f} ms a test above it",
        ),
        Row(
            name,
            f"{OURS}, the first test's setup (the server's start)",
            f"{setup * 1000:.1f} ms",
            sink_setup_shown,
            f"<= {TARGET_SETUP * 1000:.0f} ms",
            setup <= TARGET_SETUP,
            f"{setup * 1000:.1f} ms (target {TARGET_SETUP * 1000:.0f} ms)",
        ),
    ]
