"""The readers' service and session over real sockets: lines, limits, STARTTLS, stopping.

A small line protocol written here stands for IMAP and POP3: it greets, echoes
each line, upgrades to TLS on ``TLS``, and says why it ends. The service runs
on a loop in a thread, as in a server.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
from collections.abc import Iterator

import pytest

from pytest_tempinbox.server.counters import ServerCounters
from pytest_tempinbox.server.readers.context import ReaderContext
from pytest_tempinbox.server.readers.passwords import passwords_of
from pytest_tempinbox.server.readers.service import ReaderService
from pytest_tempinbox.server.readers.session import IdleTimeout, LineTooLong, ReaderSession
from pytest_tempinbox.server.sockets import listen
from pytest_tempinbox.server.store.memory.store import Store
from pytest_tempinbox.server.tls import CertificateAuthority, client_context

from ..store_support import ServingLoop

LIMIT = 100


async def echo(session: ReaderSession) -> None:
    """Greet, then echo each line; ``TLS`` upgrades, ``QUIT`` ends."""
    session.write(b"+ hello\r\n")
    while True:
        try:
            line = await session.readline(LIMIT)
        except LineTooLong:
            session.write(b"- too long\r\n")
            return
        except IdleTimeout:
            session.write(b"- idle\r\n")
            return
        if not line or line == b"QUIT\r\n":
            return
        if line == b"TLS\r\n":
            session.write(b"+ go ahead\r\n")
            await session.start_tls()
            continue
        tls = b"tls " if session.tls_active else b""
        session.write(b"= " + tls + line)
        await session.drain()


class Served:
    """An echo service on a free port, and how to reach it."""

    def __init__(self, tls: str = "off", idle_timeout: float = 5.0, max_connections: int = 10):
        self.authority = CertificateAuthority(["localhost", "127.0.0.1"])
        self.loop = ServingLoop()
        store = Store()
        context = ReaderContext(
            store=store,
            hostname="tempinbox.test",
            passwords=passwords_of(store),
            tls_context=None if tls == "off" else self.authority.server_context(),
            implicit_tls=tls == "implicit",
            counters=ServerCounters(),
            tls=tls,
            idle_timeout=idle_timeout,
            max_connections=max_connections,
        )
        sock = listen("127.0.0.1", 0, "TEST", 10)
        self.service = ReaderService(sock, echo, context, name="TEST", busy=b"- busy\r\n")
        self.loop.call(self.service.start())
        self.port = self.service.port

    def connect(self) -> socket.socket:
        return socket.create_connection(("127.0.0.1", self.port), timeout=5)

    def client_tls(self) -> ssl.SSLContext:
        return client_context(self.authority.ca_path)

    def close(self) -> None:
        self.loop.call(self.service.stop())
        self.loop.close()
        self.authority.close()


@pytest.fixture
def served() -> Iterator[Served]:
    made = Served()
    yield made
    made.close()


def lines(conn: socket.socket) -> Iterator[bytes]:
    buffer = conn.makefile("rb")
    while True:
        yield buffer.readline()


def test_lines_are_read_one_at_a_time_whatever_the_splits(served: Served) -> None:
    with served.connect() as conn:
        replies = lines(conn)
        assert next(replies) == b"+ hello\r\n"
        for piece in (b"on", b"e\r\ntw", b"o\r\n", b"three\r\nfour\r\n"):
            conn.sendall(piece)
        assert [next(replies) for _ in range(4)] == [
            b"= one\r\n",
            b"= two\r\n",
            b"= three\r\n",
            b"= four\r\n",
        ]


def test_a_line_over_the_limit_is_answered_and_the_session_ends(served: Served) -> None:
    with served.connect() as conn:
        replies = lines(conn)
        next(replies)
        conn.sendall(b"x" * (LIMIT + 1) + b"\r\n")
        assert next(replies) == b"- too long\r\n"
        assert next(replies) == b""


def test_an_endless_line_is_cut_off_without_being_buffered_whole(served: Served) -> None:
    with served.connect() as conn:
        replies = lines(conn)
        next(replies)
        sent = 0
        try:  # the server closes as the line passes its buffer
            while sent < 64 << 20:
                conn.sendall(b"y" * 65536)
                sent += 65536
        except OSError:
            pass
        assert sent < 64 << 20
        assert next(replies) in (b"- too long\r\n", b"")


def test_a_silent_client_is_told_and_let_go() -> None:
    made = Served(idle_timeout=0.2)
    try:
        with made.connect() as conn:
            replies = lines(conn)
            next(replies)
            assert next(replies) == b"- idle\r\n"
            assert next(replies) == b""
    finally:
        made.close()


def test_connections_over_the_limit_are_told_busy() -> None:
    made = Served(max_connections=1)
    try:
        with made.connect() as first, made.connect() as second:
            assert next(lines(first)) == b"+ hello\r\n"
            assert next(lines(second)) == b"- busy\r\n"
    finally:
        made.close()


def start_tls_and_echo(sent: bytes, then: bytes) -> bytes:
    """Send ``sent`` (the TLS command and what follows it in clear), then ``then`` over TLS.

    Returns the server's answer to ``then``.
    """
    made = Served(tls="starttls")
    try:
        with made.connect() as conn:
            replies = lines(conn)
            next(replies)
            conn.sendall(sent)
            assert next(replies) == b"+ go ahead\r\n"
            with made.client_tls().wrap_socket(conn, server_hostname="localhost") as secure:
                secure.sendall(then)
                return next(lines(secure))
    finally:
        made.close()


def test_start_tls_upgrades_the_session_in_place() -> None:
    assert start_tls_and_echo(b"TLS\r\n", b"hi\r\n") == b"= tls hi\r\n"


def test_what_is_sent_in_clear_after_the_tls_command_is_dropped() -> None:
    answer = start_tls_and_echo(b"TLS\r\ninjected\r\n", b"after\r\n")
    assert answer == b"= tls after\r\n"


def test_implicit_tls_wraps_each_connection_at_accept() -> None:
    made = Served(tls="implicit")
    try:
        with made.client_tls().wrap_socket(made.connect(), server_hostname="localhost") as secure:
            replies = lines(secure)
            assert next(replies) == b"+ hello\r\n"
            secure.sendall(b"hi\r\n")
            assert next(replies) == b"= tls hi\r\n"
    finally:
        made.close()


def test_stop_closes_the_open_sessions(served: Served) -> None:
    with served.connect() as conn:
        replies = lines(conn)
        next(replies)
        served.loop.call(served.service.stop())
        assert next(replies) == b""
    assert not served.service.sessions


def test_a_handler_that_fails_ends_its_session_only(served: Served) -> None:
    async def broken(session: ReaderSession) -> None:
        raise RuntimeError("a bug")

    served.service.handler = broken
    with served.connect() as conn:
        assert next(lines(conn)) == b""
    served.service.handler = echo
    with served.connect() as conn:
        assert next(lines(conn)) == b"+ hello\r\n"


def test_sessions_run_on_the_loop_that_started_the_service(served: Served) -> None:
    seen: list[asyncio.AbstractEventLoop] = []

    async def note(session: ReaderSession) -> None:
        seen.append(asyncio.get_running_loop())

    served.service.handler = note
    with served.connect() as conn:
        next(lines(conn))
    assert seen == [served.loop.loop]
