"""What tenants cost: SMTP ingestion and a long-poll's wake, with tenants on and off, in one run.

Two ``python -m pytest_tempinbox`` processes run side by side: one open, one
with a tenants file and every default rate limit on (docs/tenants.md). Each
round measures both, in turn (every other round in reverse order): msgs/s of
``messages`` 1 KiB messages from ``clients`` smtp-source processes (or the
bench's own senders) to inboxes generated for the round, every one counted
afterwards. Then ``sends`` wakes of each, alternating send by send, of a
pending ``GET ...?wait=10`` (requests, keep-alive, with the tenant's token
where there are tenants) by an SMTP send, from ``sendmail`` returning to the
waiter having the message. Targets: with
tenants, ingestion at least 0.95x and the wake's median at most 1.05x the
open server's.
"""

from __future__ import annotations

import functools
import json
import smtplib
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import requests

from pytest_tempinbox.tenants import hash_line

from .ingest import send_all
from .measure import Row, Section, alternate, median, ratio
from .processes import start_standalone, stop_process
from .servers import Sink

__all__ = ["NAME", "measure"]

NAME = "tenants' cost"
OPEN, TENANTS = "open server", "with tenants"
TARGET_RATE = 0.95
TARGET_WAKE = 1.05
_TOKEN = "tit_bench-tenancy-token"
_WAIT = 10.0
_PENDING = 0.02


class _Server:
    """One standalone server and a keep-alive session to its API (with the token, for tenants)."""

    def __init__(self, *flags: str, token: str | None = None) -> None:
        self.process, self.smtp_host, self.smtp_port, origin = start_standalone(*flags)
        self.api = origin + "/api"
        self.http = requests.Session()
        self.http.trust_env = False
        if token is not None:
            self.http.headers["Authorization"] = f"Bearer {token}"

    def generate(self) -> str:
        answer = self.http.post(self.api + "/generate", timeout=10)
        answer.raise_for_status()
        address: str = answer.json()["email"]
        return address

    def count_and_delete(self, address: str) -> int:
        count = len(self.http.get(f"{self.api}/messages/{address}", timeout=30).json())
        self.http.delete(f"{self.api}/delete/{address}", timeout=10)
        return count

    def stop(self) -> None:
        self.http.close()
        stop_process(self.process)


def _rate(
    server: _Server, label: str, clients: int, messages: int, size: int, errors: list[str]
) -> float:
    recipients = [server.generate() for _ in range(clients)]
    sink = Sink(server.smtp_host, server.smtp_port, recipients, lambda: 0)
    seconds = send_all(sink, messages, size, errors, label)
    received = sum(server.count_and_delete(address) for address in recipients)
    if received != messages:
        errors.append(f"{label}: {received:,} of {messages:,} messages arrived")
    return messages / seconds


def _wake(server: _Server, smtp: smtplib.SMTP, label: str, errors: list[str]) -> float:
    address = server.generate()
    arrived: list[float] = []

    def wait() -> None:
        url = f"{server.api}/messages/{address}"
        with server.http.get(url, params={"wait": str(_WAIT)}, timeout=_WAIT + 10) as got:
            if got.status_code == 200 and got.json():
                arrived.append(time.perf_counter())
            else:
                errors.append(f"{label}: the wait answered {got.status_code}: {got.text[:200]}")

    thread = threading.Thread(target=wait, name="tenancy-waiter")
    thread.start()
    time.sleep(_PENDING)
    smtp.sendmail("app@example.test", [address], f"To: {address}\r\nSubject: wake\r\n\r\nHi.")
    done = time.perf_counter()
    thread.join(_WAIT + 15)
    server.count_and_delete(address)
    return arrived[0] - done if arrived else float("nan")


def measure(*, rounds: int, messages: int, sends: int, clients: int = 4) -> Section:
    """Ingestion and wakes of an open server and one with tenants, alternating round by round."""
    print(
        f"{NAME}: {messages:,} messages from {clients} clients and {sends} wakes, {rounds} rounds"
    )
    section = Section(NAME)
    directory = tempfile.mkdtemp(prefix="tempinbox-bench-tenancy-")
    tenants = Path(directory) / "tenants.json"
    tenants.write_text(json.dumps({"tenants": [{"name": "bench", "tokens": [hash_line(_TOKEN)]}]}))
    capacity = ("--max-messages-per-inbox", str(messages))
    servers: dict[str, _Server] = {}
    wakes: dict[str, list[float]] = {OPEN: [], TENANTS: []}
    try:
        servers[OPEN] = _Server(*capacity)
        servers[TENANTS] = _Server(*capacity, "--tenants", str(tenants), token=_TOKEN)
        connections = {
            label: smtplib.SMTP(server.smtp_host, server.smtp_port, local_hostname="localhost")
            for label, server in servers.items()
        }

        def contender(label: str) -> float:
            return _rate(servers[label], label, clients, messages, 1024, section.errors)

        rates = alternate(
            {label: functools.partial(contender, label) for label in servers},
            rounds,
            label="tenancy",
            unit=" msg/s",
        )
        for label in servers:  # untimed: the first wake of each warms its path
            _wake(servers[label], connections[label], label, section.errors)
        for number in range(sends):
            order = list(servers) if number % 2 == 0 else list(servers)[::-1]
            for label in order:
                wakes[label].append(
                    _wake(servers[label], connections[label], label, section.errors)
                )
        for connection in connections.values():
            connection.quit()
    except (OSError, RuntimeError, subprocess.SubprocessError, requests.RequestException) as exc:
        section.errors.append(f"{NAME}: {exc}")
        return section
    finally:
        for server in servers.values():
            server.stop()
    rate = {label: median(values) for label, values in rates.items()}
    wake = {label: median([v for v in values if v == v]) for label, values in wakes.items()}
    rate_ratio, wake_ratio = ratio(rate[TENANTS], rate[OPEN]), ratio(wake[TENANTS], wake[OPEN])
    section.rows.append(Row(NAME, f"ingestion, {OPEN}", f"{rate[OPEN]:,.0f} msg/s"))
    section.rows.append(
        Row(
            NAME,
            f"ingestion, {TENANTS}",
            f"{rate[TENANTS]:,.0f} msg/s",
            f"{rate_ratio:.2f}x open",
            f">= {TARGET_RATE:.2f}x open",
            rate_ratio >= TARGET_RATE,
            f"{rate_ratio:.2f}x open (target {TARGET_RATE:.2f}x)",
        )
    )
    section.rows.append(Row(NAME, f"long-poll wake, {OPEN}", f"median {wake[OPEN] * 1000:.2f} ms"))
    section.rows.append(
        Row(
            NAME,
            f"long-poll wake, {TENANTS}",
            f"median {wake[TENANTS] * 1000:.2f} ms",
            f"{wake_ratio:.2f}x open",
            f"<= {TARGET_WAKE:.2f}x open",
            wake_ratio <= TARGET_WAKE,
            f"{wake_ratio:.2f}x open (target {TARGET_WAKE:.2f}x)",
        )
    )
    section.data = {
        "rounds": rounds,
        "messages": messages,
        "sends": sends,
        "samples_msgs_per_s": rates,
        "wake_ms": {label: [round(v * 1000, 3) for v in values] for label, values in wakes.items()},
    }
    return section
