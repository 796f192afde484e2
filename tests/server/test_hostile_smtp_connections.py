"""The SMTP listener against broken, eager, crowding and idle connections."""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Iterator

import pytest
import requests

from pytest_tempinbox.server.inbox_server import InboxServer

from ..helpers import CLIENT_NAME, RawSMTP
from .hostile_smtp_support import (
    HOSTNAME,
    MAX_CONNECTIONS,
    TIMEOUT,
    closed_by_server,
    generate,
    messages,
    open_transaction,
    session,
    simple_message,
    task_count,
)


@pytest.fixture
def limited_server() -> Iterator[InboxServer]:
    """A server of its own that allows only a few connections at once."""
    with InboxServer(hostname=HOSTNAME, max_connections=MAX_CONNECTIONS) as srv:
        yield srv


@pytest.fixture(scope="module")
def impatient_server() -> Iterator[InboxServer]:
    """A server that closes sessions idle for one second."""
    with InboxServer(hostname=HOSTNAME, smtp_timeout=1.0) as srv:
        yield srv


# --- broken connections ---------------------------------------------------------------------


def test_a_reset_in_the_middle_of_data_stores_nothing_and_leaks_no_task(
    private_server: InboxServer, http: requests.Session
) -> None:
    address = generate(http, private_server)
    before = task_count(private_server)

    client = RawSMTP(private_server.smtp_host, private_server.smtp_port)
    assert client.command(f"EHLO {CLIENT_NAME}")[0] == 250
    open_transaction(client, address)
    client.send(b"Subject: cut short\r\n\r\nline one\r\nline two\r\n")
    # Linger on, timeout 0: close() sends a RST instead of a FIN.
    client.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    client.close()

    # The server notices the reset on its own loop; give it a moment to clean up.
    deadline = time.monotonic() + 2.0
    after = task_count(private_server)
    while after != before and time.monotonic() < deadline:
        time.sleep(0.05)
        after = task_count(private_server)
    assert after == before
    assert messages(http, private_server, address) == []

    with session(private_server) as again:
        open_transaction(again, address)
        again.send(simple_message(address, "after the reset"))
        assert again.reply()[0] == 250
    assert [m["subject"] for m in messages(http, private_server, address)] == ["after the reset"]


class EagerClient(RawSMTP):
    """A raw client that sends its first bytes before reading the greeting."""

    def __init__(self, host: str, port: int, first: bytes) -> None:
        self.sock = socket.create_connection((host, port), timeout=TIMEOUT)
        self.sock.sendall(first)
        self.file = self.sock.makefile("rb")
        self.greeting = self.reply()


def test_a_client_talking_before_the_greeting_still_gets_greeting_then_ehlo_reply(
    server: InboxServer,
) -> None:
    client = EagerClient(server.smtp_host, server.smtp_port, f"EHLO {CLIENT_NAME}\r\n".encode())
    try:
        assert client.greeting[0] == 220
        assert client.reply()[0] == 250
        assert client.command("QUIT")[0] == 221
    finally:
        client.close()


# --- connection limit -----------------------------------------------------------------------


def greeting_of(sock: socket.socket) -> bytes:
    """The first line the server sends on ``sock``."""
    sock.settimeout(TIMEOUT)
    line = b""
    while not line.endswith(b"\n"):
        data = sock.recv(1)
        if not data:
            break
        line += data
    return line


def test_a_connection_over_the_limit_gets_421_and_is_closed(limited_server: InboxServer) -> None:
    address = (limited_server.smtp_host, limited_server.smtp_port)
    clients = [RawSMTP(*address) for _ in range(MAX_CONNECTIONS)]
    try:
        assert [client.greeting[0] for client in clients] == [220] * MAX_CONNECTIONS
        with socket.create_connection(address, timeout=TIMEOUT) as extra:
            assert greeting_of(extra).startswith(b"421 4.7.0 ")
            assert closed_by_server(extra, within=2.0) is not None

        leaving = clients.pop()
        assert leaving.command("QUIT")[0] == 221
        assert closed_by_server(leaving.sock, within=2.0) is not None
        leaving.close()
        # The server learns of the close on its own loop: allow it a moment.
        deadline = time.monotonic() + 1.0
        while True:
            with socket.create_connection(address, timeout=TIMEOUT) as newcomer:
                greeting = greeting_of(newcomer)
            if greeting.startswith(b"220 ") or time.monotonic() > deadline:
                break
            time.sleep(0.02)
        assert greeting.startswith(b"220 "), greeting
    finally:
        for client in clients:
            client.close()


def test_a_burst_of_connections_gets_exactly_the_limit_served(
    limited_server: InboxServer,
) -> None:
    address = (limited_server.smtp_host, limited_server.smtp_port)
    sockets = [socket.create_connection(address, timeout=TIMEOUT) for _ in range(20)]
    try:
        codes = [greeting_of(sock)[:3] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()
    assert codes.count(b"220") == MAX_CONNECTIONS, codes
    assert codes.count(b"421") == 20 - MAX_CONNECTIONS, codes


# --- idle timeout ---------------------------------------------------------------------------


def test_an_idle_session_is_closed_after_the_timeout(impatient_server: InboxServer) -> None:
    client = RawSMTP(impatient_server.smtp_host, impatient_server.smtp_port)
    try:
        elapsed = closed_by_server(client.sock, within=5.0)
    finally:
        client.close()
    assert elapsed is not None, "the server kept an idle session open"
    assert 0.5 < elapsed < 2.0


def test_a_client_trickling_bytes_without_a_command_is_closed(
    impatient_server: InboxServer,
) -> None:
    client = RawSMTP(impatient_server.smtp_host, impatient_server.smtp_port)
    try:
        elapsed = closed_by_server(client.sock, within=5.0, trickle=b"x")
    finally:
        client.close()
    assert elapsed is not None, "a byte every 0.3 s kept the session open"
    assert elapsed < 3.0
