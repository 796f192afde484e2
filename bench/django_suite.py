"""What a Django user picks instead: the same suite with Django's locmem backend and over SMTP.

Each contender runs the same ``tests`` tests, each sending one mail with
``django.core.mail.send_mail`` under a minimal settings module (no database)
and checking that it arrived (see :mod:`bench.suite_files`), in its own
``python -m pytest`` process with pytest-django: to the in-memory locmem
outbox (pytest-django's ``mailoutbox``, the reference), through Django's SMTP
backend to a tempinbox inbox (``tempinbox_django``, then
``tempinbox.wait_for_message()``), and, for the floor of Django's SMTP backend
itself, through it to Postfix's smtp-sink (nothing checked). Compared on the
session time pytest reports; the whole process's time is shown beside it.
"""

from __future__ import annotations

import math
from importlib.util import find_spec

from .measure import Row, Section, median, ratio
from .pytest_runs import plugin_options
from .smtp_sink import available
from .suite import time_suites
from .suite_files import DJANGO_SUITES, write_django_suite

__all__ = ["NAME", "measure"]

NAME = "200-test Django suite"
LOCMEM = "Django locmem (mailoutbox)"
OURS = "Django SMTP to pytest-tempinbox"
SINK = "Django SMTP to smtp-sink"
TARGET = 3.0
# The pytest11 entry points each contender keeps: pytest-django's, and ours where used.
PLUGINS = {LOCMEM: ("django",), OURS: ("django", "tempinbox"), SINK: ("django",)}


def measure(*, rounds: int, tests: int = 200) -> Section:
    """Run the Django comparison; return session times and ratios to the locmem suite."""
    name = NAME.replace("200", str(tests))
    print(f"{name}: {tests} tests per suite, {rounds} rounds of one pytest process each")
    section = Section(name)
    missing = [module for module in ("django", "pytest_django") if find_spec(module) is None]
    if missing:
        section.errors.append(f"{name}: not run, {' and '.join(missing)} not installed")
        return section
    contenders = list(DJANGO_SUITES)
    if not available():
        contenders.remove(SINK)
        section.errors.append(f"{name}: smtp-sink is not installed (Debian package postfix)")
    commands, sessions, processes = time_suites(
        contenders,
        lambda folder, contender: write_django_suite(folder, contender, tests),
        lambda contender: plugin_options(PLUGINS[contender]),
        section,
        rounds=rounds,
        tests=tests,
        label="django",
        sink=SINK,
    )
    medians = {label: median(values) for label, values in sessions.items()}
    whole = {label: median(values) for label, values in processes.items()}
    locmem = medians[LOCMEM]
    for label, value in medians.items():
        to_locmem = ratio(value, locmem)
        target, passed, shortfall = "", None, ""
        if label == OURS:
            target = f"<= {TARGET:.1f}x locmem"
            passed = to_locmem <= TARGET
            sink_value = medians.get(SINK, math.nan)
            shortfall = (
                f"{to_locmem:.2f}x the locmem suite (target {TARGET:.1f}x);"
                f" {(value - sink_value) / tests * 1000:.2f} ms per test above"
                f" Django's SMTP backend to smtp-sink"
            )
        section.rows.append(
            Row(
                name,
                label,
                f"{value:.3f} s ({value / tests * 1000:.2f} ms/test); process {whole[label]:.2f} s",
                f"{to_locmem:.2f}x locmem",
                target,
                passed,
                shortfall,
            )
        )
    section.data = {
        "tests": tests,
        "rounds": rounds,
        "compared_on": "pytest session time (collection and tests)",
        "commands": commands,
        "samples_s": sessions,
        "median_s": medians,
        "process_samples_s": processes,
        "process_median_s": whole,
        "ratio_to_locmem": {label: ratio(value, locmem) for label, value in medians.items()},
    }
    return section
