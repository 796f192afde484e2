"""The generated test suites: the same email tests written for each contender, and plain ones.

Every email test gets a fresh address (an inbox of its own where the contender
has them), sends one message with smtplib and checks that it arrived. The
sources are generated as text; each suite is a directory with an empty
``pytest.ini`` so that no outer configuration applies.
"""

from __future__ import annotations

from pathlib import Path

__all__ = [
    "DJANGO_SUITES",
    "SINK_ENVIRONMENT",
    "SUITES",
    "write_django_suite",
    "write_plain_suite",
    "write_suite",
]

SINK_ENVIRONMENT = "TEMPINBOX_BENCH_SINK"

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

# The physical floor: smtp-sink, another process that the bench started; nothing to check.
_SINK_CONFTEST = f"""\
import os

import pytest


@pytest.fixture(scope="session")
def sink():
    host, _, port = os.environ["{SINK_ENVIRONMENT}"].rpartition(":")
    return host, int(port)
"""

_SINK = """

def test_mail_{n}(sink):
    send(sink[0], sink[1], "user{n}@example.test", "hello {n}")
"""

_PLAIN = """

def test_plain_{n}():
    assert {n} + 1 == {m}
"""

# contender -> (the test's template, the conftest or None)
SUITES: dict[str, tuple[str, str | None]] = {
    "floor (bare aiosmtpd)": (_FLOOR, _FLOOR_CONFTEST),
    "pytest-tempinbox": (_OURS, None),
    # The same, the server on asyncio's own loop: what an install without uvloop gets.
    "pytest-tempinbox (asyncio loop)": (_OURS, None),
    "smtpdfix": (_SMTPDFIX, None),
    "pytest-localserver": (_LOCALSERVER, None),
    "smtp-sink": (_SINK, _SINK_CONFTEST),
}

_DJANGO_SETTINGS = """\
SECRET_KEY = "only-for-the-bench"
INSTALLED_APPS = []
DATABASES = {}
USE_TZ = True
EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
DEFAULT_FROM_EMAIL = "app@example.test"
"""

_DJANGO_INI = """\
[pytest]
DJANGO_SETTINGS_MODULE = bench_django_settings
pythonpath = .
"""

_DJANGO_SEND = """\
from django.core.mail import send_mail
"""

_DJANGO_LOCMEM = """

def test_mail_{n}(mailoutbox):
    send_mail("hello {n}", "Hello.", "app@example.test", ["user{n}@example.test"])
    assert mailoutbox[-1].to == ["user{n}@example.test"]
    assert mailoutbox[-1].subject == "hello {n}"
"""

_DJANGO_OURS = """

def test_mail_{n}(tempinbox_django, tempinbox):
    send_mail("hello {n}", "Hello.", "app@example.test", [tempinbox.address])
    assert tempinbox.wait_for_message().subject == "hello {n}"
"""

# Django's SMTP backend pointed at smtp-sink, with the DNS name faked as
# pytest-django's mailoutbox and tempinbox_django both do.
_DJANGO_SINK_CONFTEST = f"""\
import os

import pytest


@pytest.fixture
def django_sink(settings, django_mail_patch_dns):
    host, _, port = os.environ["{SINK_ENVIRONMENT}"].rpartition(":")
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST = host
    settings.EMAIL_PORT = int(port)
"""

_DJANGO_SINK = """

def test_mail_{n}(django_sink):
    send_mail("hello {n}", "Hello.", "app@example.test", ["user{n}@example.test"])
"""

# contender -> (the test's template, the conftest or None)
DJANGO_SUITES: dict[str, tuple[str, str | None]] = {
    "Django locmem (mailoutbox)": (_DJANGO_LOCMEM, None),
    "Django SMTP to pytest-tempinbox": (_DJANGO_OURS, None),
    "Django SMTP to smtp-sink": (_DJANGO_SINK, _DJANGO_SINK_CONFTEST),
}


def _directory(path: Path, ini: str = "[pytest]\n") -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / "pytest.ini").write_text(ini)
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


def write_django_suite(path: Path, contender: str, tests: int) -> Path:
    """Write ``contender``'s Django suite of ``tests`` tests, with its settings, into ``path``."""
    template, conftest = DJANGO_SUITES[contender]
    directory = _directory(path, _DJANGO_INI)
    (directory / "bench_django_settings.py").write_text(_DJANGO_SETTINGS)
    if conftest is not None:
        (directory / "conftest.py").write_text(conftest)
    body = "".join(template.format(n=number) for number in range(tests))
    (directory / "test_mail.py").write_text(_DJANGO_SEND + body)
    return directory


def write_plain_suite(path: Path, tests: int) -> Path:
    """Write ``tests`` tests that use no fixture at all into the directory ``path``."""
    directory = _directory(path)
    body = "".join(_PLAIN.format(n=number, m=number + 1) for number in range(tests))
    (directory / "test_plain.py").write_text(body.lstrip("\n"))
    return directory
