"""The provider layer: SendGrid-style sends over HTTP against SMTP deliveries to the same server.

One ``python -m pytest_tempinbox`` process serves (memory store), started
before the clock. Rate: each round, ``clients`` client processes send their
share of ``messages`` 1 KiB messages to one fresh inbox each, over one
keep-alive connection each, from their start to the last one's exit; once over
SMTP (smtp-source, as :mod:`bench.ingest` sends) and once as SendGrid
``POST /providers/sendgrid/v3/mail/send`` requests (JSON, one
``personalizations[].to``; ``curl -K`` with one ``url =`` line per send, which
reuses one HTTP/1.1 connection per process). The two alternate round by round.
Afterwards the messages that arrived are counted through the API (none may be
lost) and each HTTP answer must have been a 202. A third way in the same
alternation posts the same sends to a bare Starlette endpoint on uvicorn in a
process of its own (:mod:`bench.bare_starlette`: it reads the body and answers
202, nothing else), the ceiling of any endpoint on that HTTP stack: its rate
against SMTP's says how much of the 0.8x target the stack leaves, and the
SendGrid route's rate against it says what our app and endpoint cost over
that stack. Wake: a pending
``GET /api/messages/{email}?wait=10`` (requests, keep-alive) woken by one
provider send (requests, keep-alive) or by one SMTP send (smtplib, persistent),
alternating; the latency runs from the send's answer (the 202, the 250) to the
waiter having the message, as :mod:`bench.latency` measures it.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import smtplib
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import requests

from .ingest import run_clients, send_all
from .machine import SMTP_SOURCE
from .measure import Row, Section, alternate, median, percentile, ratio
from .processes import start_standalone, stop_process
from .servers import Sink

__all__ = ["NAME", "measure", "sendgrid_body"]

NAME = "provider sends"
SMTP = "SMTP (smtp-source)"
SENDGRID = "SendGrid API (curl keep-alive)"
BARE = "bare Starlette 202 on uvicorn (curl keep-alive)"
WAKE_SMTP = "long-poll woken by SMTP"
WAKE_SENDGRID = "long-poll woken by a SendGrid send"
TARGET_RATIO = 0.8
TARGET_WAKE = 1.2  # "as fast as an SMTP delivery": its median within 1.2x of SMTP's, same run
_PENDING = 0.02  # seconds for the waiter's request to reach the server and start waiting
_WAIT = 10.0
_KEY = "SG.bench"


def sendgrid_body(recipient: str, size: int, subject: str = "bench") -> bytes:
    """A SendGrid v3 send of one text part to ``recipient``, padded to ``size`` bytes of JSON."""
    shape: dict[str, object] = {
        "personalizations": [{"to": [{"email": recipient}]}],
        "from": {"email": "app@example.test"},
        "subject": subject,
        "content": [{"type": "text/plain", "value": ""}],
    }
    bare = len(json.dumps(shape, separators=(",", ":")))
    shape["content"] = [{"type": "text/plain", "value": "x" * max(0, size - bare)}]
    return json.dumps(shape, separators=(",", ":")).encode()


class _Standalone:
    """``python -m pytest_tempinbox`` in its own process; its addresses, inboxes and counts."""

    def __init__(self, per_inbox: int) -> None:
        self.process, self.smtp_host, self.smtp_port, self.origin = start_standalone(
            "--max-messages-per-inbox", str(per_inbox)
        )
        self.http = requests.Session()
        self.http.trust_env = False
        self.api = self.origin + "/api"
        self.send_url = self.origin + "/providers/sendgrid/v3/mail/send"

    def generate(self) -> str:
        """A new inbox's address."""
        with self.http.post(self.api + "/generate", timeout=30) as response:
            response.raise_for_status()
            address: str = response.json()["email"]
        return address

    def count_and_delete(self, address: str) -> int:
        """How many messages ``address`` holds, read back through the API; then the inbox goes."""
        with self.http.get(f"{self.api}/messages/{address}", timeout=300) as response:
            response.raise_for_status()
            count = len(response.json())
        self.http.delete(f"{self.api}/delete/{address}", timeout=30).close()
        return count

    def stop(self) -> None:
        """Stop the server (SIGTERM) and wait for it to exit."""
        self.http.close()
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        self.process.communicate(timeout=30)


def _post_all(
    url: str, recipients: list[str], messages: int, size: int, errors: list[str], label: str
) -> float:
    """Run one curl per recipient, each posting its share to ``url``; seconds to the last exit."""
    shares = [messages // len(recipients)] * len(recipients)
    shares[0] += messages - sum(shares)
    with tempfile.TemporaryDirectory(prefix="bench-providers-") as folder:
        configs = []
        for number, (recipient, share) in enumerate(zip(recipients, shares, strict=True)):
            body = Path(folder, f"body{number}.json")
            body.write_bytes(sendgrid_body(recipient, size))
            lines = [
                "silent",
                'request = "POST"',
                'header = "Content-Type: application/json"',
                'header = "Expect:"',  # no 100-continue round trip (older curls ask above 1 KiB)
                f'header = "Authorization: Bearer {_KEY}"',
                f'data-binary = "@{body}"',
                'write-out = "%{http_code}\\n"',
            ]
            lines += [f'url = "{url}"\noutput = "/dev/null"'] * share
            config = Path(folder, f"curl{number}.conf")
            config.write_text("\n".join(lines) + "\n")
            configs.append(config)
        commands = [["curl", "-K", str(config)] for config in configs]
        seconds, outputs = run_clients(commands, errors, label)
    codes = [code for output in outputs for code in output.split()]
    wrong = [code for code in codes if code != "202"]
    if wrong or len(codes) != messages:
        errors.append(
            f"{label}: {len(codes):,} answers to {messages:,} sends,"
            f" {len(wrong):,} not 202: {sorted(set(wrong))[:5]}"
        )
    return seconds


def _rate(
    server: _Standalone, via: str, clients: int, messages: int, size: int, errors: list[str]
) -> Callable[[], float]:
    def one() -> float:
        recipients = [server.generate() for _ in range(clients)]
        if via == SMTP:
            sink = Sink(server.smtp_host, server.smtp_port, recipients, lambda: 0)
            seconds = send_all(sink, messages, size, errors, via)
        else:
            seconds = _post_all(server.send_url, recipients, messages, size, errors, via)
        received = sum(server.count_and_delete(address) for address in recipients)
        if received != messages:
            errors.append(f"{via}: {received:,} of {messages:,} messages arrived")
        return messages / seconds

    return one


def _bare_rate(url: str, clients: int, messages: int, size: int, errors: list[str]) -> float:
    """One round of the same sends to the bare endpoint; msgs/s (nothing is stored to count)."""
    recipients = [f"bare{number}@example.test" for number in range(clients)]
    return messages / _post_all(url, recipients, messages, size, errors, BARE)


def _start_bare() -> tuple[subprocess.Popen[str], str]:
    """The bare Starlette endpoint's process and its send URL, once it listens."""
    process = subprocess.Popen(
        [sys.executable, "-m", "bench.bare_starlette"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert process.stdout is not None
    assert process.stderr is not None
    url = process.stdout.readline().strip()
    if not url.startswith("http://"):
        stop_process(process)
        said = process.stderr.read().strip().splitlines()[-3:]
        raise RuntimeError(
            f"the bare Starlette endpoint did not say where it listens: {url!r}; it said {said!r}"
        )
    return process, url


def _wakes(server: _Standalone, sends: int, errors: list[str]) -> dict[str, list[float]]:
    """Wake ``sends`` pending long-polls each way, alternating; the latencies in seconds."""
    samples: dict[str, list[float]] = {WAKE_SMTP: [], WAKE_SENDGRID: []}
    waiting, sending = requests.Session(), requests.Session()
    waiting.trust_env = sending.trust_env = False
    sending.headers["Authorization"] = f"Bearer {_KEY}"
    with (
        waiting,
        sending,
        smtplib.SMTP(server.smtp_host, server.smtp_port, local_hostname="localhost") as smtp,
    ):

        def once(way: str, number: int) -> float:
            address = server.generate()
            subject = f"wake {number}"
            arrived: list[float] = []

            def wait() -> None:
                url = f"{server.api}/messages/{address}"
                try:
                    with waiting.get(url, params={"wait": str(_WAIT)}, timeout=_WAIT + 10) as got:
                        subjects = [message["subject"] for message in got.json()]
                    arrived.append(time.perf_counter())
                    if subjects != [subject]:
                        errors.append(f"{way}: {subject!r} not answered: {subjects!r:.200}")
                except Exception as exc:
                    errors.append(f"{way}: the wait failed: {exc!r}")

            thread = threading.Thread(target=wait, name="providers-waiter")
            thread.start()
            time.sleep(_PENDING)
            if way == WAKE_SMTP:
                message = (
                    f"From: app@example.test\r\nTo: {address}\r\nSubject: {subject}\r\n\r\nHi."
                )
                smtp.sendmail("app@example.test", [address], message)
            else:
                body = sendgrid_body(address, 0, subject)
                headers = {"Content-Type": "application/json"}
                with sending.post(server.send_url, data=body, headers=headers, timeout=30) as sent:
                    if sent.status_code != 202:
                        errors.append(f"{way}: answered {sent.status_code}: {sent.text[:200]}")
            done = time.perf_counter()
            thread.join(_WAIT + 15)
            server.count_and_delete(address)
            if not arrived:
                errors.append(f"{way}: {subject!r} never arrived")
                return float("nan")
            return arrived[0] - done

        for way in samples:  # untimed: the first of each way warms its path
            once(way, -1)
        for number in range(sends):
            order = list(samples) if number % 2 == 0 else list(samples)[::-1]
            for way in order:
                samples[way].append(once(way, number))
            if (number + 1) % 50 == 0 or number + 1 == sends:
                line = "  ".join(
                    f"{way}: median {median(values) * 1000:.2f} ms"
                    for way, values in samples.items()
                )
                print(f"  wake {number + 1}/{sends}: {line}", flush=True)
    return samples


def measure(
    *, rounds: int, messages: int, sends: int, clients: int = 4, size: int = 1024
) -> Section:
    """Compare the SendGrid route's rate to SMTP's, and the wake of a long-poll by each."""
    print(
        f"{NAME}: {messages:,} sends of {size} B from {clients} processes per way, {rounds} rounds;"
        f" {sends} long-poll wakes per way"
    )
    section = Section(NAME)
    for program, package in ((SMTP_SOURCE, "postfix"), ("curl", "curl")):
        if not shutil.which(program) and not os.access(program, os.X_OK):
            section.errors.append(f"{NAME}: {program} is not installed (Debian package {package})")
            return section
    server = _Standalone(per_inbox=messages)
    bare, bare_url = _start_bare()
    try:
        contenders = {
            via: _rate(server, via, clients, messages, size, section.errors)
            for via in (SMTP, SENDGRID)
        }
        contenders[BARE] = lambda: _bare_rate(bare_url, clients, messages, size, section.errors)
        samples = alternate(contenders, rounds, label="providers", unit=" msg/s")
        stop_process(bare)  # its cores back for the wakes; the finally finds it stopped
        wakes = _wakes(server, sends, section.errors)
    finally:
        stop_process(bare)
        server.stop()
    medians = {via: median(values) for via, values in samples.items()}
    to_smtp = ratio(medians[SENDGRID], medians[SMTP])
    to_bare = ratio(medians[SENDGRID], medians[BARE])
    bare_to_smtp = ratio(medians[BARE], medians[SMTP])
    section.rows.append(Row(NAME, SMTP, f"{medians[SMTP]:,.0f} msg/s"))
    section.rows.append(Row(NAME, BARE, f"{medians[BARE]:,.0f} msg/s", f"{bare_to_smtp:.2f}x SMTP"))
    passed = to_smtp >= TARGET_RATIO
    section.rows.append(
        Row(
            NAME,
            SENDGRID,
            f"{medians[SENDGRID]:,.0f} msg/s",
            f"{to_smtp:.2f}x SMTP, {to_bare:.2f}x the bare endpoint",
            f">= {TARGET_RATIO:.1f}x SMTP",
            passed,
            f"{to_smtp:.2f}x SMTP (target {TARGET_RATIO:.1f}x)",
        )
    )
    summary: dict[str, dict[str, float]] = {}
    for way, values in wakes.items():
        valid = [value for value in values if value == value]  # drop the nan of a lost one
        middle, p99 = median(valid), percentile(valid, 0.99)
        summary[way] = {"median_ms": round(middle * 1000, 3), "p99_ms": round(p99 * 1000, 3)}
    smtp_wake, api_wake = summary[WAKE_SMTP], summary[WAKE_SENDGRID]
    section.rows.append(
        Row(
            NAME,
            WAKE_SMTP,
            f"median {smtp_wake['median_ms']:.2f} ms, p99 {smtp_wake['p99_ms']:.2f} ms",
        )
    )
    wake_ratio = ratio(api_wake["median_ms"], smtp_wake["median_ms"])
    section.rows.append(
        Row(
            NAME,
            WAKE_SENDGRID,
            f"median {api_wake['median_ms']:.2f} ms, p99 {api_wake['p99_ms']:.2f} ms",
            f"median {wake_ratio:.2f}x SMTP's",
            f"median <= {TARGET_WAKE:.1f}x SMTP's",
            wake_ratio <= TARGET_WAKE,
            f"median {wake_ratio:.2f}x SMTP's (target {TARGET_WAKE:.1f}x)",
        )
    )
    section.data = {
        "clients": clients,
        "messages": messages,
        "message_bytes": size,
        "rounds": rounds,
        "samples_msgs_per_s": samples,
        "median_msgs_per_s": medians,
        "ratio_to_smtp": to_smtp,
        "ratio_to_bare_starlette": to_bare,
        "bare_starlette_to_smtp": bare_to_smtp,
        "wake_sends": sends,
        "wake_summary": summary,
        "wake_samples_ms": {
            way: [round(value * 1000, 3) for value in values] for way, values in wakes.items()
        },
    }
    return section
