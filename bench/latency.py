"""Delivery latency: from ``sendmail`` returning to a pending long-poll returning the mail.

For each send a fresh inbox is generated and a waiter thread starts waiting on it
first: either a raw ``GET /api/messages/{email}?wait=10`` with requests (its own
keep-alive session), or the client's ``Inbox.wait_for_message`` over the
in-process transport. After a pause that lets the wait reach the server, the
main thread sends one message over a persistent smtplib connection. The latency
is the time from ``sendmail`` returning (the 250 received) to the waiter having
the parsed message. One untimed delivery each way comes first, to start the
lazily started HTTP side. The store wakes waiters before the 250 goes out, so a
latency can be negative: the answer was in before ``sendmail`` returned.
"""

from __future__ import annotations

import smtplib
import threading
import time
from collections.abc import Callable

import requests

from pytest_tempinbox.client.http import TempInboxClient
from pytest_tempinbox.server.inbox_server import InboxServer

from .measure import Row, Section, median, percentile

__all__ = ["NAME", "measure"]

NAME = "delivery latency"
HTTP = "GET ?wait=10 (requests)"
CLIENT = "Inbox.wait_for_message (in-process)"
TARGET_MEDIAN = 0.0007
TARGET_P99 = 0.002
# Time for the waiter's request to reach the server and start waiting.
_PENDING = 0.02
_WAIT = 10.0


def _message(address: str, subject: str) -> bytes:
    return (
        f"From: app@example.test\r\nTo: {address}\r\nSubject: {subject}\r\n\r\nHello.\r\n"
    ).encode()


class _Probe:
    """The shared pieces of one run: the server, an SMTP connection, the two ways to wait."""

    def __init__(self, server: InboxServer, smtp: smtplib.SMTP, errors: list[str]) -> None:
        self.server = server
        self.smtp = smtp
        self.errors = errors
        self.client = TempInboxClient(server.api_url, transport=server.local_transport())
        self.http = requests.Session()
        self.http.trust_env = False
        self.sent = 0

    def close(self) -> None:
        self.client.close()
        self.http.close()

    def once(self, mode: str) -> float:
        """Measure one delivery with the given way of waiting; return the latency in seconds."""
        self.sent += 1
        subject = f"latency {self.sent}"
        inbox = self.client.generate()
        arrived: list[float] = []

        def wait_http() -> None:
            url = f"{self.server.api_url}/messages/{inbox.address}"
            with self.http.get(url, params={"wait": str(_WAIT)}, timeout=_WAIT + 10) as response:
                messages = response.json()
            arrived.append(time.perf_counter())
            if [message["subject"] for message in messages] != [subject]:
                self.errors.append(f"{HTTP}: {subject!r} not answered: {messages!r:.200}")

        def wait_client() -> None:
            message = inbox.wait_for_message(timeout=_WAIT)
            arrived.append(time.perf_counter())
            if message.subject != subject:
                self.errors.append(f"{CLIENT}: got {message.subject!r}, not {subject!r}")

        waiter: Callable[[], None] = wait_http if mode == HTTP else wait_client
        thread = threading.Thread(target=self._guard(waiter, mode), name="latency-waiter")
        thread.start()
        time.sleep(_PENDING)
        self.smtp.sendmail("app@example.test", [inbox.address], _message(inbox.address, subject))
        sent = time.perf_counter()
        thread.join(_WAIT + 15)
        inbox.delete()
        if not arrived:
            self.errors.append(f"{mode}: {subject!r} never arrived")
            return float("nan")
        return arrived[0] - sent

    def _guard(self, waiter: Callable[[], None], mode: str) -> Callable[[], None]:
        def guarded() -> None:
            try:
                waiter()
            except Exception as exc:
                self.errors.append(f"{mode}: the wait failed: {exc!r}")

        return guarded


def measure(*, sends: int) -> Section:
    """Measure ``sends`` deliveries per way of waiting, alternating; median and p99 of each."""
    print(f"{NAME}: {sends} sends per way of waiting, alternating")
    section = Section(NAME)
    samples: dict[str, list[float]] = {HTTP: [], CLIENT: []}
    with (
        InboxServer() as server,
        smtplib.SMTP(server.smtp_host, server.smtp_port, local_hostname="localhost") as smtp,
    ):
        probe = _Probe(server, smtp, section.errors)
        try:
            # Untimed: the first HTTP request starts uvicorn (imports and builds the
            # app, tens of ms), which can outlast the pause and land in a sample.
            for mode in (HTTP, CLIENT):
                probe.once(mode)
            for number in range(sends):
                order = [HTTP, CLIENT] if number % 2 == 0 else [CLIENT, HTTP]
                for mode in order:
                    samples[mode].append(probe.once(mode))
                if (number + 1) % 50 == 0 or number + 1 == sends:
                    line = "  ".join(
                        f"{mode}: median {median(values) * 1000:.2f} ms"
                        for mode, values in samples.items()
                    )
                    print(f"  latency {number + 1}/{sends}: {line}", flush=True)
        finally:
            probe.close()
    data: dict[str, dict[str, float | int]] = {}
    for mode, values in samples.items():
        valid = [value for value in values if value == value]  # drop the nan of a lost one
        middle, p99 = median(valid), percentile(valid, 0.99)
        data[mode] = {
            "median_ms": round(middle * 1000, 3),
            "p99_ms": round(p99 * 1000, 3),
            "max_ms": round(max(valid, default=float("nan")) * 1000, 3),
            "answered_before_sendmail_returned": sum(value <= 0 for value in valid),
            "sends": len(values),
        }
        passed = middle < TARGET_MEDIAN and p99 < TARGET_P99
        section.rows.append(
            Row(
                NAME,
                mode,
                f"median {middle * 1000:.2f} ms, p99 {p99 * 1000:.2f} ms",
                "",
                f"median < {TARGET_MEDIAN * 1000:g} ms, p99 < {TARGET_P99 * 1000:g} ms",
                passed,
                f"median {middle * 1000:.2f} ms (target {TARGET_MEDIAN * 1000:g}),"
                f" p99 {p99 * 1000:.2f} ms (target {TARGET_P99 * 1000:g})",
            )
        )
    section.data = {
        "sends": sends,
        "pending_pause_s": _PENDING,
        "summary": data,
        "samples_ms": {
            mode: [round(value * 1000, 3) for value in values] for mode, values in samples.items()
        },
    }
    return section
