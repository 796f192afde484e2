"""Many event streams: one standalone server feeding a thousand, each inbox mailed once a second.

A ``python -m pytest_tempinbox`` process serves; this process generates one
inbox per stream and opens ``GET /api/events/{email}`` on each, one connection
apiece, read with one ``selectors`` loop. Two sender processes, each with one
persistent SMTP connection, send every inbox one message a second, spread
over the second, for ``rounds`` seconds, and note when each ``sendmail``
returned (the 250). Each event's latency runs from that 250 to its ``message``
event read by this process; ``CLOCK_MONOTONIC`` is one clock for the whole
machine, so the two processes' times compare. Every message must arrive as one
event on its own inbox's stream, once, in the order sent. Linux only.
"""

from __future__ import annotations

import multiprocessing
import re
import selectors
import signal
import smtplib
import socket
import time
from multiprocessing.connection import Connection
from typing import Any

import requests

from .measure import Row, Section, collector_paused, median, percentile
from .processes import start_standalone

__all__ = ["NAME", "measure"]

NAME = "many streams"
TARGET_P99 = 0.020
_SENDERS = 2
_SUBJECT = re.compile(rb'"subject": ?"stream (\d+) round (\d+)"')


def _send(
    smtp_host: str,
    smtp_port: int,
    addresses: list[str],
    first: int,
    rounds: int,
    start: float,
    results: Connection,
) -> None:
    """Send ``addresses`` (numbered from ``first``) one message a round, spread over each second."""
    sent: list[tuple[int, int, float]] = []
    step = 1.0 / max(len(addresses), 1)
    with smtplib.SMTP(smtp_host, smtp_port, local_hostname="bench.test") as smtp:
        for round_number in range(rounds):
            for offset, address in enumerate(addresses):
                due = start + round_number + offset * step
                pause = due - time.monotonic()
                if pause > 0:
                    time.sleep(pause)
                number = first + offset
                message = f"Subject: stream {number} round {round_number}\r\n\r\nHello.\r\n"
                smtp.sendmail("app@example.test", [address], message)
                sent.append((number, round_number, time.monotonic()))
    results.send(sent)
    results.close()


def _open_stream(host: str, port: int, address: str) -> socket.socket:
    sock = socket.create_connection((host, port), timeout=10)
    sock.sendall(f"GET /api/events/{address} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
    return sock


def measure(*, streams: int, rounds: int) -> Section:
    """Hold ``streams`` event streams on one server, memory store then Redis, mailing each."""
    from .redis_servers import missing, redis_server

    section = Section(NAME)
    runs = {"memory": _feed(section, "memory", [], streams, rounds)}
    why_not = missing()
    if why_not is None:
        with redis_server() as url:
            runs["redis"] = _feed(section, "Redis", ["--store", url], streams, rounds)
    else:
        print(f"  the Redis store: skipped ({why_not})", flush=True)
    section.data = {"streams": streams, "rounds": rounds, **runs}
    return section


def _feed(
    section: Section, store: str, arguments: list[str], streams: int, rounds: int
) -> dict[str, Any]:
    """One server on ``store`` with the streams open: its row added to ``section``, its data."""
    print(f"{NAME} ({store} store): {streams} event streams, one message a second each, {rounds} s")
    errors: list[str] = []
    server, smtp_host, smtp_port, origin = start_standalone(*arguments)
    held: list[socket.socket] = []
    arrived: dict[tuple[int, int], float] = {}
    order_errors = 0
    duplicates = 0
    sent: list[tuple[int, int, float]] = []
    try:
        host, _, port_text = origin.removeprefix("http://").rpartition(":")
        port = int(port_text)
        with requests.Session() as http:
            http.trust_env = False
            generate = f"http://{host}:{port}/api/generate"
            addresses = [http.post(generate, timeout=10).json()["email"] for _ in range(streams)]
        # The bench's own collector paused: a full collection of its heap read as a stall.
        with collector_paused():
            selector = selectors.DefaultSelector()
            buffers: dict[int, bytes] = {}
            last_round: dict[int, int] = {}
            for number, address in enumerate(addresses):
                sock = _open_stream(host, port, address)
                sock.setblocking(False)
                held.append(sock)
                selector.register(sock, selectors.EVENT_READ, number)
                buffers[number] = b""
            time.sleep(1.0)  # every stream open and waiting before the first message
            start = time.monotonic() + 0.5
            share = -(-streams // _SENDERS)
            senders = []
            for first in range(0, streams, share):
                receive, give = multiprocessing.Pipe(duplex=False)
                process = multiprocessing.get_context("fork").Process(
                    target=_send,
                    args=(
                        smtp_host,
                        smtp_port,
                        addresses[first : first + share],
                        first,
                        rounds,
                        start,
                        give,
                    ),
                )
                process.start()
                give.close()
                senders.append((process, receive))
            expected = streams * rounds
            # The senders may lag behind their schedule (a slow store): the events are awaited
            # until every sender has said it is done, and then 5 s more at most.
            deadline, done_at = start + rounds + 120, None
            while len(arrived) < expected and time.monotonic() < deadline:
                if done_at is None and all(receive.poll() for _, receive in senders):
                    done_at = time.monotonic()
                elif done_at is not None and time.monotonic() > done_at + 5:
                    break
                for key, _ in selector.select(timeout=0.5):
                    now = time.monotonic()
                    reader, number = key.fileobj, key.data
                    assert isinstance(reader, socket.socket)
                    chunk = reader.recv(65536)
                    if not chunk:
                        errors.append(f"stream {number} closed")
                        selector.unregister(reader)
                        continue
                    data = buffers[number] + chunk
                    end = 0
                    for found in _SUBJECT.finditer(data):
                        end = found.end()
                        stream, round_number = int(found.group(1)), int(found.group(2))
                        if stream != number:
                            errors.append(f"stream {number} got stream {stream}'s message")
                        if (stream, round_number) in arrived:
                            duplicates += 1
                            continue
                        if round_number <= last_round.get(number, -1):
                            order_errors += 1
                        last_round[number] = round_number
                        arrived[(stream, round_number)] = now
                    buffers[number] = data[end:][-4096:]
            for process, receive in senders:
                sent.extend(receive.recv())
                process.join(timeout=30)
    finally:
        for sock in held:
            sock.close()
        server.send_signal(signal.SIGTERM)
        server.communicate(timeout=30)
    # How far the senders fell behind: the latest 250 past the end of its own second.
    lag = max([0.0, *(at - (start + round_number + 1) for _, round_number, at in sent)])
    latencies = [
        arrived[number, round_number] - at
        for number, round_number, at in sent
        if (number, round_number) in arrived
    ]
    missing = len(sent) - len(latencies)
    if missing or len(sent) != streams * rounds:
        errors.append(f"{missing} of {len(sent)} sent messages never arrived as events")
    if order_errors or duplicates:
        errors.append(f"{order_errors} events out of order, {duplicates} twice")
    middle, p99 = median(latencies), percentile(latencies, 0.99)
    print(
        f"  events: median {middle * 1000:.2f} ms, p99 {p99 * 1000:.2f} ms;"
        f" the senders at most {lag:.1f} s behind their schedule",
        flush=True,
    )
    section.errors.extend(f"{store}: {error}" for error in errors)
    passed = p99 < TARGET_P99 and not errors
    section.rows.append(
        Row(
            NAME,
            f"an event on each of {streams} streams a second ({store} store)",
            f"median {middle * 1000:.2f} ms, p99 {p99 * 1000:.2f} ms",
            "",
            f"every event, in order; p99 < {TARGET_P99 * 1000:g} ms after the 250",
            passed,
            "" if passed else f"p99 {p99 * 1000:.2f} ms; {len(errors)} errors",
        )
    )
    return {
        "events": len(latencies),
        "senders_behind_s": round(lag, 3),
        "event_ms_percentiles": {
            "50": round(middle * 1000, 3),
            "99": round(p99 * 1000, 3),
            "max": round(max(latencies, default=0.0) * 1000, 3),
        },
    }
