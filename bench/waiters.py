"""Many waiters: pending long-polls held by one standalone server, and waking one of them.

A ``python -m pytest_tempinbox`` process serves; this process generates one
inbox per waiter and opens that many keep-alive connections, each with a
pending ``GET /api/messages/{email}?wait=55``. The server's resident memory
before and after gives its cost per waiter. Then, while the others wait, one
message at a time is sent to one waiter's inbox over a persistent SMTP
connection: the wake latency runs from ``sendmail`` returning (the 250) to the
whole answer read. A waiter must be answered once, with its message, and the
others not at all. Linux only (the server's memory is read from ``/proc``).
"""

from __future__ import annotations

import re
import select
import signal
import smtplib
import socket
import time
from typing import Any

import requests

from .measure import Row, Section, collector_paused, median, percentile
from .processes import start_standalone

__all__ = ["NAME", "measure"]

NAME = "many waiters"
TARGET_BYTES_PER_WAITER = 16 * 1024
TARGET_MEDIAN = 0.002
TARGET_P99 = 0.010
_WAIT = 55  # seconds each long-poll may wait: longer than the run
_SETTLE = 3.0  # seconds for the waits to reach the server before its memory is read


def _resident_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        found = re.search(r"VmRSS:\s+(\d+)", status.read())
    assert found, "no VmRSS in /proc/PID/status"
    return int(found.group(1))


def _answer(sock: socket.socket) -> bytes:
    """Read one whole HTTP answer (head and Content-Length body) from ``sock``."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("the server closed a waiting connection")
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    found = re.search(rb"content-length: *(\d+)", head, re.IGNORECASE)
    length = int(found.group(1)) if found else 0
    while len(body) < length:
        body += sock.recv(65536)
    return head + b"\r\n\r\n" + body


def _raise_own_limit(needed: int) -> None:
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < needed <= hard or (soft < needed and hard == resource.RLIM_INFINITY):
        resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))


def measure(*, waiters: int, wakes: int) -> Section:
    """Hold ``waiters`` long-polls on one server, memory store then Redis; wake ``wakes``."""
    from .redis_servers import missing, redis_server

    section = Section(NAME)
    _raise_own_limit(waiters + 256)
    runs: dict[str, dict[str, Any]] = {"memory": _hold(section, "memory", [], waiters, wakes)}
    why_not = missing()
    if why_not is None:
        with redis_server() as url:
            runs["redis"] = _hold(section, "Redis", ["--store", url], waiters, wakes)
    else:
        print(f"  the Redis store: skipped ({why_not})", flush=True)
    section.data = {"waiters": waiters, "wakes": wakes, **runs}
    return section


def _hold(
    section: Section, store: str, arguments: list[str], waiters: int, wakes: int
) -> dict[str, Any]:
    """One server on ``store`` holding the waiters: its rows added to ``section``, its data."""
    print(f"{NAME} ({store} store): {waiters} pending long-polls, {wakes} woken one at a time")
    server, smtp_host, smtp_port, origin = start_standalone(*arguments)
    held: list[socket.socket] = []
    try:
        host, _, port_text = origin.removeprefix("http://").rpartition(":")
        port = int(port_text)
        with requests.Session() as http:
            http.trust_env = False
            api = f"http://{host}:{port}/api"
            generate = api + "/generate"
            addresses = [http.post(generate, timeout=10).json()["email"] for _ in range(waiters)]
        time.sleep(0.5)
        before = _resident_kib(server.pid)
        for address in addresses:
            sock = socket.create_connection((host, port), timeout=10)
            request = f"GET /api/messages/{address}?wait={_WAIT} HTTP/1.1\r\nHost: {host}\r\n\r\n"
            sock.sendall(request.encode())
            held.append(sock)
        time.sleep(_SETTLE)
        after = _resident_kib(server.pid)
        per_waiter = (after - before) * 1024 / waiters
        kib = per_waiter / 1024
        print(f"  memory: {before} -> {after} KiB, {kib:.1f} KiB per waiter", flush=True)
        latencies = []
        with collector_paused(), smtplib.SMTP(smtp_host, smtp_port) as smtp:
            for number in range(wakes):
                message = f"Subject: wake {number}\r\n\r\nHello.\r\n"
                smtp.sendmail("app@example.test", [addresses[number]], message)
                sent = time.perf_counter()
                answer = _answer(held[number])
                latencies.append(time.perf_counter() - sent)
                if f"wake {number}".encode() not in answer:
                    section.errors.append(
                        f"{store}: waiter {number} got another answer: {answer[:200]!r}"
                    )
        # poll, not select: select takes no descriptor above 1,023.
        watch = select.poll()
        for sock in held[wakes:]:
            watch.register(sock, select.POLLIN)
        early = watch.poll(0)
        if early:
            section.errors.append(f"{store}: {len(early)} waiters not woken were answered")
        middle, p99 = median(latencies), percentile(latencies, 0.99)
        print(f"  wake: median {middle * 1000:.2f} ms, p99 {p99 * 1000:.2f} ms", flush=True)
    finally:
        for sock in held:
            sock.close()
        server.send_signal(signal.SIGTERM)
        server.communicate(timeout=30)
    memory_ok = per_waiter <= TARGET_BYTES_PER_WAITER
    section.rows.append(
        Row(
            NAME,
            f"memory per pending long-poll ({waiters}, {store} store)",
            f"{per_waiter / 1024:.1f} KiB",
            "",
            f"<= {TARGET_BYTES_PER_WAITER // 1024} KiB",
            memory_ok,
            "" if memory_ok else f"{per_waiter / 1024:.1f} KiB (target 16)",
        )
    )
    wake_ok = middle < TARGET_MEDIAN and p99 < TARGET_P99
    section.rows.append(
        Row(
            NAME,
            f"wake one of {waiters} ({store} store)",
            f"median {middle * 1000:.2f} ms, p99 {p99 * 1000:.2f} ms",
            "",
            f"median < {TARGET_MEDIAN * 1000:g} ms, p99 < {TARGET_P99 * 1000:g} ms",
            wake_ok,
            "" if wake_ok else f"median {middle * 1000:.2f} ms, p99 {p99 * 1000:.2f} ms",
        )
    )
    return {
        "resident_kib": [before, after],
        "bytes_per_waiter": round(per_waiter),
        "wake_ms": [round(value * 1000, 3) for value in latencies],
    }
