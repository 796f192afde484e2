"""Everything at once, side by side with the ceiling and the peers, on this machine, in one run.

Measures, in order: SMTP ingestion (against bare aiosmtpd, Postfix's
smtp-sink, smtpdfix and pytest-localserver), a suite of 200 email tests in a
pytest process (against the same tests sending to smtp-sink, a bare-aiosmtpd
floor and the same peers), the same with Django (against Django's locmem
backend and its SMTP backend to smtp-sink), delivery latency through
the long-poll (what it adds to a bare socket server's reply), the plugin's
cost when no test uses it, reads of large inboxes, memory per stored message,
and the Redis store (ingestion against bare aiosmtpd and the memory store,
two server processes on one Redis, latency from one to the other).
Contenders alternate round by round; the table shows medians and ratios to
the reference measured in the same run, each target with pass or FAIL. The
default run takes a few minutes on two cores; ``--quick`` is a smoke check of
a minute or two.
"""

from __future__ import annotations

import argparse
import json
import os
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from . import (
    django_suite,
    flood,
    footprint,
    imap,
    ingest,
    latency,
    providers,
    reads,
    redis_store,
    streams,
    suite,
    tenancy,
    unused,
    waiters,
    webhooks,
)
from .machine import describe, machine
from .measure import Section
from .report import failures, table

__all__ = ["FULL", "QUICK", "SUMMARY", "Plan", "add_arguments", "run"]

SUMMARY = (
    "the project against its references and peers: ingestion, suites, latency, reads, memory, Redis"
)
RESULTS = Path(__file__).resolve().parent / "results" / "results.json"


@dataclass(frozen=True)
class Plan:
    """How much of each measurement a run makes."""

    ingest_rounds: int
    ingest_messages: int
    suite_rounds: int
    suite_tests: int
    latency_sends: int
    unused_rounds: int
    reads_rounds: int
    warm_reads: int
    memory_messages: int
    redis_rounds: int
    redis_messages: int
    redis_sends: int
    waiters: int
    wakes: int
    streams: int
    stream_rounds: int
    imap_rounds: int
    imap_messages: int


FULL = Plan(
    ingest_rounds=7,
    ingest_messages=4000,
    suite_rounds=9,
    suite_tests=200,
    latency_sends=300,
    unused_rounds=25,  # a 5% margin: at 11 rounds the median ratio moved by about 7%
    reads_rounds=5,
    warm_reads=10,
    memory_messages=20_000,
    redis_rounds=5,
    redis_messages=4000,
    redis_sends=200,
    waiters=10_000,
    wakes=200,
    streams=1000,
    stream_rounds=10,
    imap_rounds=9,
    imap_messages=1000,
)
QUICK = Plan(
    ingest_rounds=2,
    ingest_messages=2000,
    suite_rounds=2,
    suite_tests=200,
    latency_sends=60,
    unused_rounds=3,
    reads_rounds=2,
    warm_reads=5,
    memory_messages=4000,
    redis_rounds=2,
    redis_messages=2000,
    redis_sends=50,
    waiters=200,
    wakes=50,
    streams=100,
    stream_rounds=3,
    imap_rounds=3,
    imap_messages=1000,
)

SECTIONS: dict[str, Callable[[Plan], Section]] = {
    "ingest": lambda plan: ingest.measure(rounds=plan.ingest_rounds, messages=plan.ingest_messages),
    "suite": lambda plan: suite.measure(rounds=plan.suite_rounds, tests=plan.suite_tests),
    "django": lambda plan: django_suite.measure(rounds=plan.suite_rounds, tests=plan.suite_tests),
    "latency": lambda plan: latency.measure(sends=plan.latency_sends),
    "unused": lambda plan: unused.measure(rounds=plan.unused_rounds, tests=plan.suite_tests),
    "reads": lambda plan: reads.measure(rounds=plan.reads_rounds, warm_reads=plan.warm_reads),
    "memory": lambda plan: footprint.measure(messages=plan.memory_messages),
    "redis": lambda plan: redis_store.measure(
        rounds=plan.redis_rounds, messages=plan.redis_messages, sends=plan.redis_sends
    ),
    "waiters": lambda plan: waiters.measure(waiters=plan.waiters, wakes=plan.wakes),
    "streams": lambda plan: streams.measure(streams=plan.streams, rounds=plan.stream_rounds),
    "flood": lambda plan: flood.measure(rounds=plan.redis_rounds, wakes=plan.wakes // 4),
    "tenants": lambda plan: tenancy.measure(
        rounds=plan.ingest_rounds, messages=plan.ingest_messages, sends=plan.latency_sends
    ),
    "providers": lambda plan: providers.measure(
        rounds=plan.ingest_rounds, messages=plan.ingest_messages, sends=plan.latency_sends
    ),
    # A few per cent of rounds under a second each: three times the messages, twice the rounds.
    "webhooks": lambda plan: webhooks.measure(
        rounds=2 * plan.ingest_rounds - 1, messages=3 * plan.ingest_messages
    ),
    "imap": lambda plan: imap.measure(
        rounds=plan.imap_rounds, messages=plan.imap_messages, sends=plan.latency_sends
    ),
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add this benchmark's options."""
    parser.add_argument("--quick", action="store_true", help="a smoke check: fewer rounds")
    parser.add_argument(
        "--only", nargs="+", choices=list(SECTIONS), metavar="PART", help="run only these parts"
    )
    parser.add_argument("--output", type=Path, default=RESULTS, help="the JSON result file")


def run(args: argparse.Namespace) -> int:
    """Run the chosen parts, print the table, write the JSON; 0 unless a measurement went wrong."""
    plan = QUICK if args.quick else FULL
    info = machine()
    started = time.monotonic()
    print(describe(info), flush=True)
    sections: list[Section] = []
    for key in args.only or SECTIONS:
        print(flush=True)
        began = time.monotonic()
        try:
            section = SECTIONS[key](plan)
        except Exception:
            section = Section(key, errors=[f"{key} stopped: {traceback.format_exc(limit=5)}"])
        section.seconds = round(time.monotonic() - began, 1)
        print(f"  ({section.seconds:.0f} s)", flush=True)
        sections.append(section)
    elapsed = time.monotonic() - started
    info["load_average_at_end"] = [round(load, 2) for load in os.getloadavg()]

    rendered = table(sections)
    missed = failures(sections)
    errors = [error for section in sections for error in section.errors]
    print()
    kind = "quick" if args.quick else "full"
    print(f"## pytest-tempinbox against its references and peers ({kind} run)")
    print()
    print(describe(info))
    print()
    print(rendered)
    print()
    print("Targets missed:" if missed else "Every target met.")
    for line in missed:
        print(f"- {line}")
    for error in errors:
        print(f"error: {error}")
    print(f"\n{elapsed:.0f} s in all; written to {args.output}")

    result: dict[str, Any] = {
        "benchmark": "run",
        "quick": bool(args.quick),
        "plan": asdict(plan),
        "machine": info,
        "elapsed_seconds": round(elapsed, 1),
        "table": rendered,
        "targets_missed": missed,
        "errors": errors,
        "sections": [
            {
                "name": section.name,
                "seconds": section.seconds,
                "rows": [asdict(row) for row in section.rows],
                "data": section.data,
                "errors": section.errors,
            }
            for section in sections
        ],
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(result, indent=2, default=str) + "\n")
    return 1 if errors else 0
