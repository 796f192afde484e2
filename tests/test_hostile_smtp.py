"""The SMTP listener against hostile and broken clients: every bad input gets a clear answer.

Each test speaks the protocol byte by byte over a real socket, with a timeout on
every read, and checks both the reply and what the store holds afterwards.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import socket
import struct
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import requests

from pytest_tempinbox.server.inbox_server import InboxServer

from .helpers import CLIENT_NAME, RawSMTP

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


@pytest.fixture(scope="module")
def long_lines_server() -> Iterator[InboxServer]:
    """A server that allows DATA lines of up to 100,000 octets."""
    with InboxServer(hostname=HOSTNAME, data_line_limit=100_000) as srv:
        yield srv


# --- commands out of order (MAIL before EHLO and friends are in test_smtp.py) ----------------


def test_rcpt_before_ehlo_is_a_bad_sequence(raw_smtp: RawSMTP) -> None:
    assert raw_smtp.command("RCPT TO:<a@tempinbox.test>")[0] == 503


def test_data_before_ehlo_is_a_bad_sequence(raw_smtp: RawSMTP) -> None:
    assert raw_smtp.command("DATA")[0] == 503


def test_data_before_mail_is_a_bad_sequence(server: InboxServer) -> None:
    with session(server) as client:
        assert client.command("DATA")[0] == 503


def test_a_second_mail_inside_a_transaction_is_a_bad_sequence(server: InboxServer) -> None:
    with session(server) as client:
        assert client.command("MAIL FROM:<a@example.com>")[0] == 250
        assert client.command("MAIL FROM:<b@example.com>")[0] == 503


# --- recipients -----------------------------------------------------------------------------


def test_an_unknown_recipient_among_known_ones_is_refused_alone(
    server: InboxServer, http: requests.Session
) -> None:
    first, second = generate(http, server), generate(http, server)
    unknown = "nobody-" + first
    with session(server) as client:
        assert client.command("MAIL FROM:<a@example.com>")[0] == 250
        assert client.command(f"RCPT TO:<{first}>")[0] == 250
        assert enhanced(client.command(f"RCPT TO:<{unknown}>")) == (550, "5.1.1")
        assert client.command(f"RCPT TO:<{second}>")[0] == 250
        assert client.command("DATA")[0] == 354
        client.send(simple_message(first, "mixed"))
        assert client.reply()[0] == 250

    for address in (first, second):
        (found,) = messages(http, server, address)
        assert found["envelope"]["rcpt_to"] == [first, second]
    response = http.get(f"{server.api_url}/messages/{unknown}", timeout=TIMEOUT)
    assert response.status_code == 404


def test_the_recipient_over_the_limit_is_refused_with_452_and_gets_nothing(
    server: InboxServer, http: requests.Session
) -> None:
    addresses = [generate(http, server) for _ in range(DEFAULT_MAX_RECIPIENTS + 1)]
    *allowed, extra = addresses
    with session(server) as client:
        assert client.command("MAIL FROM:<a@example.com>")[0] == 250
        codes = [client.command(f"RCPT TO:<{address}>")[0] for address in allowed]
        assert codes == [250] * DEFAULT_MAX_RECIPIENTS
        assert enhanced(client.command(f"RCPT TO:<{extra}>")) == (452, "4.5.3")
        assert client.command("DATA")[0] == 354
        client.send(simple_message(allowed[0], "many"))
        assert client.reply()[0] == 250

    assert [len(messages(http, server, address)) for address in allowed] == [1] * len(allowed)
    assert messages(http, server, extra) == []


# --- command line length and bytes ----------------------------------------------------------


def test_a_command_line_over_512_octets_is_refused_and_the_session_stays_usable(
    server: InboxServer,
) -> None:
    with session(server) as client:
        assert enhanced(client.command(TOO_LONG_COMMAND)) == (500, "5.5.2")
        assert_session_usable(client)


def test_a_mail_command_over_its_extended_allowance_is_refused(server: InboxServer) -> None:
    # After EHLO, MAIL may be longer by what SIZE (26, RFC 1870) and SMTPUTF8 (10,
    # RFC 6531) add; one octet beyond that is too long.
    allowance = 512 + 26 + 10
    start = b"MAIL FROM:<a@example.com> SIZE="
    line = start + b"0" * (allowance + 1 - len(start) - 1) + b"1"
    assert len(line) == allowance + 1
    with session(server) as client:
        assert enhanced(client.command(line)) == (500, "5.5.2")
        assert_session_usable(client)


def test_an_8_mib_line_is_refused_without_buffering_it(server: InboxServer) -> None:
    chunk = b"x" * 65536
    with session(server) as client:
        gc.collect()
        before = memory_kib("VmRSS")
        # The peak, when it can be measured: a buffer freed before the end still counts.
        field = "VmHWM" if reset_peak_memory() else "VmRSS"
        for _ in range(8 * 1024 * 1024 // len(chunk)):
            client.send(chunk)
        client.send(b"\r\n")
        assert client.reply()[0] == 500
        assert_session_usable(client)
        after = memory_kib(field)
    assert after - before < 4 * 1024, f"{field} grew by {after - before} KiB"


@pytest.mark.parametrize(
    "line",
    [
        "MAIL FROM:<jöhn@exämple.com>".encode(),
        b"MAIL FROM:<\xff\xfe@example.com>",
        b"\xc3\xa9HLO client.test",
    ],
    ids=["utf8-address-without-smtputf8", "invalid-utf8-address", "non-ascii-verb"],
)
def test_non_ascii_bytes_in_a_command_get_a_5xx_and_the_session_stays_usable(
    server: InboxServer, line: bytes
) -> None:
    with session(server) as client:
        code, text = client.command(line)
        assert 500 <= code < 600, (code, text)
        assert_session_usable(client)


# --- address syntax and lengths -------------------------------------------------------------


OVERLONG_ADDRESSES = {
    "local-part-65": "l" * 65 + "@example.com",
    "domain-256": "a@" + domain_of_length(256),
    "path-257": "l" * 64 + "@" + domain_of_length(192),
}


@pytest.mark.parametrize("address", OVERLONG_ADDRESSES.values(), ids=OVERLONG_ADDRESSES.keys())
def test_an_overlong_sender_is_refused_with_553(server: InboxServer, address: str) -> None:
    with session(server) as client:
        assert enhanced(client.command(f"MAIL FROM:<{address}>")) == (553, "5.1.3")
        assert_session_usable(client)


@pytest.mark.parametrize("address", OVERLONG_ADDRESSES.values(), ids=OVERLONG_ADDRESSES.keys())
def test_an_overlong_recipient_is_refused_with_553(server: InboxServer, address: str) -> None:
    with session(server) as client:
        assert client.command("MAIL FROM:<a@example.com>")[0] == 250
        assert enhanced(client.command(f"RCPT TO:<{address}>")) == (553, "5.1.3")
        assert_session_usable(client)


@pytest.mark.parametrize("path", ["<@example.com>", "<user@>"])
def test_a_malformed_sender_is_refused(server: InboxServer, path: str) -> None:
    with session(server) as client:
        code, text = client.command(f"MAIL FROM:{path}")
        assert code in (501, 553), (code, text)


@pytest.mark.parametrize("command", ["MAIL FROM:<", "MAIL FROM:<a@", "RCPT TO:<@"])
def test_a_path_cut_short_is_refused_as_malformed_without_an_error(
    server: InboxServer, command: str, caplog: pytest.LogCaptureFixture
) -> None:
    with session(server) as client:
        if command.startswith("RCPT"):
            assert client.command("MAIL FROM:<a@example.com>")[0] == 250
        assert enhanced(client.command(command)) == (553, "5.1.3")
        assert_session_usable(client)
    assert not [record for record in caplog.records if record.levelno >= logging.ERROR]


@pytest.mark.parametrize("path", ["<@example.com>", "<user@>", "<@tempinbox.test>", "<>"])
def test_a_malformed_recipient_is_refused(server: InboxServer, path: str) -> None:
    with session(server) as client:
        assert client.command("MAIL FROM:<a@example.com>")[0] == 250
        code, text = client.command(f"RCPT TO:{path}")
        assert code in (501, 553), (code, text)


def test_the_null_sender_is_accepted_and_stored_as_empty(
    server: InboxServer, http: requests.Session
) -> None:
    address = generate(http, server)
    with session(server) as client:
        assert client.command("MAIL FROM:<>")[0] == 250
        assert client.command(f"RCPT TO:<{address}>")[0] == 250
        assert client.command("DATA")[0] == 354
        client.send(simple_message(address, "bounce"))
        assert client.reply()[0] == 250
    (found,) = messages(http, server, address)
    assert found["envelope"]["mail_from"] == ""


# --- MAIL parameters ------------------------------------------------------------------------


def test_a_declared_size_over_the_default_limit_is_refused_at_once(server: InboxServer) -> None:
    with session(server) as client:
        reply = client.command(f"MAIL FROM:<a@example.com> SIZE={DEFAULT_MESSAGE_SIZE_LIMIT + 1}")
        assert reply[0] == 552
        assert client.command("MAIL FROM:<a@example.com>")[0] == 250


def test_an_unknown_mail_parameter_is_refused_with_555(server: InboxServer) -> None:
    with session(server) as client:
        assert client.command("MAIL FROM:<a@example.com> FOO=BAR")[0] == 555
        assert client.command("MAIL FROM:<a@example.com>")[0] == 250


# --- unknown commands -----------------------------------------------------------------------


def test_the_fifth_unknown_command_ends_the_session(server: InboxServer) -> None:
    with session(server) as client:
        for _ in range(4):
            assert client.command("XYZZY")[0] == 500
        assert enhanced(client.command("XYZZY")) == (502, "5.5.1")
        assert closed_by_server(client.sock, within=2.0) is not None


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


# --- DATA content ---------------------------------------------------------------------------


SMUGGLING_ENDINGS = {
    "lf-dot-lf": b"\n.\n",
    "cr-dot-lf": b"\r.\n",
    "lf-dot-crlf": b"\n.\r\n",
    "crlf-nul-dot-crlf": b"\r\n\x00.\r\n",
    "crcrlf-dot-crcrlf": b"\r\r\n.\r\r\n",
}


@pytest.mark.parametrize("ending", SMUGGLING_ENDINGS.values(), ids=SMUGGLING_ENDINGS.keys())
def test_a_smuggled_second_message_stays_inside_the_first(
    server: InboxServer, http: requests.Session, ending: bytes
) -> None:
    address = generate(http, server)
    smuggled = (
        f"MAIL FROM:<evil@example.com>\r\nRCPT TO:<{address}>\r\nDATA\r\n"
        f"From: evil@example.com\r\nTo: {address}\r\nSubject: smuggled\r\n\r\nSmuggled body.\r\n"
    ).encode()
    content = (
        f"From: a@example.com\r\nTo: {address}\r\nSubject: outer\r\n\r\nOuter body.".encode()
        + ending
        + smuggled
        + b".\r\n"
    )
    with session(server) as client:
        open_transaction(client, address)
        client.send(content)
        assert client.reply()[0] == 250
        # Had the server ended DATA early, the next replies would answer the smuggled
        # MAIL, RCPT and DATA; the next one must be the answer to QUIT.
        assert client.command("QUIT")[0] == 221

    (found,) = messages(http, server, address)
    raw = raw_of(http, server, address, found["id"])
    assert b"MAIL FROM:<evil@example.com>" in raw
    assert b"Smuggled body." in raw


def test_leading_dots_are_unstuffed_on_the_first_and_last_lines(
    server: InboxServer, http: requests.Session
) -> None:
    address = generate(http, server)
    with session(server) as client:
        open_transaction(client, address)
        client.send(b"..x\r\n...\r\n..x\r\n.\r\n")
        assert client.reply()[0] == 250
    (found,) = messages(http, server, address)
    assert raw_of(http, server, address, found["id"]) == b".x\r\n..\r\n.x\r\n"


def test_an_empty_message_is_stored_with_size_0(
    server: InboxServer, http: requests.Session
) -> None:
    address = generate(http, server)
    with session(server) as client:
        open_transaction(client, address)
        client.send(b".\r\n")
        assert client.reply()[0] == 250
    (found,) = messages(http, server, address)
    assert found["size"] == 0
    assert raw_of(http, server, address, found["id"]) == b""


def test_a_data_line_over_1000_octets_is_refused_after_the_dot(
    server: InboxServer, http: requests.Session
) -> None:
    address = generate(http, server)
    with session(server) as client:
        open_transaction(client, address)
        client.send(b"Subject: long\r\n\r\n" + b"y" * 1001 + b"\r\nafter\r\n.\r\n")
        assert client.reply()[0] == 500
        assert messages(http, server, address) == []

        open_transaction(client, address)
        client.send(simple_message(address, "after the refusal"))
        assert client.reply()[0] == 250
    assert [m["subject"] for m in messages(http, server, address)] == ["after the refusal"]


def test_a_data_line_of_1000_octets_with_its_crlf_is_stored_exactly(
    server: InboxServer, http: requests.Session
) -> None:
    address = generate(http, server)
    content = b"Subject: at the limit\r\n\r\n" + b"z" * 998 + b"\r\n"
    with session(server) as client:
        open_transaction(client, address)
        client.send(content + b".\r\n")
        assert client.reply()[0] == 250
    (found,) = messages(http, server, address)
    assert raw_of(http, server, address, found["id"]) == content


def test_a_raised_data_line_limit_stores_a_5000_octet_line_exactly(
    long_lines_server: InboxServer, http: requests.Session
) -> None:
    address = generate(http, long_lines_server)
    content = b"Subject: long line\r\n\r\n" + b"w" * 5000 + b"\r\n"
    with session(long_lines_server) as client:
        open_transaction(client, address)
        client.send(content + b".\r\n")
        assert client.reply()[0] == 250
    (found,) = messages(http, long_lines_server, address)
    assert raw_of(http, long_lines_server, address, found["id"]) == content


def test_a_raised_data_line_limit_leaves_the_command_line_limit_alone(
    long_lines_server: InboxServer,
) -> None:
    with session(long_lines_server) as client:
        assert enhanced(client.command(TOO_LONG_COMMAND)) == (500, "5.5.2")
        assert_session_usable(client)


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
