"""Tools of the hostile SMTP tests: raw sessions, replies, the store's view, memory and tasks."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import requests

from pytest_tempinbox.server.inbox_server import InboxServer

from ..helpers import CLIENT_NAME, RawSMTP

HOSTNAME = "mx.tempinbox.test"
# Seconds: every socket gives up after this instead of hanging the run.
TIMEOUT = 10.0
DEFAULT_MESSAGE_SIZE_LIMIT = 10 * 1024 * 1024
DEFAULT_MAX_RECIPIENTS = 100
# RFC 5321 4.5.3.1.4: a command line is at most 512 octets; this one is over by any count.
TOO_LONG_COMMAND = b"NOOP " + b"x" * 508
MAX_CONNECTIONS = 5


def generate(http: requests.Session, server: InboxServer) -> str:
    """Generate a fresh address on ``server``."""
    response = http.post(server.api_url + "/generate", timeout=TIMEOUT)
    assert response.status_code == 201, response.text
    email: str = response.json()["email"]
    return email


def messages(http: requests.Session, server: InboxServer, address: str) -> list[dict[str, Any]]:
    """The inbox's messages as JSON, fetched at once (no wait)."""
    response = http.get(f"{server.api_url}/messages/{address}", timeout=TIMEOUT)
    assert response.status_code == 200, response.text
    found: list[dict[str, Any]] = response.json()
    return found


def raw_of(http: requests.Session, server: InboxServer, address: str, message_id: str) -> bytes:
    """The raw bytes of one stored message."""
    response = http.get(f"{server.api_url}/messages/{address}/{message_id}/raw", timeout=TIMEOUT)
    assert response.status_code == 200, response.text
    return response.content


def enhanced(reply: tuple[int, str]) -> tuple[int, str]:
    """A reply's code and its first word (the enhanced status code, when there is one)."""
    code, text = reply
    return code, (text.split() or [""])[0]


@contextmanager
def session(server: InboxServer) -> Iterator[RawSMTP]:
    """A raw SMTP connection after a successful EHLO, closed at the end."""
    client = RawSMTP(server.smtp_host, server.smtp_port)
    try:
        assert client.greeting[0] == 220
        assert client.command(f"EHLO {CLIENT_NAME}")[0] == 250
        yield client
    finally:
        client.close()


def open_transaction(client: RawSMTP, *rcpt_to: str, mail_from: str = "a@example.com") -> None:
    """MAIL, RCPT for each recipient, and DATA: the server then waits for the content."""
    assert client.command(f"MAIL FROM:<{mail_from}>")[0] == 250
    for address in rcpt_to:
        assert client.command(f"RCPT TO:<{address}>")[0] == 250
    assert client.command("DATA")[0] == 354


def simple_message(address: str, subject: str) -> bytes:
    """A small message in wire form, ending with the terminating dot line."""
    return (
        f"From: a@example.com\r\nTo: {address}\r\nSubject: {subject}\r\n\r\nBody.\r\n.\r\n"
    ).encode()


def assert_session_usable(client: RawSMTP) -> None:
    """The server still answers commands on this connection."""
    assert client.command("NOOP")[0] == 250


def closed_by_server(sock: socket.socket, within: float, trickle: bytes = b"") -> float | None:
    """Seconds until the server closes ``sock`` (reading any last reply), or None if it did not.

    With ``trickle``, send those bytes every 0.3 s meanwhile, as a slow client would.
    """
    started = time.monotonic()
    sock.settimeout(0.3)
    while time.monotonic() - started < within:
        try:
            if not sock.recv(4096):
                return time.monotonic() - started
        except TimeoutError:
            if trickle:
                try:
                    sock.sendall(trickle)
                except OSError:
                    return time.monotonic() - started
        except OSError:
            return time.monotonic() - started
    return None


def memory_kib(field: str) -> int:
    """A memory figure of this process from /proc/self/status (the server is one of its threads).

    ``VmRSS`` is the resident memory now, ``VmHWM`` its peak since the last
    :func:`reset_peak_memory`.
    """
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise AssertionError(f"no {field} in /proc/self/status")


def reset_peak_memory() -> bool:
    """Reset ``VmHWM`` to the current ``VmRSS``; False where the kernel does not allow it."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as clear_refs:
            clear_refs.write("5")
    except OSError:
        return False
    return True


def task_count(server: InboxServer) -> int:
    """How many asyncio tasks the server's loop holds (counting the one that asks)."""
    loop = server._loop
    assert loop is not None

    async def count() -> int:
        return len(asyncio.all_tasks())

    return asyncio.run_coroutine_threadsafe(count(), loop).result(TIMEOUT)


def domain_of_length(length: int) -> str:
    """A syntactically valid domain of exactly ``length`` characters (labels of at most 63)."""
    labels = []
    remaining = length
    while remaining > 0:
        size = min(63, remaining)
        if remaining - size == 1:
            # A lone last character cannot be both a dot and a label.
            size -= 1
        labels.append("d" * size)
        remaining -= size + 1
    domain = ".".join(labels)
    assert len(domain) == length
    return domain
