"""Memory, in quick form: resident memory per stored message as a multiple of its raw size.

Runs ``python -m bench memory`` (see :mod:`bench.memory`) twice in a fresh
process of its own, so that nothing else in this run counts towards its RSS:
once reading inboxes back often (each message's parsed form and JSON are then
cached), once never reading. Also shows the last full run of the memory
benchmark, from ``bench/results/memory.json``, when there is one.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from .measure import Row, Section
from .memory import RESULTS

__all__ = ["NAME", "measure"]

NAME = "memory"
TARGET = 3.0
_ROOT = Path(__file__).resolve().parent.parent
_TIMEOUT = 900.0


def _run_memory(messages: int, read_every: int, output: Path, *options: str) -> dict[str, Any]:
    command = [
        sys.executable, "-m", "bench", "memory",
        "--messages", str(messages),
        "--sample-every", str(max(1, messages // 4)),
        "--read-every", str(read_every),
        "--output", str(output),
        *options,
    ]  # fmt: skip
    result = subprocess.run(
        command, cwd=_ROOT, capture_output=True, text=True, timeout=_TIMEOUT, check=False
    )
    if result.returncode != 0 or not output.exists():
        raise RuntimeError(f"bench memory exited {result.returncode}: {result.stdout[-400:]}")
    report: dict[str, Any] = json.loads(output.read_text())
    return report


def _row(label: str, per_message: dict[str, float], *, held: bool = True) -> Row:
    """The row of one run; ``held`` False: shown beside the target, not held to it."""
    multiple = per_message.get("multiple_of_raw_size")
    per_copy = per_message.get("rss_above_baseline_per_stored_copy")
    if multiple is None or per_copy is None:
        return Row(NAME, label, "n/a")
    if not held:
        return Row(
            NAME, label, f"{per_copy / 1024:.1f} KiB RSS/message", f"{multiple:.2f}x raw size"
        )
    return Row(
        NAME,
        label,
        f"{per_copy / 1024:.1f} KiB RSS/message",
        f"{multiple:.2f}x raw size",
        f"<= {TARGET:.1f}x raw size",
        multiple <= TARGET,
        f"{multiple:.2f}x the raw size (target {TARGET:.1f}x)",
    )


def measure(*, messages: int) -> Section:
    """Run the memory benchmark quickly, with and without reads; rows of RSS per raw byte."""
    print(f"{NAME}: python -m bench memory --messages {messages:,}, with reads and without")
    section = Section(NAME)
    last: dict[str, Any] | None = None
    if RESULTS.exists():  # read before anything could overwrite it
        last = json.loads(RESULTS.read_text())
    # label: (messages per thread between reads, options); the standalone's compression first.
    runs: dict[str, tuple[int, tuple[str, ...]]] = {
        "with reads (every 50 per thread)": (50, ()),
        "with reads, --no-compression (the plugin's server)": (50, ("--no-compression",)),
        "without reads": (messages + 1, ()),
    }
    with tempfile.TemporaryDirectory(prefix="tempinbox-bench-") as scratch:
        for number, (label, (read_every, options)) in enumerate(runs.items()):
            output = Path(scratch) / f"memory{number}.json"
            try:
                report = _run_memory(messages, read_every, output, *options)
            except (RuntimeError, subprocess.TimeoutExpired, ValueError) as exc:
                section.errors.append(f"{NAME} {label}: {exc}")
                continue
            per = report.get("per_message", {})
            multiple = per.get("multiple_of_raw_size")
            print(f"  memory {label}: {multiple}x raw size", flush=True)
            section.data[label] = {
                "messages": messages,
                "read_every": read_every,
                "per_message": per,
                "inbox_reads": report.get("inbox_reads"),
                "final_stats": report.get("final_stats"),
            }
            held = "--no-compression" not in options  # the standalone's setting is the target's
            section.rows.append(_row(f"{messages:,} msgs, {label}", per, held=held))
    if last is not None:
        per = last.get("per_message", {})
        sent = int(last.get("messages_sent", 0))
        section.data["last full run"] = {"messages_sent": sent, "per_message": per}
        section.rows.append(_row(f"last full `bench memory` run (memory.json), {sent:,} msgs", per))
    return section
