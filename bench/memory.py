"""Memory under sustained mail: whether resident memory levels off once the caps are reached.

Pushes ``--messages`` messages (about 2 KiB each, every tenth to several
inboxes) from ``--threads`` SMTP sessions into an in-process server with the
default limits, reading inboxes back through the API as it goes so that the
parse caches fill. As the standalone command, the server keeps read messages
compressed (``--no-compression``: as received, the plugin's way). Every
``--sample-every`` messages it records the process's resident memory (VmRSS)
and the server's ``stats`` from ``GET /api/info``; at the end it prints a
Markdown table and says whether memory grew by more than 3% over the second
half. The client threads share the process, so RSS includes
them: that is a few MiB, and constant.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import smtplib
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import requests

from pytest_tempinbox import __version__
from pytest_tempinbox.server.inbox_server import InboxServer

SUMMARY = "resident memory while 100,000 messages flow through the default caps"
RESULTS = Path(__file__).resolve().parent / "results" / "memory.json"
GROWTH_THRESHOLD = 0.03
CLIENT_NAME = "client.test"
MiB = 1024 * 1024

_PARAGRAPH = (
    "Thanks for signing up. Confirm your address within the next 24 hours by"
    " following the link below; if you did not ask for this, ignore this message."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add this benchmark's options."""
    parser.add_argument("--messages", type=int, default=100_000, help="SMTP transactions")
    parser.add_argument("--threads", type=int, default=4, help="parallel SMTP sessions")
    parser.add_argument("--inboxes", type=int, default=50)
    parser.add_argument("--sample-every", type=int, default=5_000, metavar="N")
    parser.add_argument(
        "--read-every", type=int, default=500, metavar="N", help="messages per thread between reads"
    )
    parser.add_argument("--seed", type=int, default=20261122)
    parser.add_argument(
        "--no-compression",
        action="store_true",
        help="keep read messages as received, as the plugin's server does",
    )
    parser.add_argument("--output", type=Path, default=RESULTS, help="the JSON result file")


@dataclass
class Sample:
    """One measurement, taken when the sent count crossed a multiple of ``--sample-every``."""

    messages_sent: int
    seconds: float
    rss_bytes: int
    # Blocks the interpreter has allocated (sys.getallocatedblocks): live objects.
    # Flat while RSS rises means fragmentation, not a leak.
    python_blocks: int
    stored_messages: int | None
    stored_bytes: int | None
    evictions: int | None
    inboxes: int | None


def rss_bytes() -> int:
    """Return this process's resident set size (VmRSS), in bytes."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def make_message(rng: random.Random, number: int, recipients: Sequence[str]) -> bytes:
    """Build a ~2 KiB text + HTML message with a link and a code, unique per ``number``."""
    # Fixed widths keep every message the same size: a size that creeps up (5 then 6
    # digits) leaves freed blocks too small to reuse, which reads as growth.
    token = f"{rng.getrandbits(64):016x}"
    code = f"{rng.randrange(10**6):06d}"
    link = f"https://app.example.test/confirm/{token}?n={number:07d}"
    text = f"Hello,\r\n\r\n{_PARAGRAPH}\r\n\r\n{link}\r\n\r\nYour code is {code}.\r\n"
    html = (
        f"<html><body><p>Hello,</p><p>{_PARAGRAPH}</p>"
        f'<p><a href="{link}">Confirm</a></p><p>Your code is <b>{code}</b>.</p></body></html>'
    )
    boundary = f"=_{token}"
    head = (
        "From: App <app@example.test>\r\n"
        f"To: {', '.join(recipients)}\r\n"
        f"Subject: Confirm your address ({number:07d})\r\n"
        f"Message-ID: <{number:07d}.{token}@example.test>\r\n"
        "Date: Sun, 22 Nov 2026 02:18:31 +0000\r\n"
        "MIME-Version: 1.0\r\n"
        f'Content-Type: multipart/alternative; boundary="{boundary}"\r\n\r\n'
    )
    body = (
        f"--{boundary}\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n{text}\r\n"
        f"--{boundary}\r\nContent-Type: text/html; charset=utf-8\r\n\r\n{html}\r\n"
        f"--{boundary}--\r\n"
    )
    # A footer in the text part brings the message to about 2 KiB, in lines of 72.
    missing = max(0, 2048 - len(head) - len(body))
    footer = "".join(
        ("Sent by Example App, 1 Example Street. " * 2)[:70] + "\r\n" for _ in range(missing // 72)
    )
    return (head + body.replace("\r\n\r\n--", "\r\n" + footer + "\r\n--", 1)).encode()


class Run:
    """The shared state of one run: the server, the count of messages sent, the samples."""

    def __init__(self, args: argparse.Namespace, server: InboxServer, inboxes: list[str]) -> None:
        self.args = args
        self.server = server
        self.inboxes = inboxes
        self.lock = threading.Lock()
        self.sent = 0
        self.copies = 0
        self.raw_bytes = 0
        self.reads = 0
        self.samples: list[Sample] = []
        self.started = time.monotonic()
        self.errors: list[str] = []

    def stats(self, http: requests.Session) -> dict[str, int]:
        """Return the server's ``stats`` from ``GET /api/info`` (empty when it has none)."""
        with http.get(self.server.api_url + "/info", timeout=60) as response:
            stats: dict[str, int] = response.json().get("stats", {})
        return stats

    def sample(self, http: requests.Session, messages_sent: int) -> None:
        """Record RSS and the server's stats now."""
        stats = self.stats(http)
        sample = Sample(
            messages_sent=messages_sent,
            seconds=round(time.monotonic() - self.started, 2),
            rss_bytes=rss_bytes(),
            python_blocks=sys.getallocatedblocks(),
            stored_messages=stats.get("messages"),
            stored_bytes=stats.get("stored_bytes"),
            evictions=stats.get("evictions"),
            inboxes=stats.get("inboxes"),
        )
        with self.lock:
            self.samples.append(sample)
        print(
            f"  {messages_sent:>7,} sent  {sample.rss_bytes / MiB:7.1f} MiB RSS"
            f"  {sample.seconds:6.1f} s",
            flush=True,
        )

    def sender(self, index: int, share: int) -> None:
        """One SMTP session sending ``share`` messages, reading an inbox back now and then."""
        try:
            self._send(index, share)
        except Exception as exc:
            self.errors.append(f"sender {index} stopped: {exc!r}")

    def _send(self, index: int, share: int) -> None:
        rng = random.Random(self.args.seed + index)
        with (
            requests.Session() as http,
            smtplib.SMTP(
                self.server.smtp_host, self.server.smtp_port, local_hostname=CLIENT_NAME
            ) as client,
        ):
            http.trust_env = False
            client.ehlo()
            for done in range(1, share + 1):
                count = rng.choice((2, 3)) if rng.random() < 0.1 else 1
                recipients = rng.sample(self.inboxes, count)
                with self.lock:
                    self.sent += 1
                    number = self.sent
                raw = make_message(rng, number, recipients)
                refused = client.sendmail("app@example.test", recipients, raw)
                if refused:
                    self.errors.append(f"message {number}: refused {refused}")
                with self.lock:
                    self.copies += count
                    self.raw_bytes += len(raw)
                if number % self.args.sample_every == 0:
                    self.sample(http, number)
                if done % self.args.read_every == 0:
                    self.read_back(http, rng.choice(self.inboxes))

    def read_back(self, http: requests.Session, inbox: str) -> None:
        """Read a whole inbox through the API: the server parses and caches each message."""
        with http.get(f"{self.server.api_url}/messages/{inbox}", timeout=120) as response:
            if response.status_code != 200:
                self.errors.append(f"GET {inbox}: {response.status_code}")
            len(response.content)
        with self.lock:
            self.reads += 1


def run(args: argparse.Namespace) -> int:
    """Run the benchmark, print the table and write the JSON result; 0 unless something failed."""
    print(f"memory: {args.messages:,} messages, {args.threads} threads, {args.inboxes} inboxes")
    compress = not args.no_compression
    with InboxServer(compress_read_messages=compress) as server, requests.Session() as http:
        http.trust_env = False
        inboxes = []
        for _ in range(args.inboxes):
            with http.post(server.api_url + "/generate", timeout=60) as response:
                inboxes.append(response.json()["email"])
        with http.get(server.api_url + "/info", timeout=60) as response:
            limits = response.json().get("limits", {})
        baseline = rss_bytes()
        state = Run(args, server, inboxes)
        shares = [args.messages // args.threads] * args.threads
        shares[0] += args.messages - sum(shares)
        threads = [
            threading.Thread(target=state.sender, args=(index, share), name=f"sender-{index}")
            for index, share in enumerate(shares)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        elapsed = time.monotonic() - state.started
        state.sample(http, state.sent)  # the final state, whatever the sampling step
        final_stats = state.stats(http)

    # The last sample taken at each count: the final one may repeat the last step's.
    by_count = {sample.messages_sent: sample for sample in state.samples}
    samples = [by_count[count] for count in sorted(by_count)]
    result = summarize(args, samples, baseline, state, elapsed, limits, final_stats)
    print()
    print(table(samples, baseline))
    print()
    for line in result["verdict"]:
        print(line)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(result, indent=2) + "\n")
    print(f"\nwritten to {args.output}")
    for error in state.errors[:20]:
        print("error:", error)
    return 1 if state.errors else 0


def summarize(
    args: argparse.Namespace,
    samples: list[Sample],
    baseline: int,
    state: Run,
    elapsed: float,
    limits: dict[str, Any],
    final_stats: dict[str, int],
) -> dict[str, Any]:
    """Work out the second-half growth and the memory per stored message."""
    final = samples[-1]
    halfway = min(samples, key=lambda sample: abs(sample.messages_sent - args.messages / 2))
    growth = (final.rss_bytes - halfway.rss_bytes) / halfway.rss_bytes
    second_half = [sample for sample in samples if sample.messages_sent >= halfway.messages_sent]
    peak = max(sample.rss_bytes for sample in second_half)
    slope = _slope(second_half)
    average_raw = state.raw_bytes / max(state.sent, 1)
    verdict = [
        f"RSS over the second half ({halfway.messages_sent:,} -> {final.messages_sent:,}"
        f" messages): {halfway.rss_bytes / MiB:.1f} -> {final.rss_bytes / MiB:.1f} MiB"
        f" ({growth:+.1%}); grew by more than {GROWTH_THRESHOLD:.0%}:"
        f" {'YES' if growth > GROWTH_THRESHOLD else 'no'}",
        f"second half: peak {peak / MiB:.1f} MiB"
        f" ({(peak - halfway.rss_bytes) / halfway.rss_bytes:+.1%} over the halfway sample),"
        f" least-squares trend {slope * 10_000 / MiB:+.2f} MiB per 10,000 messages;"
        f" Python blocks {halfway.python_blocks:,} -> {final.python_blocks:,}"
        f" ({(final.python_blocks - halfway.python_blocks) / halfway.python_blocks:+.1%})",
        f"{state.sent:,} messages ({state.copies:,} stored copies) in {elapsed:.1f} s"
        f" ({state.sent / elapsed:,.0f} messages/s), {state.reads} inbox reads",
    ]
    # Until every message stored at the cap has been evicted once, the allocator is
    # still settling; growth after that point is what a leak would look like.
    at_cap = max((sample.stored_messages or 0) for sample in samples)
    turned = [sample for sample in samples if (sample.evictions or 0) >= at_cap > 0]
    after_turnover = None
    if len(turned) >= 2:
        first, last = turned[0], turned[-1]
        after_turnover = (last.rss_bytes - first.rss_bytes) / first.rss_bytes
        verdict.append(
            f"after one full turnover of the store ({first.messages_sent:,} -> "
            f"{last.messages_sent:,} messages): {first.rss_bytes / MiB:.1f} ->"
            f" {last.rss_bytes / MiB:.1f} MiB ({after_turnover:+.1%})"
        )
    per_message: dict[str, float] = {}
    stored = final.stored_messages
    if stored:
        per_copy = (final.rss_bytes - baseline) / stored
        per_message = {
            "average_raw_bytes": round(average_raw, 1),
            "rss_above_baseline_per_stored_copy": round(per_copy, 1),
            "multiple_of_raw_size": round(per_copy / average_raw, 2),
        }
        verdict.append(
            f"resident memory per stored message: {per_copy / 1024:.1f} KiB,"
            f" {per_copy / average_raw:.1f}x its raw size ({average_raw:,.0f} bytes on average;"
            f" RSS above the {baseline / MiB:.1f} MiB baseline / {stored:,} stored copies)"
        )
    return {
        "benchmark": "memory",
        "version": __version__,
        "python": platform.python_version(),
        # Paths are machine facts, not settings: the output file goes by its name only.
        "config": {
            key: value.name if isinstance(value, Path) else str(value)
            for key, value in vars(args).items()
            if key != "run"
        },
        "server_limits": limits,
        "baseline_rss_bytes": baseline,
        "elapsed_seconds": round(elapsed, 1),
        "messages_sent": state.sent,
        "stored_copies_sent": state.copies,
        "inbox_reads": state.reads,
        "final_stats": final_stats,
        "second_half_growth": round(growth, 4),
        "second_half_peak_rss_bytes": peak,
        "second_half_trend_bytes_per_message": round(slope, 1),
        "growth_after_first_turnover": None if after_turnover is None else round(after_turnover, 4),
        "grew_more_than_threshold": growth > GROWTH_THRESHOLD,
        "per_message": per_message,
        "verdict": verdict,
        "samples": [asdict(sample) for sample in samples],
        "errors": state.errors,
    }


def _slope(samples: list[Sample]) -> float:
    """Least-squares slope of RSS against messages sent, in bytes per message."""
    if len(samples) < 2:
        return 0.0
    xs = [float(sample.messages_sent) for sample in samples]
    ys = [float(sample.rss_bytes) for sample in samples]
    mean_x, mean_y = sum(xs) / len(xs), sum(ys) / len(ys)
    spread = sum((x - mean_x) ** 2 for x in xs)
    if not spread:
        return 0.0
    return sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / spread


def table(samples: list[Sample], baseline: int) -> str:
    """Render the samples as a Markdown table."""

    def number(value: int | None, scale: float = 1.0, digits: int = 0) -> str:
        return "n/a" if value is None else f"{value / scale:,.{digits}f}"

    rows = [
        "| messages sent | RSS MiB | Python blocks | stored messages | stored MiB | evictions |",
        "|---:|---:|---:|---:|---:|---:|",
        f"| 0 | {baseline / MiB:.1f} | | 0 | 0.0 | 0 |",
    ]
    for sample in samples:
        rows.append(
            f"| {sample.messages_sent:,} | {sample.rss_bytes / MiB:.1f} | {sample.python_blocks:,}"
            f" | {number(sample.stored_messages)} | {number(sample.stored_bytes, MiB, 1)}"
            f" | {number(sample.evictions)} |"
        )
    return "\n".join(rows)
