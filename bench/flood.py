"""Another tenant under a flood: a long-poll's wake, quiet and while one tenant floods the API.

One ``python -m pytest_tempinbox --tenants`` process with two tenants and
its default rate limits (500 requests a second per token; tenant B, which
generates an inbox for each wake, has 1,000 of its own). Tenant B waits on a fresh inbox of its own
(``GET /api/messages/{email}?wait=10``, requests, keep-alive) and the main
thread sends it one message over smtplib; the wake is the time from
``sendmail`` returning to B's waiter having the message. The same wakes are
measured quiet and while tenant A floods the API from ``_FLOODERS`` ``curl``
processes, each a keep-alive connection sending ``GET /api/inboxes`` as fast
as it is answered (the bench's own load, bounded by those processes): most of
A's requests meet ``429``. Quiet and flooded rounds alternate. Target: B's median wake under
the flood stays under twice its quiet median (issue 31).
"""

from __future__ import annotations

import json
import smtplib
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import requests

from pytest_tempinbox.tenants import hash_line

from .measure import Row, Section, median, percentile
from .processes import start_standalone, stop_process

__all__ = ["NAME", "measure"]

NAME = "another tenant under a flood"
TOKEN_A, TOKEN_B = "tit_bench-flooding-tenant", "tit_bench-waiting-tenant"
TARGET_RATIO = 2.0
_FLOODERS = 2
_FLOOD_REQUESTS = 20_000  # per curl process: more than a round takes
_PENDING = 0.02
_WAIT = 10.0


def _tenants_file(directory: str) -> str:
    path = Path(directory) / "tenants.json"
    tenants = [
        {"name": "flooder", "tokens": [hash_line(TOKEN_A)]},
        # A rate of its own, far above its pace (a generate and a wait every 25 ms or so).
        {
            "name": "waiter",
            "tokens": [hash_line(TOKEN_B)],
            "rate_limits": {"requests_per_second": 1000},
        },
    ]
    path.write_text(json.dumps({"tenants": tenants}))
    return str(path)


class _Flood:
    """Tenant A's requests from ``_FLOODERS`` curl processes until stopped; answers by status."""

    def __init__(self, url: str, folder: str) -> None:
        lines = [
            "silent",
            f'header = "Authorization: Bearer {TOKEN_A}"',
            'write-out = "%{http_code}\\n"',
        ]
        lines += [f'url = "{url}"\noutput = "/dev/null"'] * _FLOOD_REQUESTS
        self.config = Path(folder, "flood.conf")
        self.config.write_text("\n".join(lines) + "\n")
        self.processes: list[subprocess.Popen[str]] = []
        self.statuses: dict[int, int] = {}

    def __enter__(self) -> _Flood:
        self.processes = [
            subprocess.Popen(
                ["stdbuf", "-oL", "curl", "-K", str(self.config)], stdout=subprocess.PIPE, text=True
            )
            for _ in range(_FLOODERS)
        ]
        # stdbuf: each status line is written as it comes, so that a stopped curl loses none.
        time.sleep(0.2)  # the flood reaches its pace
        return self

    def __exit__(self, *exc: object) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.terminate()
            output, _ = process.communicate(timeout=30)
            for code in output.split():
                self.statuses[int(code)] = self.statuses.get(int(code), 0) + 1


class _Server:
    """The standalone server with the two tenants, in its own process."""

    def __init__(self, folder: str) -> None:
        self.process, self.smtp_host, self.smtp_port, origin = start_standalone(
            "--tenants", _tenants_file(folder)
        )
        self.api_url = origin + "/api"


def _wake(server: _Server, smtp: smtplib.SMTP, http: requests.Session, errors: list[str]) -> float:
    """One wake of tenant B's long-poll by a delivery; seconds from ``sendmail`` returning."""
    headers = {"Authorization": f"Bearer {TOKEN_B}"}
    address = http.post(server.api_url + "/generate", headers=headers, timeout=10).json()["email"]
    arrived: list[float] = []

    def wait() -> None:
        url = f"{server.api_url}/messages/{address}"
        try:
            answer = http.get(url, params={"wait": str(_WAIT)}, headers=headers, timeout=_WAIT + 5)
            if answer.status_code == 200 and answer.json():
                arrived.append(time.perf_counter())
            else:
                errors.append(f"tenant B's wait answered {answer.status_code}: {answer.text:.200}")
        except requests.RequestException as exc:
            errors.append(f"tenant B's wait failed: {exc!r}")

    thread = threading.Thread(target=wait)
    thread.start()
    time.sleep(_PENDING)
    smtp.sendmail("app@example.test", [address], f"To: {address}\r\nSubject: wake\r\n\r\nHi.\r\n")
    sent = time.perf_counter()
    thread.join(_WAIT + 10)
    return arrived[0] - sent if arrived else float("nan")


def measure(*, rounds: int, wakes: int) -> Section:
    """``rounds`` alternating quiet and flooded rounds of ``wakes`` wakes each."""
    print(f"{NAME}: {rounds} rounds of {wakes} wakes, quiet and under {_FLOODERS} flooding threads")
    section = Section(NAME)
    samples: dict[str, list[float]] = {"quiet": [], "flood": []}
    statuses: dict[int, int] = {}
    with tempfile.TemporaryDirectory(prefix="bench-flood-") as folder:
        server = _Server(folder)
        try:
            with (
                smtplib.SMTP(server.smtp_host, server.smtp_port) as smtp,
                requests.Session() as http,
            ):
                http.trust_env = False
                _wake(server, smtp, http, section.errors)  # untimed: starts the HTTP side
                for number in range(rounds):
                    for mode in ("quiet", "flood") if number % 2 == 0 else ("flood", "quiet"):
                        if mode == "quiet":
                            samples[mode] += [
                                _wake(server, smtp, http, section.errors) for _ in range(wakes)
                            ]
                            continue
                        with _Flood(server.api_url + "/inboxes", folder) as flood:
                            samples[mode] += [
                                _wake(server, smtp, http, section.errors) for _ in range(wakes)
                            ]
                        for status, count in flood.statuses.items():
                            statuses[status] = statuses.get(status, 0) + count
        finally:
            stop_process(server.process)
    valid = {
        mode: [value for value in values if value == value] for mode, values in samples.items()
    }
    quiet, flooded = median(valid["quiet"]), median(valid["flood"])
    ratio = flooded / quiet if quiet > 0 else float("inf")
    for mode, values in valid.items():
        middle, p99 = median(values), percentile(values, 0.99)
        flood_row = mode == "flood"
        section.rows.append(
            Row(
                NAME,
                f"tenant B's long-poll wake, {mode}",
                f"median {middle * 1000:.2f} ms, p99 {p99 * 1000:.2f} ms",
                f"{ratio:.2f}x quiet" if flood_row else "",
                f"<= {TARGET_RATIO:g}x quiet" if flood_row else "",
                ratio <= TARGET_RATIO if flood_row else None,
                f"{ratio:.2f}x the quiet median (target {TARGET_RATIO:g}x)" if flood_row else "",
            )
        )
    section.data = {
        "rounds": rounds,
        "wakes": wakes,
        "flooders": _FLOODERS,
        "flood_answers_by_status": {
            str(status): count for status, count in sorted(statuses.items())
        },
        "samples_ms": {
            mode: [round(value * 1000, 3) for value in values] for mode, values in samples.items()
        },
    }
    print(f"  tenant A's flood answered: {section.data['flood_answers_by_status']}")
    return section
