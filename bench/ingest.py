"""SMTP ingestion: messages per second from parallel clients, against references and peers.

Each round starts each server afresh (not timed), then times ``clients``
client processes, each sending its share of ``messages`` 1 KiB messages over one
persistent connection, from their start to the last one's exit. Afterwards the
messages that arrived are counted (for our server, read back through the API):
a count that is off is an error. The references are bare aiosmtpd with a no-op
handler and Postfix's smtp-sink (C, another process: the physical limit). The
clients are Postfix's smtp-source when it is installed (C, so the two cores go
to the server), else :mod:`bench.sender`. What transcripts cost (our server
against itself with ``--no-transcripts``) is judged on the instructions a
message costs, where Valgrind is installed (:mod:`bench.instructions`): the
rounds spread more than the 5% to tell.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from . import instructions
from .machine import SMTP_SOURCE
from .measure import Row, Section, alternate, median, ratio
from .servers import SINKS, Sink, SinkFactory

__all__ = ["NAME", "measure", "run_clients", "send_all"]

NAME = "SMTP ingestion"
REFERENCE = "bare aiosmtpd"
OURS = "pytest-tempinbox"
SINK = "smtp-sink"
TARGET_BARE = 1.5
TARGET_SINK = 0.3
NO_TRANSCRIPTS = "pytest-tempinbox --no-transcripts"
TARGET_TRANSCRIPTS = 0.05  # at most this share of ingestion for keeping transcripts (issue 32)
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
    return run_clients(commands, errors, label)[0]


def run_clients(
    commands: list[list[str]], errors: list[str], label: str
) -> tuple[float, list[str]]:
    """Run client processes at once to completion: the seconds to the last exit, their outputs.

    A client that fails or outlasts the timeout is an error of ``label``.
    """
    started = time.perf_counter()
    processes = [
        subprocess.Popen(
            command, cwd=_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for command in commands
    ]
    outputs = []
    for process in processes:
        try:
            stdout, stderr = process.communicate(timeout=_CLIENT_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            stdout, stderr = process.communicate()
            errors.append(f"{label}: a client did not finish within {_CLIENT_TIMEOUT:g} s")
        if process.returncode:
            errors.append(f"{label}: client exited {process.returncode}: {stderr.strip()[-300:]}")
        outputs.append(stdout)
    return time.perf_counter() - started, outputs


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
    """Run the ingestion comparison; return msgs/s, ratios to bare aiosmtpd and to smtp-sink."""
    client = "smtp-source" if os.access(SMTP_SOURCE, os.X_OK) else "smtplib (bench.sender)"
    print(
        f"{NAME}: {messages:,} messages of {size} B, {clients} {client} processes, {rounds} rounds"
    )
    section = Section(NAME)
    if SINK not in SINKS:
        section.errors.append(f"{NAME}: {SINK} is not installed (Debian package postfix)")
    contenders = {
        label: _round(factory, label, clients, messages, size, section.errors)
        for label, factory in SINKS.items()
    }
    samples = alternate(contenders, rounds, label="ingest", unit=" msg/s")
    medians = {label: median(values) for label, values in samples.items()}
    reference = medians[REFERENCE]
    sink = medians.get(SINK, math.nan)
    peers = {
        label: value
        for label, value in medians.items()
        if label not in (REFERENCE, OURS, SINK, NO_TRANSCRIPTS)
    }
    counted = instructions.compare(NAME, [], ["--no-transcripts"], section.errors)
    for label, value in medians.items():
        row_ratio = ratio(value, reference)
        shown = f"{row_ratio:.2f}x bare"
        target, passed, shortfall = "", None, ""
        if label == OURS:
            best_peer = max(peers, key=lambda name: peers[name])
            to_sink = ratio(value, sink)
            shown += f", {to_sink:.2f}x {SINK}, {ratio(value, peers[best_peer]):.2f}x {best_peer}"
            passed = row_ratio >= TARGET_BARE and to_sink >= TARGET_SINK
            target = f">= {TARGET_BARE:.2f}x bare, >= {TARGET_SINK:.2f}x {SINK}"
            shortfall = (
                f"{row_ratio:.2f}x bare aiosmtpd (target {TARGET_BARE:.2f}x),"
                f" {to_sink:.2f}x {SINK} (target {TARGET_SINK:.2f}x)"
            )
        elif label == NO_TRANSCRIPTS:
            cost = 1 - ratio(medians[OURS], value)
            shown += f"; transcripts cost {cost:.1%} of it"
            if counted is None:  # else judged on the instructions, below
                target = f"transcripts <= {TARGET_TRANSCRIPTS:.0%}"
                passed = cost <= TARGET_TRANSCRIPTS
                shortfall = (
                    f"transcripts cost {cost:.1%} of ingestion (target {TARGET_TRANSCRIPTS:.0%})"
                )
        elif label != REFERENCE and label != SINK:
            shown += f", {ratio(value, sink):.2f}x {SINK}"
        section.rows.append(
            Row(NAME, label, f"{value:,.0f} msg/s", shown, target, passed, shortfall)
        )
    if counted is not None:  # noise does not move them; the rounds spread more than 5%
        kept, none = counted
        cost = kept / none - 1
        judged = f"transcripts cost {cost:.1%} of the instructions per message"
        section.rows.append(
            Row(
                NAME,
                f"{OURS}, instructions",
                f"{kept:,.0f} against {none:,.0f} per message",
                judged,
                f"transcripts <= {TARGET_TRANSCRIPTS:.0%}",
                cost <= TARGET_TRANSCRIPTS,
                f"{judged} (target {TARGET_TRANSCRIPTS:.0%})",
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
        "ratio_to_smtp_sink": {label: ratio(value, sink) for label, value in medians.items()},
        "instructions_per_message": counted and {OURS: counted[0], NO_TRANSCRIPTS: counted[1]},
    }
    return section
