"""Helpers for the tests: building and sending mail, and a line-level SMTP client."""

from __future__ import annotations

import functools
import os
import re
import shutil
import smtplib
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from email.message import EmailMessage
from typing import Any

import pytest

from pytest_tempinbox.server.inbox_server import InboxServer
from pytest_tempinbox.server.store.memory.inbox_record import InboxRecord
from pytest_tempinbox.server.store.memory.store import Store

# smtplib's default local_hostname is socket.getfqdn(), which can take seconds.
CLIENT_NAME = "client.test"

TIMER_SLACK = 0.005
"""How early a server-side delay may end by ``time.monotonic()``: uvloop's timers count
from the loop's clock as of its last turn, in milliseconds (0.3998 s was seen for 0.4 s)."""


def make_message(
    to: str, subject: str = "Hello", body: str = "Hi there.\n", sender: str = "app@example.com"
) -> EmailMessage:
    """Build a simple text message."""
    message = EmailMessage()
    message["From"] = sender
    message["To"] = to
    message["Subject"] = subject
    message.set_content(body)
    return message


def message_json(**fields: Any) -> dict[str, Any]:
    """A message's JSON object as the server serves it, with ``fields`` replacing the defaults."""
    data: dict[str, Any] = {
        "id": "0001",
        "inbox": "user@tempinbox.test",
        "subaddress": None,
        "envelope": {"mail_from": "app@example.com", "rcpt_to": ["user@tempinbox.test"]},
        "message_id": None,
        "from": {"name": None, "email": "app@example.com"},
        "to": [],
        "cc": [],
        "reply_to": [],
        "subject": "Hello",
        "date": None,
        "received_at": "2026-01-02T00:00:00.000Z",
        "text": None,
        "html": None,
        "headers": {},
        "attachments": [],
        "links": [],
        "link_details": [],
        "codes": [],
        "size": 100,
        "defects": [],
        "unsubscribe": None,
        "dkim": {"result": "none", "domain": None, "selector": None, "reason": None},
        "provider": None,
    }
    data.update(fields)
    return data


def record(server: InboxServer, address: str) -> InboxRecord:
    """The memory store's own record of the inbox at ``address``, for tests of its insides."""
    assert isinstance(server.store, Store), "a test of the memory store's insides"
    return server.store.get(address)


def send(server: InboxServer, message: EmailMessage, to: Sequence[str] | None = None) -> None:
    """Send ``message`` over a new SMTP connection."""
    with smtplib.SMTP(server.smtp_host, server.smtp_port, local_hostname=CLIENT_NAME) as client:
        client.send_message(message, to_addrs=to)


class RawSMTP:
    """A line-level SMTP client over a plain socket, for exact command and reply tests."""

    def __init__(self, host: str, port: int) -> None:
        self.sock = socket.create_connection((host, port), timeout=10)
        self.file = self.sock.makefile("rb")
        self.greeting = self.reply()

    def reply(self) -> tuple[int, str]:
        """Read one (possibly multi-line) reply: its code and its text lines joined by newlines."""
        lines = []
        while True:
            line = self.file.readline()
            if not line:
                raise ConnectionError("the server closed the connection")
            lines.append(line[4:].rstrip(b"\r\n").decode("utf-8", "replace"))
            if line[3:4] != b"-":
                return int(line[:3]), "\n".join(lines)

    def send(self, data: bytes) -> None:
        """Send bytes as they are."""
        self.sock.sendall(data)

    def command(self, line: str | bytes) -> tuple[int, str]:
        """Send one command line (CRLF added) and read the reply."""
        self.send((line.encode() if isinstance(line, str) else line) + b"\r\n")
        return self.reply()

    def close(self) -> None:
        """Close the connection."""
        self.file.close()
        self.sock.close()


STARTUP_TIMEOUT = 30


def _limit_files(limits: tuple[int, int]) -> None:
    """In the child before it runs: its soft and hard limits of open files."""
    import resource

    resource.setrlimit(resource.RLIMIT_NOFILE, limits)


class Standalone:
    """A ``python -m pytest_tempinbox`` subprocess and the addresses it printed.

    ``open_files`` sets its soft and hard limits of open files (POSIX only).
    """

    def __init__(self, *args: str, open_files: tuple[int, int] | None = None) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "pytest_tempinbox", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
            preexec_fn=None if open_files is None else functools.partial(_limit_files, open_files),
        )
        self.lines: list[str] = []

    def read_addresses(self) -> tuple[str, int, str]:
        """Wait for the two address lines; return SMTP host, SMTP port and the API URL."""
        assert self.process.stdout is not None
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while len(self.lines) < 2 and time.monotonic() < deadline:
            line = self.process.stdout.readline()
            if not line:
                break
            self.lines.append(line)
        text = "".join(self.lines)
        smtp = re.search(r"smtps?://([\d.]+):(\d+)", text)
        api = re.search(r"(https?://[\d.]+:\d+/api)", text)
        assert smtp, f"no SMTP address line in {text!r}"
        assert api, f"no API URL line in {text!r}"
        return smtp.group(1), int(smtp.group(2)), api.group(1)

    def stop(self, sig: int) -> tuple[int, float, str]:
        """Send ``sig``; return the exit status, the seconds it took and stderr."""
        started = time.monotonic()
        self.process.send_signal(sig)
        _, stderr = self.process.communicate(timeout=20)
        return self.process.returncode, time.monotonic() - started, stderr


def run_swaks(
    server: InboxServer, address: str, *extra: str, timeout: float = 10.0
) -> subprocess.CompletedProcess[str]:
    """Send one message with swaks to ``address``; skip the test where swaks is not installed.

    ``extra`` are more swaks options (TLS, AUTH, headers). Nothing is asserted:
    the caller reads the exit status and what swaks printed.
    """
    executable = shutil.which("swaks")
    if executable is None:
        pytest.skip("swaks is not installed (Debian package swaks)")
    command = [
        executable,
        "--helo", CLIENT_NAME,
        "--server", f"{server.smtp_host}:{server.smtp_port}",
        "--from", "sender@example.com",
        "--to", address,
        "--timeout", str(int(timeout)),
        *extra,
    ]  # fmt: skip
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout * 2, check=False)
