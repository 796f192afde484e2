"""The generated test suites: the same email tests written for each contender, and plain ones.

Every email test gets a fresh address (an inbox of its own where the contender
has them), sends one message with smtplib and checks that it arrived. The
sources are generated as text; each suite is a directory with an empty
``pytest.ini`` so that no outer configuration applies.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["SUITES", "write_plain_suite", "write_suite"]

_SEND = """\
import smtplib


def send(host, port, to, subject):
    head = f"From: app@example.test\\r\\nTo: {to}\\r\\nSubject: {subject}\\r\\n"
    message = head + "\\r\\nHello.\\r\\n"
    with smtplib.SMTP(host, port, local_hostname="localhost") as smtp:
        smtp.sendmail("app@example.test", [to], message.encode())
"""

_OURS = """

def test_mail_{n}(tempinbox, tempinbox_server):
    send(tempinbox_server.smtp_host, tempinbox_server.smtp_port, tempinbox.address, "hello {n}")
    assert tempinbox.wait_for_message().subject == "hello {n}"
"""

# The floor: one bare aiosmtpd server for the session, parsing each message into a list.
_FLOOR_CONFTEST = """\
import asyncio
import email
import socket
import threading

import pytest
from aiosmtpd.smtp import SMTP


class Handler:
    def __init__(self):
        self.messages = []

    async def handle_DATA(self, server, session, envelope):
        self.messages.append(email.message_from_bytes(envelope.content))
        return "250 OK"


@pytest.fixture(scope="session")
def floor_server():
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    sock.setblocking(False)
    loop = asyncio.new_event_loop()
    handler = Handler()
    server = loop.run_until_complete(
        loop.create_server(lambda: SMTP(handler, hostname="floor.test", loop=loop), sock=sock)
    )
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    yield sock.getsockname()[1], handler
    loop.call_soon_threadsafe(loop.stop)
    thread.join(10)
    server.close()


@pytest.fixture
def address(request):
    return f"{request.node.name}@floor.test"
"""

_FLOOR = """

def test_mail_{n}(floor_server, address):
    port, handler = floor_server
    send("127.0.0.1", port, address, "hello {n}")
    assert handler.messages[-1]["To"] == address
    assert handler.messages[-1]["Subject"] == "hello {n}"
"""

_SMTPDFIX = """

def test_mail_{n}(smtpd):
    send(smtpd.hostname, smtpd.port, "user{n}@example.test", "hello {n}")
    assert smtpd.messages[-1]["To"] == "user{n}@example.test"
    assert smtpd.messages[-1]["Subject"] == "hello {n}"
"""

_LOCALSERVER = """

def test_mail_{n}(smtpserver):
    host, port = smtpserver.addr
    send(host, port, "user{n}@example.test", "hello {n}")
    assert smtpserver.outbox[-1]["To"] == "user{n}@example.test"
    assert smtpserver.outbox[-1]["Subject"] == "hello {n}"
"""

_PLAIN = """

def test_plain_{n}():
    assert {n} + 1 == {m}
"""

# contender -> (the test's template, the conftest or None)
SUITES: dict[str, tuple[str, str | None]] = {
    "floor (bare aiosmtpd)": (_FLOOR, _FLOOR_CONFTEST),
    "pytest-tempinbox": (_OURS, None),
    "smtpdfix": (_SMTPDFIX, None),
    "pytest-localserver": (_LOCALSERVER, None),
}


def _directory(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / "pytest.ini").write_text("[pytest]\n")
    return path


def write_suite(path: Path, contender: str, tests: int) -> Path:
    """Write ``contender``'s suite of ``tests`` email tests into the directory ``path``."""
    template, conftest = SUITES[contender]
    directory = _directory(path)
    if conftest is not None:
        (directory / "conftest.py").write_text(conftest)
    body = "".join(template.format(n=number) for number in range(tests))
    (directory / "test_mail.py").write_text(_SEND + body)
    return directory


def write_plain_suite(path: Path, tests: int) -> Path:
    """Write ``tests`` tests that use no fixture at all into the directory ``path``."""
    directory = _directory(path)
    body = "".join(_PLAIN.format(n=number, m=number + 1) for number in range(tests))
    (directory / "test_plain.py").write_text(body.lstrip("\n"))
    return directory
