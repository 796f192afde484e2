"""The Redis store: ingestion against the memory store, and delivery latency across two servers.

Runs a private redis-server for the part (see :mod:`bench.redis_servers`) and
stops it after; when redis-server or the redis package is missing, the part
says why and is skipped. Two measurements:

Ingestion, as :mod:`bench.ingest` measures it (the same clients: smtp-source
when installed, ``clients`` processes, 1 KiB messages; every message counted
afterwards through the API, a count that is off is an error), in alternating
rounds, each server started afresh per round and Redis emptied after it: bare
aiosmtpd with a no-op handler (the ``ingest`` part's reference, a figure that
does not move when the memory store gets faster), the memory store (an
in-process server, the ``ingest`` part's own), the Redis store (an in-process
server on the Redis), and two standalone server processes on the one Redis
with the clients split between them. Targets: the Redis store at least 2.0x
bare aiosmtpd and at least 0.5x the memory store; two processes at least 1.5x
one, where the machine has the cores for it (four or more: the clients and
Redis need CPU too), else the ratio is shown and that target is not
applicable.

Latency across servers, as :mod:`bench.latency` measures its ``GET ?wait=10``
row: two standalone processes on the one Redis; for each send, an inbox is
generated on B, a thread waits on it with ``GET /api/messages/{email}?wait=10``
on B, and after a pause the main thread sends one message with smtplib to A.
The latency is from ``sendmail`` returning to the waiter having the answer.
A few untimed deliveries first start each server's HTTP side.
"""

from __future__ import annotations

import contextlib
import math
import os
import smtplib
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager

import requests

from pytest_tempinbox.limits import DEFAULT_MAX_MESSAGES_PER_INBOX
from pytest_tempinbox.server.inbox_server import InboxServer

from .ingest import REFERENCE, send_all
from .machine import SMTP_SOURCE
from .measure import Row, Section, alternate, median, percentile, ratio
from .redis_servers import Standalone, flush, missing, redis_server, standalone
from .servers import SINKS, Sink, SinkFactory, tempinbox

__all__ = ["NAME", "measure"]

NAME = "Redis store"
INGEST = "Redis store ingestion"
LATENCY = "Redis delivery latency"
BARE = REFERENCE
MEMORY = "memory store (in-process)"
REDIS = "Redis store (in-process)"
TWO = "Redis store, 2 processes"
TARGET_BARE = 2.0
TARGET_REDIS = 0.5
TARGET_TWO = 1.5
CORES_FOR_TWO = 4
TARGET_MEDIAN = 0.002
_PENDING = 0.02
_WAIT = 10.0
_WARMUP_SENDS = 3

# One contender: given the clients and the messages, a block that yields the
# servers to send to (each with its share of the recipients) and a count of
# what arrived.
Sinks = Callable[[int, int], AbstractContextManager[tuple[list[Sink], Callable[[], int]]]]


def _generate(http: requests.Session, api_url: str, count: int) -> list[str]:
    addresses = []
    for _ in range(count):
        with http.post(api_url + "/generate", timeout=30) as response:
            response.raise_for_status()
            addresses.append(response.json()["email"])
    return addresses


def _counter(http: requests.Session, api_url: str, addresses: list[str]) -> Callable[[], int]:
    def received() -> int:
        total = 0
        for address in addresses:
            with http.get(f"{api_url}/messages/{address}", timeout=300) as response:
                response.raise_for_status()
                total += len(response.json())
        return total

    return received


def _per_inbox(clients: int, messages: int) -> int:
    return max(DEFAULT_MAX_MESSAGES_PER_INBOX, math.ceil(messages / clients))


def _one(factory: SinkFactory) -> Sinks:
    """One of the ``ingest`` part's servers as a contender here: one server, its own count."""

    @contextlib.contextmanager
    def sinks(clients: int, messages: int) -> Iterator[tuple[list[Sink], Callable[[], int]]]:
        with factory(clients, messages) as sink:
            yield [sink], sink.received

    return sinks


def _in_process(url: str) -> Sinks:
    @contextlib.contextmanager
    def sinks(clients: int, messages: int) -> Iterator[tuple[list[Sink], Callable[[], int]]]:
        per_inbox = _per_inbox(clients, messages)
        try:
            with (
                InboxServer(store=url, max_messages_per_inbox=per_inbox) as server,
                requests.Session() as http,
            ):
                http.trust_env = False
                addresses = _generate(http, server.api_url, clients)
                received = _counter(http, server.api_url, addresses)
                yield [Sink(server.smtp_host, server.smtp_port, addresses, received)], received
        finally:
            flush(url)

    return sinks


def _two_processes(url: str) -> Sinks:
    @contextlib.contextmanager
    def sinks(clients: int, messages: int) -> Iterator[tuple[list[Sink], Callable[[], int]]]:
        per_inbox = _per_inbox(clients, messages)
        try:
            with (
                standalone(url, per_inbox) as first,
                standalone(url, per_inbox) as second,
                requests.Session() as http,
            ):
                http.trust_env = False
                # Generated on the first, counted on the first: the second serves them too.
                addresses = _generate(http, first.api_url, clients)
                received = _counter(http, first.api_url, addresses)
                targets = [
                    Sink(server.smtp_host, server.smtp_port, addresses[index::2], received)
                    for index, server in enumerate((first, second))
                ]
                yield targets, received
        finally:
            flush(url)

    return sinks


def _round(
    factory: Sinks, label: str, clients: int, messages: int, size: int, errors: list[str]
) -> Callable[[], float]:
    def one() -> float:
        with factory(clients, messages) as (targets, received):
            shares = [messages * len(sink.recipients) // clients for sink in targets]
            shares[0] += messages - sum(shares)
            threads = [
                threading.Thread(target=send_all, args=(sink, share, size, errors, label))
                for sink, share in zip(targets, shares, strict=True)
            ]
            started = time.perf_counter()
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            seconds = time.perf_counter() - started
            count = received()
        if count != messages:
            errors.append(f"{label}: {count:,} of {messages:,} messages arrived")
        return messages / seconds

    return one


def _ingestion(
    section: Section, url: str, rounds: int, messages: int, clients: int, size: int
) -> None:
    client = "smtp-source" if os.access(SMTP_SOURCE, os.X_OK) else "smtplib (bench.sender)"
    print(
        f"{INGEST}: {messages:,} messages of {size} B, {clients} {client} processes,"
        f" {rounds} rounds"
    )
    factories: dict[str, Sinks] = {
        BARE: _one(SINKS[REFERENCE]),
        MEMORY: _one(tempinbox),
        REDIS: _in_process(url),
        TWO: _two_processes(url),
    }
    contenders = {
        label: _round(factory, label, clients, messages, size, section.errors)
        for label, factory in factories.items()
    }
    samples = alternate(contenders, rounds, label="redis ingest", unit=" msg/s")
    medians = {label: median(values) for label, values in samples.items()}
    bare, memory, redis, two = medians[BARE], medians[MEMORY], medians[REDIS], medians[TWO]
    redis_ratio, two_ratio = ratio(redis, memory), ratio(two, redis)
    to_bare = ratio(redis, bare)
    cores = os.cpu_count() or 1
    section.rows.append(Row(INGEST, BARE, f"{bare:,.0f} msg/s", "1.00x bare"))
    section.rows.append(
        Row(INGEST, MEMORY, f"{memory:,.0f} msg/s", f"{ratio(memory, bare):.2f}x bare")
    )
    section.rows.append(
        Row(
            INGEST,
            REDIS,
            f"{redis:,.0f} msg/s",
            f"{to_bare:.2f}x bare, {redis_ratio:.2f}x memory",
            f">= {TARGET_BARE:.1f}x bare, >= {TARGET_REDIS:.1f}x memory",
            to_bare >= TARGET_BARE and redis_ratio >= TARGET_REDIS,
            f"{to_bare:.2f}x bare aiosmtpd (target {TARGET_BARE:.1f}x),"
            f" {redis_ratio:.2f}x the memory store (target {TARGET_REDIS:.1f}x)",
        )
    )
    enough = cores >= CORES_FOR_TWO
    target = f">= {TARGET_TWO:.1f}x one Redis process"
    if not enough:
        target += f" (n/a on {cores} cores: needs {CORES_FOR_TWO}, clients and Redis share them)"
    section.rows.append(
        Row(
            INGEST,
            TWO,
            f"{two:,.0f} msg/s",
            f"{two_ratio:.2f}x one process, {ratio(two, memory):.2f}x memory",
            target,
            two_ratio >= TARGET_TWO if enough else None,
            f"{two_ratio:.2f}x one Redis process (target {TARGET_TWO:.1f}x)",
        )
    )
    section.data["ingestion"] = {
        "client": client,
        "messages": messages,
        "message_bytes": size,
        "clients": clients,
        "rounds": rounds,
        "cores": cores,
        "samples_msgs_per_s": samples,
        "median_msgs_per_s": medians,
        "redis_to_bare_aiosmtpd": to_bare,
        "redis_to_memory": redis_ratio,
        "two_processes_to_one": two_ratio,
    }


def _message(address: str, subject: str) -> bytes:
    return (
        f"From: app@example.test\r\nTo: {address}\r\nSubject: {subject}\r\n\r\nHello.\r\n"
    ).encode()


def _deliver(
    sender: Standalone, waiter: Standalone, smtp: smtplib.SMTP, http: requests.Session,
    poll: requests.Session, subject: str, errors: list[str],
) -> float:  # fmt: skip
    """Wait on ``waiter`` for one message sent to ``sender``; return the latency in seconds."""
    (address,) = _generate(http, waiter.api_url, 1)
    arrived: list[float] = []

    def wait() -> None:
        try:
            url = f"{waiter.api_url}/messages/{address}"
            with poll.get(url, params={"wait": str(_WAIT)}, timeout=_WAIT + 10) as response:
                messages = response.json()
            arrived.append(time.perf_counter())
            if [message["subject"] for message in messages] != [subject]:
                errors.append(f"{LATENCY}: {subject!r} not answered: {messages!r:.200}")
        except Exception as exc:
            errors.append(f"{LATENCY}: the wait failed: {exc!r}")

    thread = threading.Thread(target=wait, name="redis-latency-waiter")
    thread.start()
    time.sleep(_PENDING)
    smtp.sendmail("app@example.test", [address], _message(address, subject))
    sent = time.perf_counter()
    thread.join(_WAIT + 15)
    with http.delete(f"{waiter.api_url}/delete/{address}", timeout=30) as response:
        response.raise_for_status()
    if not arrived:
        errors.append(f"{LATENCY}: {subject!r} never arrived")
        return float("nan")
    return arrived[0] - sent


def _latency(section: Section, url: str, sends: int) -> None:
    label = "GET ?wait=10 on B, sendmail to A"
    print(f"{LATENCY}: {sends} sends, two server processes on one Redis")
    samples: list[float] = []
    with (
        standalone(url, DEFAULT_MAX_MESSAGES_PER_INBOX) as first,
        standalone(url, DEFAULT_MAX_MESSAGES_PER_INBOX) as second,
        smtplib.SMTP(first.smtp_host, first.smtp_port, local_hostname="localhost") as smtp,
        requests.Session() as http,
        requests.Session() as poll,
    ):
        http.trust_env = poll.trust_env = False
        for number in range(_WARMUP_SENDS):
            _deliver(first, second, smtp, http, poll, f"warm-up {number}", section.errors)
        for number in range(sends):
            subject = f"latency {number + 1}"
            samples.append(_deliver(first, second, smtp, http, poll, subject, section.errors))
            if (number + 1) % 50 == 0 or number + 1 == sends:
                middle = median(samples) * 1000
                print(f"  redis latency {number + 1}/{sends}: median {middle:.2f} ms", flush=True)
    valid = [value for value in samples if value == value]  # drop the nan of a lost one
    middle, p99 = median(valid), percentile(valid, 0.99)
    section.rows.append(
        Row(
            LATENCY,
            label,
            f"median {middle * 1000:.2f} ms, p99 {p99 * 1000:.2f} ms",
            "",
            f"median < {TARGET_MEDIAN * 1000:.0f} ms",
            middle < TARGET_MEDIAN,
            f"median {middle * 1000:.2f} ms (target {TARGET_MEDIAN * 1000:.0f})",
        )
    )
    section.data["latency"] = {
        "sends": sends,
        "pending_pause_s": _PENDING,
        "median_ms": round(middle * 1000, 3),
        "p99_ms": round(p99 * 1000, 3),
        "max_ms": round(max(valid, default=float("nan")) * 1000, 3),
        "answered_before_sendmail_returned": sum(value <= 0 for value in valid),
        "samples_ms": [round(value * 1000, 3) for value in samples],
    }


def measure(
    *, rounds: int, messages: int, sends: int, clients: int = 4, size: int = 1024
) -> Section:
    """Run both Redis measurements on a private redis-server; skipped when Redis is missing."""
    section = Section(NAME)
    reason = missing()
    if reason is not None:
        print(f"{NAME}: skipped: {reason}")
        section.rows.append(Row(NAME, "skipped", reason))
        section.data = {"skipped": reason}
        return section
    with redis_server() as url:
        _ingestion(section, url, rounds, messages, clients, size)
        _latency(section, url, sends)
    return section
