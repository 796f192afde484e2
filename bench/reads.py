"""Scale of reads: one ``GET /api/messages/{email}`` of an inbox holding 10, 100 and 1,000 messages.

Messages are the memory benchmark's ~2 KiB text + HTML mails, sent over one
smtplib connection. Reads go over HTTP through one keep-alive requests session
and are timed until the whole body is in (JSON decoding, the client's work, is
not timed). Warm: the inbox was read before, so each message's JSON is cached.
Cold: a freshly filled inbox, read for the first time, so every message is
parsed during the read. Compared: the cost per message of the read of 1,000
against that of 100.

Also the parse budget's headroom: how long parsing a message of 2,000
attachments takes (the most the parser lists) against the default budget. A
test in CI cannot say this steadily on a shared machine; the bench reports it.
"""

from __future__ import annotations

import inspect
import json
import random
import smtplib
import time

import requests

from pytest_tempinbox.parsing.message import MAX_ATTACHMENTS, parse_message
from pytest_tempinbox.server.inbox_server import InboxServer

from .measure import Row, Section, median, ratio
from .memory import make_message

__all__ = ["NAME", "measure"]

NAME = "reads"
SIZES = (10, 100, 1000)
# The per-message cost of a read of SIZES[-1] against that of SIZES[-2].
TARGET = 1.2
CACHES = {"warm": "warm (parsed)", "cold": "cold (unparsed)"}
BUDGET: float = inspect.signature(parse_message).parameters["budget"].default


class _Reader:
    def __init__(self, server: InboxServer, smtp: smtplib.SMTP, http: requests.Session) -> None:
        self.server = server
        self.smtp = smtp
        self.http = http
        self.rng = random.Random(20261122)
        self.sent = 0

    def filled(self, count: int) -> str:
        with self.http.post(self.server.api_url + "/generate", timeout=30) as response:
            response.raise_for_status()
            address: str = response.json()["email"]
        for _ in range(count):
            self.sent += 1
            self.smtp.sendmail(
                "app@example.test", [address], make_message(self.rng, self.sent, [address])
            )
        return address

    def read(self, address: str) -> tuple[float, bytes]:
        url = f"{self.server.api_url}/messages/{address}"
        started = time.perf_counter()
        with self.http.get(url, timeout=300) as response:
            body = response.content
        return time.perf_counter() - started, body

    def delete(self, address: str) -> None:
        with self.http.delete(f"{self.server.api_url}/delete/{address}", timeout=30) as response:
            response.raise_for_status()


def measure(*, rounds: int, warm_reads: int) -> Section:
    """Time warm and cold reads of each inbox size; return per-read times and per-message ratios.

    The target: one GET of 1,000 messages costs at most 1.2x per message what
    one of 100 does, parsed (warm) and unparsed (cold). The read of 10 is shown
    for scale.
    """
    print(f"{NAME}: inboxes of {', '.join(map(str, SIZES))} messages, {rounds} rounds")
    section = Section(NAME)
    warm: dict[int, list[float]] = {size: [] for size in SIZES}
    cold: dict[int, list[float]] = {size: [] for size in SIZES}
    with (
        InboxServer() as server,
        requests.Session() as http,
        smtplib.SMTP(server.smtp_host, server.smtp_port, local_hostname="localhost") as smtp,
    ):
        http.trust_env = False
        reader = _Reader(server, smtp, http)
        warm_inboxes = {size: reader.filled(size) for size in SIZES}
        for size, address in warm_inboxes.items():
            _, body = reader.read(address)  # parses and caches every message
            _check(section, body, size, "warm")
        for number in range(rounds):
            for size in SIZES if number % 2 == 0 else SIZES[::-1]:
                address = reader.filled(size)
                seconds, body = reader.read(address)
                cold[size].append(seconds)
                _check(section, body, size, "cold")
                reader.delete(address)
                for _ in range(warm_reads):
                    warm[size].append(reader.read(warm_inboxes[size])[0])
            line = "  ".join(
                f"{size}: cold {cold[size][-1] * 1000:.1f} ms,"
                f" warm {median(warm[size]) * 1000:.2f} ms"
                for size in SIZES
            )
            print(f"  reads round {number + 1}/{rounds}: {line}", flush=True)
    data: dict[str, dict[str, float]] = {}
    for cache, samples in (("warm", warm), ("cold", cold)):
        medians = {size: median(values) for size, values in samples.items()}
        largest, middle, smallest = SIZES[-1], SIZES[-2], SIZES[0]
        scale = ratio(medians[largest], medians[smallest])
        # The per-message cost of one GET of 1,000 messages against that of 100.
        per_message = ratio(medians[largest] / largest, medians[middle] / middle)
        data[cache] = {
            f"median_ms_{size}": round(value * 1000, 3) for size, value in medians.items()
        }
        data[cache]["ratio_1000_to_10"] = round(scale, 2)
        data[cache]["per_message_ratio_1000_to_100"] = round(per_message, 3)
        for size, value in medians.items():
            last = size == largest
            section.rows.append(
                Row(
                    NAME,
                    f"{size:,} messages, {CACHES[cache]}",
                    f"{value * 1000:.2f} ms/read ({value * 1000 / size:.4f} ms/message)",
                    f"{per_message:.2f}x per message of {middle:,}; {scale:.1f}x the read of"
                    f" {smallest:,}"
                    if last
                    else "",
                    f"per message <= {TARGET:.1f}x that of {middle:,}" if last else "",
                    per_message <= TARGET if last else None,
                    f"{CACHES[cache]}: {per_message:.2f}x the per-message cost of a read of"
                    f" {middle:,} (target {TARGET:.1f}x); {value * 1000 / size:.4f} against"
                    f" {medians[middle] * 1000 / middle:.4f} ms per message"
                    if last
                    else "",
                )
            )
    parses = _parse_many_parts(section, rounds)
    section.rows.append(
        Row(
            NAME,
            f"parse of {MAX_ATTACHMENTS:,} attachments",
            f"{median(parses) * 1000:.0f} ms",
            f"{median(parses) / BUDGET:.0%} of the {BUDGET:g} s parse budget",
        )
    )
    data["parse_budget"] = {
        "attachments": MAX_ATTACHMENTS,
        "median_ms": round(median(parses) * 1000, 1),
        "budget_s": BUDGET,
    }
    section.data = {
        "rounds": rounds,
        "warm_reads_per_round": warm_reads,
        "summary": data,
        "samples_ms": {
            cache: {str(size): [round(v * 1000, 3) for v in values] for size, values in s.items()}
            for cache, s in (("warm", warm), ("cold", cold))
        },
    }
    return section


def _parse_many_parts(section: Section, rounds: int) -> list[float]:
    """Time ``rounds`` parses, with the default budget, of a message with the most attachments."""
    parts = "".join(
        f"--b\r\nContent-Type: application/octet-stream\r\n"
        f"Content-Disposition: attachment; filename=f{index}.bin\r\n\r\n{index}\r\n"
        for index in range(MAX_ATTACHMENTS)
    )
    raw = f"Content-Type: multipart/mixed; boundary=b\r\n\r\n{parts}--b--\r\n".encode()
    seconds = []
    for _ in range(rounds):
        started = time.perf_counter()
        parsed = parse_message(raw)
        seconds.append(time.perf_counter() - started)
        if len(parsed.attachments) != MAX_ATTACHMENTS or parsed.defects:
            section.errors.append(
                f"{NAME}: the default budget listed {len(parsed.attachments):,} of"
                f" {MAX_ATTACHMENTS:,} attachments ({'; '.join(parsed.defects)})"
            )
    return seconds


def _check(section: Section, body: bytes, size: int, cache: str) -> None:
    try:
        count = len(json.loads(body))
    except ValueError:
        count = -1
    if count != size:
        section.errors.append(f"{NAME}: a {cache} read of {size} messages returned {count}")
