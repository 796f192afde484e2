"""Properties of the SMTP listener for any input: the DATA path, and the address reader.

The server is fed arbitrary bodies over a raw socket and through smtplib, and
must store exactly the bytes RFC 5321 says the client sent.
"""

from __future__ import annotations

import asyncio
import json
import re
import smtplib
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import requests
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from pytest_tempinbox.parsing.headers import DOT_ATOM
from pytest_tempinbox.server.inbox_server import InboxServer

from ..helpers import CLIENT_NAME, RawSMTP

CRLF = b"\r\n"


# --- the DATA path, over a real server ----------------------------------------

MAX_LINE = 998  # RFC 5321 4.5.3.1.6: 1000 octets with the CRLF, the stuffed dot not counted
SMTPLIB_MAX_LINE = 400  # smtplib also stuffs dots after bare LFs, which can double a line

LINE_PIECES = st.sampled_from(
    [
        b"",
        b".",
        b"..",
        b". ",
        b".\r",
        b".\n",
        b"\r",
        b"\n",
        b"\n.",
        b"\r.",
        b"\r\r",
        b"\n\n",
        b"\x00",
    ]
)


def _lines(max_line: int) -> st.SearchStrategy[list[bytes]]:
    long_line = st.builds(
        lambda head, size: (head + b"x" * size)[:max_line],
        st.sampled_from([b"", b".", b"\n.", b"\r"]),
        st.integers(max_line - 20, max_line),
    )
    line = st.one_of(
        st.binary(max_size=60),
        LINE_PIECES,
        st.lists(LINE_PIECES, max_size=6).map(b"".join),
        long_line,
    )
    # A CRLF inside a generated piece only ever splits a line into shorter ones.
    return st.lists(line.map(lambda data: data[:max_line]), max_size=30)


@st.composite
def _bodies(draw: st.DrawFn, max_line: int) -> bytes:
    lines = draw(_lines(max_line))
    ending = draw(st.sampled_from([b"", CRLF, b"\r", b"\n", CRLF + CRLF]))
    if lines and ending in (b"\r", b"\n"):
        lines[-1] = lines[-1][: max_line - 1]  # the bare CR or LF joins the last line
    return CRLF.join(lines) + ending


def _stored(wire: bytes) -> bytes:
    """What RFC 5321 4.5.2 makes of DATA lines (terminator excluded): one leading dot removed."""
    assert wire.endswith(CRLF) or not wire
    lines = wire.split(CRLF)[:-1]
    return b"".join((line[1:] if line.startswith(b".") else line) + CRLF for line in lines)


def _dot_stuffed(body: bytes) -> bytes:
    """The DATA lines for ``body``, ending in CRLF (added when missing), dots doubled."""
    if body and not body.endswith(CRLF):
        body += CRLF
    lines = body.split(CRLF)[:-1]
    return b"".join((b"." + line if line.startswith(b".") else line) + CRLF for line in lines)


def _smtplib_wire(body: bytes | str) -> bytes:
    """The DATA lines smtplib's sendmail() writes for ``body`` (see SMTP.sendmail and .data).

    Text has its line endings made CRLF first; bytes are sent as they are. Both
    then have a dot doubled at the start of each line, also after a bare LF.
    """
    if isinstance(body, str):
        body = re.sub(r"(?:\r\n|\n|\r(?!\n))", "\r\n", body).encode("ascii")  # _fix_eols
    quoted = re.sub(rb"(?m)^\.", b"..", body)  # _quote_periods
    return quoted if quoted.endswith(CRLF) else quoted + CRLF


@pytest.fixture(scope="module")
def data_server() -> Iterator[InboxServer]:
    """A server for this module only."""
    with InboxServer() as server:
        yield server


def _generate(server: InboxServer, http: requests.Session) -> str:
    response = http.post(server.api_url + "/generate", timeout=10)
    assert response.status_code == 201, response.text
    email: str = response.json()["email"]
    return email


def _assert_stored(
    server: InboxServer, http: requests.Session, email: str, expected: bytes
) -> None:
    listed = http.get(f"{server.api_url}/messages/{email}", timeout=10)
    assert listed.status_code == 200, listed.text
    assert listed.headers["content-type"].startswith("application/json")
    messages = json.loads(listed.content.decode("utf-8"))  # strict UTF-8, then JSON
    assert isinstance(messages, list)
    assert len(messages) == 1
    assert messages[0]["size"] == len(expected)
    assert messages[0]["envelope"]["rcpt_to"] == [email]
    raw = http.get(f"{server.api_url}/messages/{email}/{messages[0]['id']}/raw", timeout=10)
    assert raw.status_code == 200
    assert raw.content == expected


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_bodies(MAX_LINE))
@example(b"")
@example(b"." + b"x" * (MAX_LINE - 1) + CRLF)  # the longest line, plus its stuffed dot
@example(b".\r\n..\r\n.\n.\r\n\r.\r\n")  # lone dots, and dots after bare CR/LF
@example(b"a\n.\nb\r\n.\rc")  # "<LF>.<LF>" must not end DATA (SMTP smuggling)
def test_data_is_stored_exactly_as_sent_raw(
    data_server: InboxServer, http: requests.Session, body: bytes
) -> None:
    email = _generate(data_server, http)
    wire = _dot_stuffed(body)
    assert max(map(len, wire.split(CRLF)), default=0) <= MAX_LINE + 1
    client = RawSMTP(data_server.smtp_host, data_server.smtp_port)
    try:
        assert client.command("EHLO " + CLIENT_NAME)[0] == 250
        assert client.command("MAIL FROM:<sender@example.test>")[0] == 250
        assert client.command(f"RCPT TO:<{email}>")[0] == 250
        assert client.command("DATA")[0] == 354
        client.send(wire + b".\r\n")  # one write: no waiting on a delayed ACK
        code, text = client.reply()
        assert code == 250, text
        assert client.command("QUIT")[0] == 221
    finally:
        client.close()
    assert _stored(wire) == (body if not body or body.endswith(CRLF) else body + CRLF)
    _assert_stored(data_server, http, email, _stored(wire))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_bodies(SMTPLIB_MAX_LINE), st.booleans())
@example(b"a\n.b\r\n.c", False)  # smtplib doubles the dot after the bare LF too; one comes off
@example(b"a\n.b\r.c\r\n", True)  # as text, the bare LF and CR become CRLF first
def test_data_sent_by_smtplib_is_stored_as_smtplib_sent_it(
    data_server: InboxServer, http: requests.Session, data: bytes, as_text: bool
) -> None:
    email = _generate(data_server, http)
    body: bytes | str = data.decode("ascii") if as_text and data.isascii() else data
    with smtplib.SMTP(
        data_server.smtp_host, data_server.smtp_port, local_hostname=CLIENT_NAME, timeout=10
    ) as client:
        refused = client.sendmail("sender@example.test", [email], body)
    assert refused == {}
    _assert_stored(data_server, http, email, _stored(_smtplib_wire(body)))


# --- the SMTP side ----------------------------------------------------------------


@pytest.fixture(scope="module")
def smtp_protocol() -> Iterator[Any]:
    from pytest_tempinbox.server.smtp.handler import InboxHandler
    from pytest_tempinbox.server.smtp.protocol import TrackedSMTP
    from pytest_tempinbox.server.store.memory.store import Store

    loop = asyncio.new_event_loop()
    handler = InboxHandler(Store())
    yield TrackedSMTP(
        handler, set(), max_connections=1, data_line_limit=1000, hostname="x.test", loop=loop
    )
    loop.close()


# A path's shape, written apart from the server's: "<", then quoted strings or
# characters that are no blank, quote or bracket, then ">" and the end or a blank.
_RFC_5321_PATH = re.compile(r'<("([^"\\\r\n]|\\.)*"|[^\s"<>])*>(\s|\Z)')

_PATH_PIECES = st.sampled_from(
    ["<", ">", "@", "a", "b.c", '"q s"', "\\", " ", "SIZE=10", ":", ",", "@x,@y:", "(c)", "é", ""]
)


@settings(
    max_examples=600, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.one_of(
        st.lists(_PATH_PIECES, max_size=8).map("".join),
        st.text(max_size=20),
        st.tuples(
            st.from_regex(rf"{DOT_ATOM}@{DOT_ATOM}", fullmatch=True),
            st.sampled_from(["", " ", "\t ", " (c)", "(c)", " SIZE=9", " \r\nx", "\r\nx", ">"]),
        ).map(lambda pair: f"<{pair[0]}>{pair[1]}"),
    )
)
@example("<a@b.test> SIZE=100")
@example("<>")
@example("<a b@example.org>")
@example('<"a b"@example.org>')
def test_the_address_reader_of_mail_and_rcpt_is_aiosmtpd_s(smtp_protocol: Any, arg: str) -> None:
    """Our copy of aiosmtpd's _getaddr (without its per-call class) reads as the original.

    Where the original fails with IndexError (a path cut short), ours reads no address.
    Where ``arg`` opens with ``<`` but is no RFC 5321 path (a blank inside the
    brackets, no ``>``, no blank after it: docs/limits.md, "Hostile input"), the
    original repairs it, and ours reads ``("", "")``, which aiosmtpd answers ``501``.
    """
    from aiosmtpd.smtp import SMTP

    def outcome(read: Callable[[str], object]) -> object:
        try:
            return read(arg)
        except Exception as exc:  # the email package raises IndexError on some
            return type(exc)

    path = arg.lstrip()
    if path.startswith("<") and not _RFC_5321_PATH.match(path):
        assert smtp_protocol._getaddr(arg) == ("", "")
        return
    for limit in (0, 3):
        smtp_protocol.local_part_limit = limit
        theirs = outcome(lambda text: SMTP._getaddr(smtp_protocol, text))
        assert outcome(smtp_protocol._getaddr) == ((None, None) if theirs is IndexError else theirs)
