"""IMAP: fetching 1,000 messages against Dovecot, and an IDLE client's wake against the long-poll's.

Fetch: Dovecot (:mod:`bench.dovecot`, serving the messages from a Maildir) and
our standalone server (``python -m pytest_tempinbox --imap-port 0``, the memory
store, the same messages delivered over SMTP to one inbox) hold the same
~2 KiB messages (:func:`bench.memory.make_message`). Each round, for each in
turn (every other round in reverse order, after one untimed run each, which
also lets Dovecot build its index): ``imaplib`` connects, logs in, SELECTs
``INBOX`` and sends ``UID FETCH 1:* (BODY.PEEK[])``; the time is from the
connection to the FETCH's completion, and every message must come back whole.
Target: ours at most 3x Dovecot's median.

Wake: on the same server, one IMAP session stays in IDLE on one inbox; each
send (smtplib, one connection) is timed from ``sendmail`` returning to the
session reading ``* n EXISTS``, alternating send by send with a pending
``GET /api/messages/{email}?wait=10`` (requests, keep-alive) on a fresh inbox,
timed to its parsed answer, as the ``latency`` part does. Target: the IDLE
wake's median at most 1.5x the long-poll's in the same run ("within the
long-poll's latency", with room for the noise of sub-millisecond medians).
Either wake can be negative: the store wakes waiters before the 250 goes out.
"""

from __future__ import annotations

import contextlib
import imaplib
import os
import random
import re
import smtplib
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import requests

from . import dovecot
from .measure import Row, Section, alternate, median, percentile, ratio
from .memory import make_message
from .processes import HOST, stop_process

__all__ = ["NAME", "measure"]

NAME = "imap"
OURS = "pytest-tempinbox (memory store)"
DOVECOT = "Dovecot (Maildir)"
IDLE = "IDLE: * n EXISTS read"
LONG_POLL = "GET ?wait=10 (requests)"
TARGET_FETCH = 3.0
TARGET_IDLE = 1.5
_PENDING = 0.02  # time for a long-poll to reach the server and start waiting
_WAIT = 10.0
_EXISTS = re.compile(rb"^\* (\d+) EXISTS\r?\n$")


@dataclass(frozen=True)
class _Ours:
    """Our standalone server: its SMTP, API and IMAP addresses."""

    smtp_port: int
    api_url: str
    imap_port: int


@contextlib.contextmanager
def _standalone(max_messages: int) -> Iterator[_Ours]:
    """``python -m pytest_tempinbox`` with IMAP, on free ports, until the block ends."""
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pytest_tempinbox",
            "--smtp-port",
            "0",
            "--api-port",
            "0",
            "--imap-port",
            "0",
            "--max-messages-per-inbox",
            str(max_messages),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert process.stdout is not None
    try:
        text = ""
        while "IMAP listening" not in text:
            line = process.stdout.readline()
            if not line:
                raise RuntimeError(f"the server exited {process.wait()}: {text.strip()[-300:]}")
            text += line
        smtp = re.search(r"smtp://[\d.]+:(\d+)", text)
        api = re.search(r"(http://[\d.]+:\d+/api)", text)
        imap = re.search(r"imap://[\d.]+:(\d+)", text)
        if not (smtp and api and imap):
            raise RuntimeError(f"the server did not say where it listens: {text!r}")
        yield _Ours(int(smtp.group(1)), api.group(1), int(imap.group(1)))
    finally:
        stop_process(process)
        process.stdout.close()


def _fetch_all(port: int, user: str, password: str, expected: int) -> Callable[[], float]:
    """A timed fetch of the whole INBOX: connect, LOGIN, SELECT, ``UID FETCH 1:* (BODY.PEEK[])``."""

    def fetch() -> float:
        started = time.perf_counter()
        client = imaplib.IMAP4(HOST, port)
        client.login(user, password)
        client.select("INBOX")
        status, data = client.uid("FETCH", "1:*", "(BODY.PEEK[])")
        elapsed = time.perf_counter() - started
        client.logout()
        bodies = [item[1] for item in data if isinstance(item, tuple)]
        if status != "OK" or len(bodies) != expected:
            raise RuntimeError(f"UID FETCH answered {status} with {len(bodies)} of {expected}")
        return elapsed

    return fetch


class _Idler:
    """An IMAP session in IDLE on one inbox; a thread notes when each ``* n EXISTS`` is read."""

    def __init__(self, port: int, user: str, password: str) -> None:
        self.sock = socket.create_connection((HOST, port))
        self.file = self.sock.makefile("rb")
        self.file.readline()  # the greeting
        for tag, command in (("a", f"LOGIN {user} {password}"), ("b", "SELECT INBOX")):
            self.sock.sendall(f"{tag} {command}\r\n".encode())
            self._until(tag.encode() + b" ", f"{tag} OK")
        self.sock.sendall(b"c IDLE\r\n")
        self._until(b"+", "+")
        self.arrived: list[float] = []
        self.event = threading.Event()
        self.thread = threading.Thread(target=self._read, name="imap-idler", daemon=True)
        self.thread.start()

    def _until(self, start: bytes, expected: str) -> None:
        """Read up to the line starting with ``start``; it must start with ``expected``."""
        while not (line := self.file.readline()).startswith(start):
            if not line:
                raise RuntimeError(f"the IMAP server closed the session; expected {expected!r}")
        if not line.startswith(expected.encode()):
            raise RuntimeError(f"expected {expected!r}, the IMAP server answered {line!r:.200}")

    def _read(self) -> None:
        while line := self.file.readline():
            if _EXISTS.match(line):
                self.arrived.append(time.perf_counter())
                self.event.set()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.sendall(b"DONE\r\nz LOGOUT\r\n")
        self.sock.close()
        self.thread.join(5)
        self.file.close()


def _message(address: str, subject: str) -> bytes:
    return (
        f"From: app@example.test\r\nTo: {address}\r\nSubject: {subject}\r\n\r\nHello.\r\n"
    ).encode()


def _wakes(ours: _Ours, sends: int, errors: list[str]) -> dict[str, list[float]]:
    """``sends`` wakes each way, alternating: IDLE on one inbox, long-polls on fresh ones."""
    http = requests.Session()
    http.trust_env = False
    inbox = http.post(ours.api_url + "/generate", timeout=30).json()
    idler = _Idler(ours.imap_port, inbox["email"], inbox["password"])
    samples: dict[str, list[float]] = {IDLE: [], LONG_POLL: []}
    try:
        with smtplib.SMTP(HOST, ours.smtp_port, local_hostname="localhost") as smtp:

            def idle(number: int) -> float:
                idler.event.clear()
                time.sleep(_PENDING)
                smtp.sendmail("app@example.test", [inbox["email"]], _message(inbox["email"], "i"))
                sent = time.perf_counter()
                if not idler.event.wait(_WAIT):
                    errors.append(f"{NAME}: IDLE was not told of delivery {number}")
                    return float("nan")
                return idler.arrived[-1] - sent

            def long_poll(number: int) -> float:
                address = http.post(ours.api_url + "/generate", timeout=30).json()["email"]
                arrived: list[float] = []

                def wait() -> None:
                    url = f"{ours.api_url}/messages/{address}"
                    try:
                        with http.get(url, params={"wait": str(_WAIT)}, timeout=_WAIT + 5) as got:
                            got.json()
                        arrived.append(time.perf_counter())
                    except Exception as exc:
                        errors.append(f"{NAME}: the long-poll failed: {exc!r}")

                thread = threading.Thread(target=wait, name="imap-long-poll")
                thread.start()
                time.sleep(_PENDING)
                smtp.sendmail("app@example.test", [address], _message(address, f"w{number}"))
                sent = time.perf_counter()
                thread.join(_WAIT + 10)
                http.delete(f"{ours.api_url}/delete/{address}", timeout=30)
                return arrived[0] - sent if arrived else float("nan")

            ways = {IDLE: idle, LONG_POLL: long_poll}
            for way in ways.values():
                way(0)  # untimed: the first of each starts what is started lazily
            for number in range(1, sends + 1):
                for name in ways if number % 2 else list(ways)[::-1]:
                    samples[name].append(ways[name](number))
    finally:
        idler.close()
        http.close()
    return {name: [v for v in values if v == v] for name, values in samples.items()}


def _filled(ours: _Ours, messages: Sequence[bytes]) -> dict[str, str]:
    """A new inbox of ours holding ``messages``, delivered over one SMTP connection."""
    with requests.post(ours.api_url + "/generate", timeout=30) as response:
        response.raise_for_status()
        inbox: dict[str, str] = response.json()
    with smtplib.SMTP(HOST, ours.smtp_port, local_hostname="localhost") as smtp:
        for raw in messages:
            smtp.sendmail("app@example.test", [inbox["email"]], raw)
    return inbox


def measure(*, rounds: int, messages: int, sends: int) -> Section:
    """Fetch ``messages`` from Dovecot and ours, ``rounds`` rounds; ``sends`` wakes each way."""
    print(f"{NAME}: UID FETCH of {messages:,} messages, {rounds} rounds; {sends} IDLE wakes")
    section = Section(NAME)
    rng = random.Random(20261128)
    mails = [make_message(rng, number, ["bench@example.test"]) for number in range(messages)]
    fetches: dict[str, Callable[[], float]] = {}
    with contextlib.ExitStack() as stack:
        ours = stack.enter_context(_standalone(max(messages, 10_000)))
        inbox = _filled(ours, mails)
        fetches[OURS] = _fetch_all(ours.imap_port, inbox["email"], inbox["password"], messages)
        why = dovecot.missing()
        if why is None:
            try:
                peer = stack.enter_context(dovecot.dovecot(mails))
                fetches[DOVECOT] = _fetch_all(peer.port, peer.user, peer.password, messages)
            except RuntimeError as exc:
                why = str(exc)
        if why is not None:
            section.errors.append(
                f"{NAME}: Dovecot could not run, so the fetch has no reference: {why}"
            )
        samples = alternate(fetches, rounds, label=f"{NAME} fetch")
        wakes = _wakes(ours, sends, section.errors)
    section.rows = _rows(samples, wakes, messages)
    section.data = {
        "messages": messages,
        "message_bytes": sum(len(mail) for mail in mails),
        "rounds": rounds,
        "sends": sends,
        "fetch_samples_ms": {k: [round(v * 1000, 3) for v in s] for k, s in samples.items()},
        "wake_samples_ms": {k: [round(v * 1000, 3) for v in s] for k, s in wakes.items()},
    }
    return section


def _rows(
    fetches: dict[str, list[float]], wakes: dict[str, list[float]], messages: int
) -> list[Row]:
    """Ours judged against Dovecot's fetch, IDLE against the long-poll's wake."""
    rows = []
    fetch = f"UID FETCH 1:* (BODY.PEEK[]) of {messages:,} (imaplib)"
    reference = median(fetches.get(DOVECOT, []))
    if DOVECOT in fetches:
        rows.append(Row(fetch, DOVECOT, f"{reference * 1000:.1f} ms", "1.00x"))
    mine = median(fetches[OURS])
    times = ratio(mine, reference)
    rows.append(
        Row(
            fetch,
            OURS,
            f"{mine * 1000:.1f} ms",
            f"{times:.2f}x Dovecot",
            f"<= {TARGET_FETCH:g}x Dovecot",
            times <= TARGET_FETCH if times == times else None,
            f"ours {mine * 1000:.1f} ms, {times:.2f}x Dovecot's {reference * 1000:.1f} ms"
            f" (target {TARGET_FETCH:g}x)",
        )
    )
    wake = "a new delivery, from sendmail returning"
    polled, idled = median(wakes[LONG_POLL]), median(wakes[IDLE])
    rows.append(Row(wake, LONG_POLL, _spread(wakes[LONG_POLL]), "1.00x"))
    times = ratio(idled, polled)
    rows.append(
        Row(
            wake,
            IDLE,
            _spread(wakes[IDLE]),
            f"{times:.2f}x the long-poll",
            f"median <= {TARGET_IDLE:g}x the long-poll's",
            idled <= TARGET_IDLE * polled,
            f"IDLE median {idled * 1000:.3f} ms against the long-poll's {polled * 1000:.3f} ms"
            f" (target {TARGET_IDLE:g}x)",
        )
    )
    return rows


def _spread(values: list[float]) -> str:
    return f"median {median(values) * 1000:.3f} ms, p99 {percentile(values, 0.99) * 1000:.2f} ms"
