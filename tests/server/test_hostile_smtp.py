"""The SMTP listener against hostile commands: every bad input gets a clear answer.

Each test speaks the protocol byte by byte over a real socket, with a timeout on
every read, and checks both the reply and what the store holds afterwards.
"""

from __future__ import annotations

import gc
import logging

import pytest
import requests

from pytest_tempinbox.server.inbox_server import InboxServer

from ..helpers import CLIENT_NAME, RawSMTP
from .hostile_smtp_support import (
    DEFAULT_MAX_RECIPIENTS,
    DEFAULT_MESSAGE_SIZE_LIMIT,
    TIMEOUT,
    TOO_LONG_COMMAND,
    assert_session_usable,
    closed_by_server,
    domain_of_length,
    enhanced,
    generate,
    memory_kib,
    messages,
    open_transaction,
    reset_peak_memory,
    session,
    simple_message,
)

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


@pytest.mark.parametrize("greeted", [False, True], ids=["before EHLO", "after EHLO"])
def test_a_command_line_of_512_octets_with_its_crlf_is_the_longest_served(
    server: InboxServer, greeted: bool
) -> None:
    """RFC 5321 4.5.3.1.4 counts the CRLF in the 512 octets, as docs/limits.md does."""
    longest = b"NOOP " + b"x" * (512 - 2 - 5)
    client = RawSMTP(server.smtp_host, server.smtp_port)
    try:
        if greeted:
            assert client.command("EHLO " + CLIENT_NAME)[0] == 250
        assert client.command(longest)[0] == 250
        assert enhanced(client.command(longest + b"x")) == (500, "5.5.2")
        assert_session_usable(client)
    finally:
        client.close()


def test_a_mail_command_over_its_extended_allowance_is_refused(server: InboxServer) -> None:
    # After EHLO, MAIL may be longer by what SIZE (26, RFC 1870) and SMTPUTF8 (10,
    # RFC 6531) add; one octet beyond that, with the CRLF, is too long.
    allowance = 512 + 26 + 10
    start = b"MAIL FROM:<a@example.com> SIZE="
    line = start + b"0" * (allowance - 2 - len(start)) + b"1"
    assert len(line + b"\r\n") == allowance + 1
    with session(server) as client:
        assert enhanced(client.command(line)) == (500, "5.5.2")
        assert_session_usable(client)
        assert client.command(line[:-1])[0] == 250


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
def test_a_path_cut_short_is_a_syntax_error_without_an_error(
    server: InboxServer, command: str, caplog: pytest.LogCaptureFixture
) -> None:
    with session(server) as client:
        if command.startswith("RCPT"):
            assert client.command("MAIL FROM:<a@example.com>")[0] == 250
        assert enhanced(client.command(command)) == (501, "5.5.4")
        assert_session_usable(client)
    assert not [record for record in caplog.records if record.levelno >= logging.ERROR]


@pytest.mark.parametrize(
    "path",
    [
        "<sender@example.org",  # no closing ">"
        "<a@ SIZE=100",  # a parameter inside the brackets
        "<a b@example.org>",  # a blank, unquoted
        "<a@example.org>SIZE=100",  # no blank after ">"
    ],
)
@pytest.mark.parametrize("verb", ["MAIL FROM:", "RCPT TO:"])
def test_a_path_that_is_no_rfc_5321_path_is_a_syntax_error_and_nothing_is_stored(
    server: InboxServer, http: requests.Session, verb: str, path: str
) -> None:
    """RFC 5321 4.1.2: aiosmtpd's reading would repair these, and the mail be stored."""
    address = generate(http, server)
    with session(server) as client:
        if verb == "RCPT TO:":
            assert client.command("MAIL FROM:<a@example.com>")[0] == 250
            path = path.replace("example.org", address.partition("@")[2])
        assert client.command(verb + path) == (
            501,
            f"5.5.4 Syntax: {verb} <address> [SP <mail-parameters>]",
        )
        assert client.command("RCPT TO:<" + address + ">")[0] in (250, 503)
        assert client.command("DATA")[0] == (354 if verb == "RCPT TO:" else 503)
        if verb == "RCPT TO:":
            client.send(b"Subject: one\r\n\r\nx\r\n.\r\n")
            assert client.reply()[0] == 250
    assert len(messages(http, server, address)) == (1 if verb == "RCPT TO:" else 0)


def test_a_quoted_local_part_with_a_blank_is_a_path(
    server: InboxServer, http: requests.Session
) -> None:
    """``"a b"@example.org`` is RFC 5321's Quoted-string: a path, as the blank is quoted."""
    address = generate(http, server)
    with session(server) as client:
        open_transaction(client, address, mail_from='"a b"@example.org')
        client.send(simple_message(address, "quoted"))
        assert client.reply()[0] == 250
    [message] = messages(http, server, address)
    assert message["envelope"]["mail_from"] == '"a b"@example.org'


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
