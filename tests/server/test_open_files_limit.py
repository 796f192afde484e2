"""At its limit of open files the standalone server refuses new connections and serves the rest.

Each test runs ``python -m pytest_tempinbox`` with a limit of
64 open files (soft and hard, so that the command cannot raise it) and holds
SMTP sessions open until the server has no descriptor left for the next one.
"""

from __future__ import annotations

import re
import signal
import smtplib
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest
import requests

from pytest_tempinbox.server.sockets import HEADROOM

from ..helpers import Standalone, make_message

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="RLIMIT_NOFILE is POSIX")

LIMIT = 64


class AtTheLimit:
    """A standalone server with 64 open files at most, its API session and an inbox, filled up.

    ``held`` are the SMTP sessions it accepted (greeted with 220), and
    ``refused`` the reply of the first one it could not accept.
    """

    def __init__(self, loop: str = "asyncio") -> None:
        self.process = Standalone(
            "--smtp-port", "0", "--api-port", "0", "--loop", loop, open_files=(LIMIT, LIMIT)
        )
        self.host, self.port, self.api = self.process.read_addresses()
        self.session = requests.Session()  # its connection is open before the limit
        self.address = self.session.post(self.api + "/generate", timeout=5).json()["email"]
        self.held: list[smtplib.SMTP] = []
        self.refused: tuple[int, str] | None = None
        while self.refused is None and len(self.held) < 2 * LIMIT:
            self.refused = self.connect()

    def connect(self) -> tuple[int, str] | None:
        """Open one more SMTP session: None when it is greeted (and held), else its reply."""
        try:
            self.held.append(smtplib.SMTP(self.host, self.port, timeout=5))
        except smtplib.SMTPConnectError as exc:
            error = exc.smtp_error
            return exc.smtp_code, error.decode() if isinstance(error, bytes) else error
        except smtplib.SMTPServerDisconnected:
            return 0, "closed without a reply"
        return None

    def stop(self) -> str:
        """Close the held sessions, stop the server, and return its stderr."""
        for session in self.held:
            session.close()
        self.session.close()
        status, _, stderr = self.process.stop(signal.SIGTERM)
        assert status == 0, stderr
        return stderr


@pytest.fixture(params=["asyncio", "uvloop"])
def at_the_limit(request: pytest.FixtureRequest) -> Iterator[AtTheLimit]:
    """A standalone server at its limit of open files, on asyncio's loop and on uvloop.

    On asyncio's loop the listening sockets refuse; on uvloop, whose listeners
    accept in libuv, the SMTP and HTTP protocols do.
    """
    if request.param == "uvloop":
        pytest.importorskip("uvloop")
    server = AtTheLimit(request.param)
    yield server
    if server.process.process.poll() is None:
        server.stop()


def test_a_new_smtp_connection_gets_421_at_the_limit(at_the_limit: AtTheLimit) -> None:
    assert at_the_limit.refused is not None, "64 open files and 128 sessions all accepted"
    code, text = at_the_limit.refused
    assert (code, text) == (421, "4.7.0 tempinbox.test Too many open files, try again later")
    # The last HEADROOM descriptors are the server's own, never a connection's.
    assert 0 < len(at_the_limit.held) < LIMIT - HEADROOM


def test_every_further_connection_is_refused_too(at_the_limit: AtTheLimit) -> None:
    replies = {at_the_limit.connect() for _ in range(20)}
    assert replies == {at_the_limit.refused}


def test_a_new_http_connection_gets_a_503_problem_at_the_limit(at_the_limit: AtTheLimit) -> None:
    response = requests.get(at_the_limit.api + "/info", timeout=5)
    assert response.status_code == 503, response.text
    assert response.headers["content-type"] == "application/problem+json"
    assert response.headers["retry-after"] == "1"
    assert response.json()["code"] == "too_many_connections"


def test_open_sessions_still_deliver_and_open_http_connections_still_read(
    at_the_limit: AtTheLimit,
) -> None:
    message = make_message(to=at_the_limit.address, subject="at the limit")
    at_the_limit.held[0].send_message(message)
    url = f"{at_the_limit.api}/messages/{at_the_limit.address}"
    response = at_the_limit.session.get(url, timeout=5)
    assert response.status_code == 200, response.text
    assert [message["subject"] for message in response.json()] == ["at the limit"]


def test_connections_are_accepted_again_once_descriptors_are_freed(
    at_the_limit: AtTheLimit,
) -> None:
    for session in at_the_limit.held[:5]:
        session.quit()
    del at_the_limit.held[:5]
    # The server closes its side after its 221: until then, a connect may still be refused.
    deadline = time.monotonic() + 5
    while at_the_limit.connect() is not None:
        assert time.monotonic() < deadline, "no connection accepted after 5 sessions ended"
        time.sleep(0.05)
    assert requests.get(at_the_limit.api + "/info", timeout=5).status_code == 200


def test_the_log_says_it_once_a_second_at_most_with_the_count(at_the_limit: AtTheLimit) -> None:
    for _ in range(200):
        at_the_limit.connect()
    stderr = at_the_limit.stop()
    lines = stderr.splitlines()
    assert 1 <= len(lines) <= 5, stderr[:2000]
    assert "socket.accept() out of system resource" not in stderr
    assert "near the limit of open files (RLIMIT_NOFILE 64): refused" in lines[0]
    refused = sum(int(count) for count in re.findall(r"(\d+) SMTP", stderr))
    assert refused == 201


# --- when accept() itself meets the limit --------------------------------------------------

# A listener whose process has taken every descriptor itself, so that accept() fails
# with EMFILE: with the spare descriptor (``spare`` true) or without, then serves
# for ``seconds``. The headroom is turned off, so only the EMFILE path answers.
EMFILE_LISTENER = """
import asyncio, os, resource, sys
from pytest_tempinbox.server.sockets import Refusals, listen

async def main(spare, seconds):
    resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
    refusals = Refusals()
    if spare:
        refusals.open()
    refusals.ceiling = None
    sock = listen("127.0.0.1", 0, "SMTP", 100, refusals, b"421 4.7.0 busy\\r\\n")
    await asyncio.get_running_loop().create_server(asyncio.Protocol, sock=sock)
    taken = []
    try:
        while True:
            taken.append(os.open(os.devnull, os.O_RDONLY))
    except OSError:
        pass
    print(sock.getsockname()[1], flush=True)
    await asyncio.sleep(seconds)
    refusals.close()

asyncio.run(main(sys.argv[1] == "spare", float(sys.argv[2])))
"""


def emfile_listener(spare: bool, seconds: float) -> tuple[subprocess.Popen[str], int]:
    """The listener above in a child process, and its port once it is full."""
    process = subprocess.Popen(
        [sys.executable, "-c", EMFILE_LISTENER, "spare" if spare else "none", str(seconds)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    return process, int(process.stdout.readline())


def test_at_emfile_the_spare_descriptor_answers_and_closes_each_connection() -> None:
    process, port = emfile_listener(spare=True, seconds=3)
    replies = []
    for _ in range(30):
        with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
            replies.append(sock.makefile("rb").readline())
    _, stderr = process.communicate(timeout=20)
    assert replies == [b"421 4.7.0 busy\r\n"] * 30
    assert "out of system resource" not in stderr
    refused = sum(int(count) for count in re.findall(r"(\d+) SMTP", stderr))
    assert (refused, len(stderr.splitlines()) <= 4) == (30, True), stderr


def test_at_emfile_without_a_spare_asyncio_logs_it_once_a_second_not_per_call() -> None:
    process, port = emfile_listener(spare=False, seconds=3)
    waiting = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(30)]
    _, stderr = process.communicate(timeout=20)
    for sock in waiting:
        sock.close()
    # asyncio pauses the listener a second each time: 3 s, 3 or 4 lines; not 30 a call.
    assert 1 <= stderr.count("socket.accept() out of system resource") <= 4, stderr[:2000]
