"""SMTP ingestion: messages per second from parallel clients, against the ceiling and peers.

Each round starts each server afresh (not timed), then times ``clients``
client processes, each sending its share of ``messages`` 1 KiB messages over one
persistent connection, from their start to the last one's exit. Afterwards the
messages that arrived are counted (for our server, read back through the API):
a count that is off is an error. The clients are Postfix's smtp-source when it
is installed (C, so the two cores go to the server), else :mod:`bench.sender`.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from .machine import SMTP_SOURCE
from .measure import Row, Section, alternate, median, ratio
from .servers import SINKS, Sink, SinkFactory

__all__ = ["NAME", "measure", "send_all"]

NAME = "SMTP ingestion"
REFERENCE = "bare aiosmtpd"
OURS = "pytest-tempinbox"
TARGET_RATIO = 0.9
_CLIENT_TIMEOUT = 300.0
_ROOT = Path(__file__).resolve().parent.parent


def _client_command(sink: Sink, recipient: str, count: int, size: int) -> list[str]:
    if os.access(SMTP_SOURCE, os.X_OK):
        return [
            SMTP_SOURCE,
            "-d",  # one connection for all the messages of this client
            "-s", "1",
            "-m", str(count),
            "-l", str(size),
            "-M", "client.test",
            "-f", "app@example.test",
            "-t", recipient,
            f"{sink.host}:{sink.port}",
        ]  # fmt: skip
    port = str(sink.port)
    return [sys.executable, "-m", "bench.sender", sink.host, port, recipient, str(count), str(size)]


def send_all(sink: Sink, messages: int, size: int, errors: list[str], label: str) -> float:
    """Run the clients to completion; return the seconds from their start to the last exit."""
    clients = len(sink.recipients)
    shares = [messages // clients] * clients
    shares[0] += messages - sum(shares)
    commands = [
        _client_command(sink, recipient, share, size)
        for recipient, share in zip(sink.recipients, shares, strict=True)
    ]
    started = time.perf_counter()
    processes = [
        subprocess.Popen(
            command, cwd=_ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
        )
        for command in commands
    ]
    for process in processes:
        try:
            _, stderr = process.communicate(timeout=_CLIENT_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            _, stderr = process.communicate()
            errors.append(f"{label}: a client did not finish within {_CLIENT_TIMEOUT:g} s")
        if process.returncode:
            errors.append(f"{label}: client exited {process.returncode}: {stderr.strip()[-300:]}")
    return time.perf_counter() - started


def _round(
    factory: SinkFactory, label: str, clients: int, messages: int, size: int, errors: list[str]
) -> Callable[[], float]:
    def one() -> float:
        with factory(clients, messages) as sink:
            seconds = send_all(sink, messages, size, errors, label)
            received = sink.received()
        if received != messages:
            errors.append(f"{label}: {received:,} of {messages:,} messages arrived")
        return messages / seconds

    return one


def measure(*, rounds: int, messages: int, clients: int = 4, size: int = 1024) -> Section:
    """Run the ingestion comparison and return its rows (msgs/s, ratio to bare aiosmtpd)."""
    client = "smtp-source" if os.access(SMTP_SOURCE, os.X_OK) else "smtplib (bench.sender)"
    print(
        f"{NAME}: {messages:,} messages of {size} B, {clients} {client} processes, {rounds} rounds"
    )
    section = Section(NAME)
    contenders = {
        label: _round(factory, label, clients, messages, size, section.errors)
        for label, factory in SINKS.items()
    }
    samples = alternate(contenders, rounds, label="ingest", unit=" msg/s")
    medians = {label: median(values) for label, values in samples.items()}
    reference = medians[REFERENCE]
    peers = {label: value for label, value in medians.items() if label not in (REFERENCE, OURS)}
    for label, value in medians.items():
        row_ratio = ratio(value, reference)
        target, passed, shortfall = "", None, ""
        if label == OURS:
            best_peer = max(peers, key=lambda name: peers[name])
            ahead = ratio(value, peers[best_peer])
            passed = row_ratio >= TARGET_RATIO and ahead > 1.0
            target = f">= {TARGET_RATIO:.2f}x bare, ahead of every peer"
            shortfall = (
                f"{row_ratio:.2f}x bare aiosmtpd (target {TARGET_RATIO:.2f}x);"
                f" {ahead:.2f}x {best_peer}, the fastest peer"
            )
        section.rows.append(
            Row(
                NAME,
                label,
                f"{value:,.0f} msg/s",
                f"{row_ratio:.2f}x bare",
                target,
                passed,
                shortfall,
            )
        )
    section.data = {
        "client": client,
        "messages": messages,
        "message_bytes": size,
        "clients": clients,
        "rounds": rounds,
        "samples_msgs_per_s": samples,
        "median_msgs_per_s": medians,
        "ratio_to_bare_aiosmtpd": {
            label: ratio(value, reference) for label, value in medians.items()
        },
    }
    return section
