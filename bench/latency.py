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

The reference, alternating with them round by round: the same ``requests``
session waiting on a bare socket server in a thread of this process
(:mod:`bench.bare_http`) that holds the request and, when triggered, answers
a fixed reply (the body of the untimed long-poll's answer, so that the parse
is the same), timed from the trigger to the parsed body. What the server adds
is the long-poll's median less the bare server's, both from the same run:
target under 0.35 ms; the long-poll's p99 under 2 ms. The in-process wait is
shown without a target.
"""

from __future__ import annotations

import smtplib
import threading
import time
from collections.abc import Callable

import requests

from pytest_tempinbox.client.http import TempInboxClient
from pytest_tempinbox.server.inbox_server import InboxServer

from .bare_http import BareHeldServer
from .measure import Row, Section, median, percentile

__all__ = ["NAME", "measure"]

NAME = "delivery latency"
HTTP = "GET ?wait=10 (requests)"
CLIENT = "Inbox.wait_for_message (in-process)"
BARE = "bare socket server, held and triggered (requests)"
TARGET_ADDED = 0.00035
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
        self.bare: BareHeldServer | None = None
        self.bare_subject = ""
        # The untimed long-poll's answer: the bare server's fixed reply.
        self.last_body = b""

    def close(self) -> None:
        self.client.close()
        self.http.close()

    def once(self, mode: str) -> float:
        """Measure one delivery with the given way of waiting; return the latency in seconds."""
        if mode == BARE:
            return self._bare()
        self.sent += 1
        subject = f"latency {self.sent}"
        inbox = self.client.generate()
        arrived: list[float] = []

        def wait_http() -> None:
            url = f"{self.server.api_url}/messages/{inbox.address}"
            with self.http.get(url, params={"wait": str(_WAIT)}, timeout=_WAIT + 10) as response:
                messages = response.json()
            arrived.append(time.perf_counter())
            self.last_body = response.content
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

    def _bare(self) -> float:
        """One wait on the bare server: from its trigger to the parsed fixed reply."""
        bare = self.bare
        assert bare is not None, "the bare server starts after the untimed long-poll"
        arrived: list[float] = []

        def wait_bare() -> None:
            url = f"{bare.url}/api/messages/held@bench.test"
            with self.http.get(url, params={"wait": str(_WAIT)}, timeout=_WAIT + 10) as response:
                messages = response.json()
            arrived.append(time.perf_counter())
            if [message["subject"] for message in messages] != [self.bare_subject]:
                self.errors.append(f"{BARE}: not the fixed reply: {messages!r:.200}")

        thread = threading.Thread(target=self._guard(wait_bare, BARE), name="latency-bare")
        thread.start()
        time.sleep(_PENDING)
        if not bare.held():
            self.errors.append(f"{BARE}: the request was not held after {_PENDING * 1000:g} ms")
        triggered = time.perf_counter()
        bare.trigger()
        thread.join(_WAIT + 15)
        if not arrived:
            self.errors.append(f"{BARE}: the fixed reply never arrived")
            return float("nan")
        return arrived[0] - triggered

    def _guard(self, waiter: Callable[[], None], mode: str) -> Callable[[], None]:
        def guarded() -> None:
            try:
                waiter()
            except Exception as exc:
                self.errors.append(f"{mode}: the wait failed: {exc!r}")

        return guarded


def measure(*, sends: int) -> Section:
    """Measure ``sends`` deliveries per way of waiting, alternating; median and p99 of each."""
    print(f"{NAME}: {sends} sends per way of waiting, alternating with a bare server's reply")
    section = Section(NAME)
    samples: dict[str, list[float]] = {HTTP: [], BARE: [], CLIENT: []}
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
            probe.bare_subject = f"latency {probe.sent - 1}"
            with BareHeldServer(probe.last_body) as bare:
                probe.bare = bare
                probe.once(BARE)  # untimed: the session's first connection to it
                names = list(samples)
                for number in range(sends):
                    for mode in names if number % 2 == 0 else names[::-1]:
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
    valid = {
        mode: [value for value in values if value == value] for mode, values in samples.items()
    }
    for mode, values in valid.items():  # the nan of a lost one left out
        data[mode] = {
            "median_ms": round(median(values) * 1000, 3),
            "p99_ms": round(percentile(values, 0.99) * 1000, 3),
            "max_ms": round(max(values, default=float("nan")) * 1000, 3),
            "answered_before_sendmail_returned": sum(value <= 0 for value in values),
            "sends": len(samples[mode]),
        }
    section.rows = _rows(valid)
    section.data = {
        "sends": sends,
        "pending_pause_s": _PENDING,
        "bare_reply_bytes": len(probe.last_body),
        "added_ms": round((median(valid[HTTP]) - median(valid[BARE])) * 1000, 3),
        "summary": data,
        "samples_ms": {
            mode: [round(value * 1000, 3) for value in values] for mode, values in samples.items()
        },
    }
    return section


def _rows(valid: dict[str, list[float]]) -> list[Row]:
    """The long-poll judged on what it adds to the bare server and on its p99; the others shown."""
    bare = median(valid[BARE])
    rows = []
    for mode, values in valid.items():
        middle, p99 = median(values), percentile(values, 0.99)
        shown = f"median {middle * 1000:.3f} ms, p99 {p99 * 1000:.2f} ms"
        if mode != HTTP:
            rows.append(Row(NAME, mode, shown))
            continue
        added = middle - bare
        rows.append(
            Row(
                NAME,
                mode,
                shown,
                f"adds {added * 1000:.3f} ms to the bare server's median",
                f"adds < {TARGET_ADDED * 1000:g} ms, p99 < {TARGET_P99 * 1000:g} ms",
                added < TARGET_ADDED and p99 < TARGET_P99,
                f"adds {added * 1000:.3f} ms to the bare server's {bare * 1000:.3f} ms"
                f" (target {TARGET_ADDED * 1000:g}), p99 {p99 * 1000:.2f} ms"
                f" (target {TARGET_P99 * 1000:g})",
            )
        )
    return rows
