"""The SMTP listener against hostile DATA: smuggling, dots, empty and overlong lines."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import requests

from pytest_tempinbox.server.inbox_server import InboxServer

from .hostile_smtp_support import (
    HOSTNAME,
    TOO_LONG_COMMAND,
    assert_session_usable,
    enhanced,
    generate,
    messages,
    open_transaction,
    raw_of,
    session,
    simple_message,
)


@pytest.fixture(scope="module")
def long_lines_server() -> Iterator[InboxServer]:
    """A server that allows DATA lines of up to 100,000 octets."""
    with InboxServer(hostname=HOSTNAME, data_line_limit=100_000) as srv:
        yield srv


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
