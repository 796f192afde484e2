"""Load and lifecycle: many parallel SMTP sessions, stopping under open connections, two servers.

Every test here counts open file descriptors and threads before it starts a
server and checks that both are back where they were once it stopped.
"""

from __future__ import annotations

import os
import smtplib
import socket
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from http.client import HTTPConnection
from typing import Any

import requests

from pytest_tempinbox.server.inbox_server import InboxServer

from ..helpers import CLIENT_NAME, RawSMTP, record

SESSIONS = 20
MESSAGES_PER_SESSION = 1000
INBOXES = 5
FILLER = ("All work and no play makes Jack a dull boy. " * 24)[:900]  # ~1 KiB messages
STOP_BUDGET = 5.0  # seconds; uvicorn's graceful shutdown alone may take 2


def _open_fds() -> list[str]:
    return sorted(os.listdir("/proc/self/fd"))


def _settled(condition: Callable[[], bool], timeout: float = 5.0) -> bool:
    # A closed socket or a joined thread may take a moment to leave the counts.
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


@contextmanager
def _no_leaks() -> Iterator[None]:
    """Check that the block leaves no thread or file descriptor behind that it opened.

    Only what is new counts: other tests' session servers share this process.
    """
    fds, threads = set(_open_fds()), set(threading.enumerate())
    yield
    assert _settled(lambda: not set(threading.enumerate()) - threads), threading.enumerate()
    assert _settled(lambda: not set(_open_fds()) - fds), {
        fd: _describe(fd) for fd in set(_open_fds()) - fds
    }


def _describe(fd: str) -> str:
    """Say what file descriptor ``fd`` is, with its line of /proc/net/* for a socket."""
    try:
        target = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return "(closed)"
    if target.startswith("socket:["):
        inode = target[len("socket:[") : -1]
        for table in ("tcp", "tcp6", "udp", "udp6", "unix"):
            with open(f"/proc/net/{table}") as lines:
                for line in lines:
                    if inode in line.split():
                        return f"{target} {table}: {line.strip()}"
    return target


def _session() -> requests.Session:
    session = requests.Session()
    session.trust_env = False
    return session


def _get(http: requests.Session, url: str) -> tuple[int, Any]:
    """GET ``url``; return the status and the JSON body.

    The response is closed here: one kept alive keeps its socket open after the
    session is closed, which the descriptor count would blame on the server.
    """
    with http.get(url, timeout=60) as response:
        return response.status_code, response.json()


def _generate(http: requests.Session, server: InboxServer) -> str:
    with http.post(server.api_url + "/generate", timeout=10) as response:
        assert response.status_code == 201, response.text
        email: str = response.json()["email"]
    return email


def _refused(host: str, port: int) -> bool:
    try:
        socket.create_connection((host, port), timeout=2).close()
    except OSError:
        return True
    return False


def _message(to: str, sender: int, number: int) -> bytes:
    return (
        f"From: sender{sender}@example.test\r\nTo: {to}\r\n"
        f"Subject: s{sender} m{number}\r\nMessage-ID: <{sender}.{number}@example.test>\r\n\r\n"
        f"{FILLER}\r\n"
    ).encode()


def _send_many(server: InboxServer, inboxes: list[str], sender: int) -> list[tuple[str, str, str]]:
    """Send MESSAGES_PER_SESSION messages over one connection; return (inbox, id, subject) per 250.

    The id is the one the server named in its 250 reply ("queued as ID").
    """
    acknowledged = []
    with smtplib.SMTP(
        server.smtp_host, server.smtp_port, local_hostname=CLIENT_NAME, timeout=30
    ) as client:
        client.ehlo()
        for number in range(MESSAGES_PER_SESSION):
            inbox = inboxes[(sender + number) % len(inboxes)]
            assert client.mail(f"sender{sender}@example.test")[0] == 250
            assert client.rcpt(inbox)[0] == 250
            code, reply = client.data(_message(inbox, sender, number))
            if code == 250:
                id = reply.decode().rsplit(" ", 1)[-1]
                acknowledged.append((inbox, id, f"s{sender} m{number}"))
    return acknowledged


def test_parallel_sessions_lose_no_message() -> None:
    with _no_leaks():
        started = time.monotonic()
        server = InboxServer(max_messages_per_inbox=100_000)
        server.start()
        try:
            with _session() as http:
                inboxes = [_generate(http, server) for _ in range(INBOXES)]
                with ThreadPoolExecutor(SESSIONS) as pool:
                    results = list(
                        pool.map(lambda n: _send_many(server, inboxes, n), range(SESSIONS))
                    )
                sent = time.monotonic()
                acknowledged = [pair for result in results for pair in result]
                assert len(acknowledged) == SESSIONS * MESSAGES_PER_SESSION
                for inbox in inboxes:
                    status, stored = _get(http, f"{server.api_url}/messages/{inbox}")
                    assert status == 200
                    expected = {id: subject for to, id, subject in acknowledged if to == inbox}
                    assert len(expected) == SESSIONS * MESSAGES_PER_SESSION // INBOXES
                    assert {message["id"]: message["subject"] for message in stored} == expected
                    assert len(stored) == len(expected)  # and nothing twice
                stats = _get(http, server.api_url + "/info")[1].get("stats")
                if stats is not None:
                    assert stats["evictions"] == 0
                    assert stats["messages"] == SESSIONS * MESSAGES_PER_SESSION
        finally:
            server.stop()
        assert not server.running
    total = time.monotonic() - started
    print(
        f"\n{SESSIONS * MESSAGES_PER_SESSION} messages: sent in {sent - started:.1f} s,"
        f" checked and stopped in {total - (sent - started):.1f} s"
    )


def _closed_by_peer(sock: socket.socket) -> bool:
    """Tell whether the other end closed ``sock``: reading gives EOF (or a reset), not a wait."""
    sock.settimeout(5)
    try:
        while sock.recv(4096):
            pass  # a last reply (421) may come first
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False
    return True


def test_stop_closes_sessions_that_clients_hold_open() -> None:
    with _no_leaks(), _session() as http:
        server = InboxServer()
        server.start()
        email = _generate(http, server)

        keep_alive = HTTPConnection(server.smtp_host, server.api_port, timeout=10)
        keep_alive.request("GET", "/api/info")
        with keep_alive.getresponse() as answer:
            assert (answer.status, answer.getheader("connection")) == (200, None)
            answer.read()
        assert keep_alive.sock is not None  # HTTP/1.1: the connection stays open

        idle = RawSMTP(server.smtp_host, server.smtp_port)
        assert idle.command("EHLO " + CLIENT_NAME)[0] == 250
        mid_data = RawSMTP(server.smtp_host, server.smtp_port)
        for command, expected in [
            ("EHLO " + CLIENT_NAME, 250),
            ("MAIL FROM:<a@example.test>", 250),
            (f"RCPT TO:<{email}>", 250),
            ("DATA", 354),
        ]:
            assert mid_data.command(command)[0] == expected
        mid_data.send(b"Subject: never finished\r\n\r\nfirst line\r\nsecond line\r\n")

        poll: dict[str, Any] = {}

        def long_poll() -> None:
            connection = HTTPConnection(server.smtp_host, server.api_port, timeout=40)
            try:
                connection.request("GET", f"/api/messages/{email}?wait=30")
                with connection.getresponse() as answer:
                    poll["answer"] = answer.status, answer.read()
            except OSError as exc:
                poll["answer"] = exc
            finally:
                poll["at"] = time.monotonic()
                connection.close()

        poller = threading.Thread(target=long_poll)
        poller.start()
        time.sleep(0.5)  # for the long-poll to reach the server and start waiting
        try:
            assert poller.is_alive()
            stopping = time.monotonic()
            server.stop()
            took = time.monotonic() - stopping
            poller.join(40)
            assert keep_alive.sock is not None
            closed = {
                "keep-alive HTTP": _closed_by_peer(keep_alive.sock),
                "idle SMTP": _closed_by_peer(idle.sock),
                "mid-DATA SMTP": _closed_by_peer(mid_data.sock),
            }
        finally:
            keep_alive.close()
            idle.close()
            mid_data.close()
        print(f"\nstop() with 4 client connections open took {took:.2f} s")
        assert took < STOP_BUDGET
        assert closed == dict.fromkeys(closed, True)
        # The pending wait answered at once with what there was.
        assert poll["answer"] == (200, b"[]")
        assert poll["at"] - stopping < STOP_BUDGET
        assert not server.running
        assert not server.running
        assert _refused(server.smtp_host, server.smtp_port)
        assert _refused(server.smtp_host, server.api_port)
        # The transaction cut short stored nothing.
        assert record(server, email).messages == []


def _roundtrip(server: InboxServer, http: requests.Session) -> str:
    """Generate an address on ``server``, send it a message and read it back."""
    email = _generate(http, server)
    with smtplib.SMTP(server.smtp_host, server.smtp_port, local_hostname=CLIENT_NAME) as client:
        assert client.sendmail("a@example.test", [email], _message(email, 0, 0)) == {}
    status, messages = _get(http, f"{server.api_url}/messages/{email}")
    assert status == 200
    assert [message["subject"] for message in messages] == ["s0 m0"]
    return email


def _is_stranger(server: InboxServer, http: requests.Session, email: str) -> bool:
    """Tell whether ``server`` knows nothing of ``email``: 404 on read, 550 at RCPT."""
    status = _get(http, f"{server.api_url}/messages/{email}")[0]
    with smtplib.SMTP(server.smtp_host, server.smtp_port, local_hostname=CLIENT_NAME) as client:
        client.ehlo()
        client.mail("a@example.test")
        code = client.rcpt(email)[0]
    return status == 404 and code == 550


def test_two_servers_in_one_process_keep_to_themselves() -> None:
    with _no_leaks(), _session() as http:
        first, second = InboxServer(), InboxServer()
        first.start()
        second.start()
        try:
            ports = [first.smtp_port, first.api_port, second.smtp_port, second.api_port]
            assert len(set(ports)) == 4, ports
            on_first, on_second = _roundtrip(first, http), _roundtrip(second, http)
            assert _is_stranger(second, http, on_first)
            assert _is_stranger(first, http, on_second)
        finally:
            first.stop()
        assert _refused(first.smtp_host, first.smtp_port)
        assert _refused(first.smtp_host, first.api_port)
        third = InboxServer()
        third.start()
        try:
            assert {third.smtp_port, third.api_port}.isdisjoint({second.smtp_port, second.api_port})
            assert len({third.smtp_port, third.api_port}) == 2
            on_third = _roundtrip(third, http)
            assert _is_stranger(third, http, on_first)
            assert _is_stranger(third, http, on_second)
            assert _is_stranger(second, http, on_third)
            _roundtrip(second, http)  # still serving after its neighbour stopped
        finally:
            third.stop()
            second.stop()
        assert not first.running
        assert not second.running
        assert not third.running
