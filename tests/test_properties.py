"""Properties that must hold for any input: the parser, and the DATA path end to end.

The parser is fed arbitrary bytes and plausible-but-hostile MIME; the SMTP
server is fed arbitrary bodies over a raw socket and through smtplib, and must
store exactly the bytes RFC 5321 says the client sent.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import dataclasses
import json
import re
import smtplib
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from email.utils import formataddr, getaddresses
from typing import Any
from unittest import mock
from urllib.parse import quote

import pytest
import requests
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from pytest_tempinbox.parsing import headers as _headers
from pytest_tempinbox.parsing import message as parsing
from pytest_tempinbox.parsing.budget import ParseRun
from pytest_tempinbox.parsing.fast import simple_message
from pytest_tempinbox.parsing.headers import DOT_ATOM, SIMPLE_ADDRESS
from pytest_tempinbox.parsing.message import ParsedMessage, attachment_payload, parse_message
from pytest_tempinbox.server.inbox_server import InboxServer

from .helpers import CLIENT_NAME, RawSMTP

# Far above what any of these inputs needs (a few milliseconds), so that a slow
# CI machine cannot trip it, yet low enough to catch quadratic behaviour.
PARSE_BUDGET = 2.0
CRLF = b"\r\n"

# --- the parser ---------------------------------------------------------------


def _strings(value: object, where: str = "") -> Iterator[tuple[str, str]]:
    """Yield every string inside a parse result, with where it was found."""
    if isinstance(value, str):
        yield where, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(key, f"{where}.<key>")
            yield from _strings(item, f"{where}[{key!r}]")
    elif isinstance(value, (tuple, list)):
        for index, item in enumerate(value):
            yield from _strings(item, f"{where}[{index}]")
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for field in dataclasses.fields(value):
            if field.name not in ("fetch", "fetch_async"):  # download callbacks
                yield from _strings(getattr(value, field.name), f"{where}.{field.name}")
    else:
        assert value is None or isinstance(value, (int, datetime)), (where, value)


def _timed_parse(raw: bytes) -> ParsedMessage:
    started = time.perf_counter()
    parsed = parse_message(raw)
    elapsed = time.perf_counter() - started
    assert elapsed < PARSE_BUDGET, f"parsing {len(raw)} bytes took {elapsed:.2f} s"
    return parsed


def _check_parsed(raw: bytes, parsed: ParsedMessage) -> None:
    for where, text in _strings(parsed, "parsed"):
        # A lone surrogate passes json.dumps but fails the UTF-8 encoding the API does.
        try:
            json.dumps(text, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError as exc:
            raise AssertionError(f"{where} = {text!r} cannot be served as JSON") from exc
    assert len(set(parsed.links)) == len(parsed.links), parsed.links
    for link in parsed.links:
        # Schemes are case-insensitive (RFC 3986, 3.1); the parser keeps the sender's case.
        assert link[:8].lower().startswith(("http://", "https://")), link
    assert len(set(parsed.codes)) == len(parsed.codes), parsed.codes
    for attachment in parsed.attachments:
        described, payload = attachment_payload(raw, attachment.index)
        assert described == attachment
        assert len(payload) == attachment.size


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=2048))
@example(b"")
@example(b"\xff\xfe\x00\r\n\r\n\xed\xa0\x80")  # NUL, BOM-like bytes, UTF-8 of a surrogate
def test_parser_survives_arbitrary_bytes(raw: bytes) -> None:
    _check_parsed(raw, _timed_parse(raw))


CHARSETS = [
    "utf-8",
    "UTF-8",
    "us-ascii",
    "iso-8859-1",
    "windows-1252",
    "koi8-r",
    "shift_jis",
    "euc-jp",
    "gb2312",
    "utf-16",
    "utf-7",
    "x-unknown",
    "",
    '"utf-8"',
    "utf-8*en",
]
ENCODABLE = ["utf-8", "iso-8859-1", "windows-1252", "koi8-r", "shift_jis", "utf-16", "utf-7"]
TRANSFER_ENCODINGS = ["7bit", "8bit", "binary", "base64", "quoted-printable", "x-uuencode", "bogus"]
CONTENT_TYPES = [
    "text/plain",
    "text/plain",
    "text/html",
    "text/html",
    "text/calendar",
    "application/pdf",
    "application/octet-stream",
    "image/png",
    "message/delivery-status",
    "multipart/mixed",  # a multipart without a boundary
    "/",
    "",
]
# Plain text with the things the parser hunts for: links, codes, dates, markup.
WORDS = st.sampled_from(
    [
        "https://example.test/a?b=1&c=2",
        "HTTP://EXAMPLE.TEST/UP",
        "http://x.test/(y)",
        "(https://example.test/p).",
        "<https://example.test/q>",
        "https://",
        "www.example.test",
        "482913",
        "AB12CD",
        "Nov 22, 2026",
        "© 2026",
        "$1234",
        "<a href='https://example.test/h'>x</a>",
        '<a href="https://example.test/&amp;">',
        "<!--",
        "<script>",
        "&#xd800;",
        "=?utf-8?q?hi?=",
        "..",
        ".",
        "--",
        "\t",
        " ",
        "\n",
        "\r",
        "\r\n",
    ]
)
TEXT = st.one_of(
    st.text(max_size=40),
    st.lists(st.one_of(WORDS, st.text(max_size=8)), max_size=12).map(" ".join),
)


def _encode_text(text: str, charset: str) -> bytes:
    try:
        return text.encode(charset or "utf-8", "replace")
    except LookupError:
        return text.encode("utf-8", "surrogatepass")


@st.composite
def encoded_words(draw: st.DrawFn) -> str:
    """An RFC 2047 encoded word: well formed, or broken in one of the usual ways."""
    charset = draw(st.sampled_from(CHARSETS)) or "utf-8"
    data = _encode_text(draw(TEXT), charset.strip('"').split("*")[0])
    if draw(st.booleans()):
        encoding, payload = "B", base64.b64encode(data).decode()
        payload = payload[: draw(st.integers(0, len(payload)))]  # maybe cut short
    else:
        encoding = "Q"
        payload = binascii.b2a_qp(data, header=True).decode("ascii").replace("\n", "")
    return f"=?{charset}?{draw(st.sampled_from([encoding, encoding.lower()]))}?{payload}?="


HEADER_TEXT = st.lists(
    st.one_of(
        TEXT.map(lambda text: text.encode("utf-8", "surrogatepass")),
        encoded_words().map(str.encode),
        st.binary(max_size=12),  # raw 8-bit, control characters, stray CR/LF
        st.sampled_from([b'"', b"<", b">", b",", b";", b":", b"@", b"\r\n ", b"\r\n\t", b"\\"]),
    ),
    max_size=6,
).map(b"".join)

ADDRESS = st.one_of(
    st.sampled_from([b"a@example.test", b"<b@example.test>", b"undisclosed-recipients:;", b""]),
    st.tuples(HEADER_TEXT, st.sampled_from([b"x@example.test", "é@exämple.test".encode()])).map(
        lambda pair: b'"' + pair[0] + b'" <' + pair[1] + b">"
    ),
    HEADER_TEXT,
)
TOP_HEADERS = st.lists(
    st.one_of(
        st.tuples(st.sampled_from([b"From", b"To", b"Cc", b"Reply-To", b"Sender"]), ADDRESS),
        st.tuples(st.sampled_from([b"Subject", b"X-Anything", b"Message-ID"]), HEADER_TEXT),
        st.tuples(
            st.just(b"Date"),
            st.sampled_from(
                [b"Sun, 22 Nov 2026 02:18:31 +0100", b"22 Nov 2026 02:18 -0000", b"yesterday", b""]
            ),
        ),
        st.tuples(st.binary(min_size=1, max_size=10), st.binary(max_size=20)),  # junk names
    ),
    max_size=8,
)


def _header_block(headers: list[tuple[bytes, bytes]], eol: bytes) -> bytes:
    return b"".join(name + b": " + value + eol for name, value in headers)


FILENAMES = st.one_of(
    st.text(max_size=12).map(lambda text: b'"' + text.encode("utf-8", "surrogatepass") + b'"'),
    encoded_words().map(lambda word: b'"' + word.encode() + b'"'),
    st.tuples(st.sampled_from(["utf-8", "iso-8859-1", "x-unknown", ""]), st.text(max_size=8)).map(
        # RFC 2231, percent-encoded UTF-8 whatever the charset says
        lambda pair: f"*={pair[0]}''{quote(pair[1], safe='')}".encode()
    ),
    st.binary(max_size=12),
    st.just(b'"../../etc/passwd"'),
)


def _params(draw: st.DrawFn, charset: str, name: str) -> bytes:
    """``; charset=...`` (the true one or any other) and maybe ``; name=...``/``; filename=...``."""
    params = b""
    if draw(st.booleans()):
        declared = draw(st.one_of(st.just(charset), st.sampled_from(CHARSETS)))
        params += b"; charset=" + declared.encode()
    if draw(st.integers(0, 3)) == 0:
        filename = draw(FILENAMES)
        params += b"; " + name.encode() + (b"" if filename.startswith(b"*") else b"=") + filename
    return params


@st.composite
def leaf_parts(draw: st.DrawFn, eol: bytes) -> bytes:
    """A single-part entity: its headers, a blank line and a body in some transfer encoding."""
    content_type = draw(st.sampled_from(CONTENT_TYPES))
    encoding = draw(st.sampled_from(TRANSFER_ENCODINGS))
    charset = draw(st.sampled_from(ENCODABLE))
    data = draw(
        st.one_of(TEXT.map(lambda text: _encode_text(text, charset)), st.binary(max_size=80))
    )
    if encoding == "base64" and draw(st.booleans()):
        body = base64.encodebytes(data).replace(b"\n", eol)
    elif encoding == "quoted-printable" and draw(st.booleans()):
        body = binascii.b2a_qp(data).replace(b"\n", eol)
    else:
        body = data  # undeclared 8-bit, or not encoded as declared
    headers: list[tuple[bytes, bytes]] = []
    if content_type or draw(st.booleans()):
        headers.append((b"Content-Type", content_type.encode() + _params(draw, charset, "name")))
    headers.append((b"Content-Transfer-Encoding", encoding.encode()))
    disposition = draw(st.sampled_from([None, None, None, b"inline", b"attachment", b";;;="]))
    if disposition is not None:
        headers.append((b"Content-Disposition", disposition + _params(draw, charset, "filename")))
    if draw(st.booleans()):
        headers.append((b"Content-ID", b"<" + draw(HEADER_TEXT) + b">"))
    return _header_block(headers, eol) + eol + body


BOUNDARY = st.one_of(
    st.text(
        alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789'()+_,-./:=? ",
        min_size=1,
        max_size=70,
    ).map(str.encode),
    st.binary(max_size=10),  # empty, 8-bit or otherwise broken
)


def _multipart(draw: st.DrawFn, children: list[bytes], eol: bytes) -> bytes:
    subtype = draw(st.sampled_from([b"mixed", b"alternative", b"related", b"digest", b"report"]))
    boundary = draw(BOUNDARY)
    quoted = draw(st.booleans())
    header = b"Content-Type: multipart/" + subtype + b"; boundary="
    header += (b'"' + boundary + b'"' if quoted else boundary) + eol
    preamble = draw(st.sampled_from([b"", b"This is a multi-part message." + eol]))
    body = preamble + b"".join(b"--" + boundary + eol + child + eol for child in children)
    if draw(st.booleans()):  # the closing delimiter is often forgotten
        body += b"--" + boundary + b"--" + eol + draw(st.sampled_from([b"", b"epilogue" + eol]))
    return header + eol + body


@st.composite
def mime_messages(draw: st.DrawFn) -> bytes:
    """A whole message: top-level headers and a tree of parts, nested a few levels deep."""
    eol = draw(st.sampled_from([b"\r\n", b"\n", b"\r\n", b"\r"]))
    body = draw(_trees(eol, depth=draw(st.integers(0, 4))))
    return _header_block(draw(TOP_HEADERS), eol) + b"MIME-Version: 1.0" + eol + body


def _trees(eol: bytes, depth: int) -> st.SearchStrategy[bytes]:
    leaf = leaf_parts(eol)
    if depth == 0:
        return leaf

    @st.composite
    def node(draw: st.DrawFn) -> bytes:
        kind = draw(st.sampled_from(["leaf", "multipart", "multipart", "rfc822"]))
        if kind == "leaf":
            return draw(leaf)
        if kind == "rfc822":
            inner = draw(_header_block_strategy(eol)) + draw(_trees(eol, depth - 1))
            return b"Content-Type: message/rfc822" + eol + eol + inner
        children = draw(st.lists(_trees(eol, depth - 1), max_size=3))
        return _multipart(draw, children, eol)

    return node()


def _header_block_strategy(eol: bytes) -> st.SearchStrategy[bytes]:
    return TOP_HEADERS.map(lambda headers: _header_block(headers, eol))


# --- the shortcut for the usual message ----------------------------------------

_PRINTABLE = "".join(chr(code) for code in range(0x20, 0x7F)) + "\t"
SIMPLE_CONTENT_TYPES = [
    b"text/plain",
    b"TEXT/Plain",
    b'text/plain; charset="utf-8"',
    b"text/plain; charset=us-ascii",
    b"text/plain;charset=ISO-8859-1",
    b"text/plain; Charset=koi8-r",
    b"text/plain; charset=x-unknown",
    b"text/plain; charset=utf-7",
    b"text/plain; charset=utf-16",
    b"text/plain; charset=name",
    # Not taken by the shortcut:
    b'text/plain; charset="koi8-r',
    b"text/plain ",
    b"text/plain; format=flowed",
    b"text/plain; charset=utf-8; format=flowed",
    b"text/plain; name=a.txt",
    b"text/html",
    b"multipart/mixed; boundary=x",
    b"",
]
SIMPLE_ENCODINGS = [b"7bit", b"8BIT", b"binary", b"quoted-printable", b"base64", b"7bit ", b"x-any"]
_PLAIN_VALUES = st.text(_PRINTABLE, max_size=30).map(str.encode)
SIMPLE_VALUES = {
    b"From": st.one_of(
        st.sampled_from(
            [
                b"a@example.test",
                b"App <app@example.test>",
                b'"Doe, Jane" <jane@example.test>, bob@example.test',
                b"undisclosed-recipients:;",
                b"x@y (comment)",
            ]
        ),
        _PLAIN_VALUES,
    ),
    b"Content-Type": st.sampled_from(SIMPLE_CONTENT_TYPES),
    b"Content-Transfer-Encoding": st.sampled_from(SIMPLE_ENCODINGS),
    b"Date": st.sampled_from([b"Mon, 23 Nov 2026 10:00:00 +0000", b"23 Nov 2026", b"never"]),
    b"Subject": st.one_of(_PLAIN_VALUES, encoded_words().map(str.encode)),
    b"Content-Disposition": st.sampled_from(
        [b"inline", b"attachment", b'attachment; filename="a.txt"', b"inline; filename=b.txt"]
    ),
}
# Bodies that read differently when decoded as quoted-printable or base64.
_ENCODED_LOOKING = st.lists(
    st.sampled_from([b"=3D", b"=E9", b"soft=\r\nbreak", b"SGVsbG8=", b"\r\n", b"Hello "]),
    max_size=6,
).map(b"".join)
SIMPLE_NAMES = [
    b"From",
    b"To",
    b"Cc",
    b"Reply-To",
    b"Subject",
    b"Subject",
    b"Date",
    b"Message-ID",
    b"MIME-Version",
    b"X-Mailer",
]


_RARELY = st.sampled_from([False] * 19 + [True])  # integers() would favour its bounds


def _rarely(draw: st.DrawFn) -> bool:
    return draw(_RARELY)


def _usual_headers(draw: st.DrawFn) -> list[tuple[bytes, bytes]]:
    headers = []
    for _ in range(draw(st.integers(0, 5))):
        name = draw(st.sampled_from(SIMPLE_NAMES))
        key = b"From" if name in (b"To", b"Cc", b"Reply-To") else name
        headers.append((name, draw(SIMPLE_VALUES.get(key, _PLAIN_VALUES))))
    mime = []
    if draw(st.booleans()):
        name = draw(st.sampled_from([b"Content-Type", b"content-type", b"CONTENT-TYPE"]))
        mime.append((name, draw(SIMPLE_VALUES[b"Content-Type"])))
    if draw(st.booleans()):
        encoding = draw(SIMPLE_VALUES[b"Content-Transfer-Encoding"])
        mime.append((b"Content-Transfer-Encoding", encoding))
    if _rarely(draw):
        mime.append((b"Content-Disposition", draw(SIMPLE_VALUES[b"Content-Disposition"])))
    if draw(st.booleans()):
        mime.append((b"Content-ID", b"<part@example.test>"))
    if mime and draw(st.sampled_from([False, False, True])):  # a second one, maybe different
        name = draw(st.sampled_from([name for name, _ in mime]))
        mime.append((name, draw(SIMPLE_VALUES.get(name.title(), _PLAIN_VALUES))))
    return list(draw(st.permutations(headers + mime)))


@st.composite
def usual_messages(draw: st.DrawFn) -> bytes:
    """Messages like an application's notification, and ones a byte or a header away."""
    lines = []
    for name, value in _usual_headers(draw):
        if _rarely(draw):
            name = draw(st.binary(min_size=1, max_size=6))  # "From x", 8-bit, no name
        if _rarely(draw):
            value = draw(HEADER_TEXT)  # encoded words, 8-bit bytes, stray CR or LF
        blanks = draw(st.sampled_from([b" ", b" ", b"", b"\t", b"  "]))
        eol = draw(st.sampled_from([b"\r\n", b"\r\n", b"\n"]))
        if _rarely(draw):
            value += eol + b" folded"
        lines.append(name + b":" + blanks + value + eol)
    separator = b"\r\n" if not _rarely(draw) else draw(st.sampled_from([b"\n", b""]))
    charset = draw(st.sampled_from(ENCODABLE))
    body = draw(
        st.one_of(
            TEXT.map(lambda text: _encode_text(text.replace("\n", "\r\n"), charset)),
            st.binary(max_size=60),
            _ENCODED_LOOKING,
        )
    )
    return b"".join(lines) + separator + body


def _full_parse(raw: bytes) -> ParsedMessage:
    with mock.patch.object(parsing, "simple_message", return_value=None):
        return parse_message(raw, budget=PARSE_BUDGET)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(usual_messages())
@example(b"From: a@example.test\r\nTo: b@example.test\r\nSubject: hi\r\n\r\nHello.\r\n")
@example(b"Subject: 8-bit body\n\nd\xe9j\xe0 vu\x00\r")
@example(b"Subject: tab\t \r\nContent-Type: text/plain; charset=utf-16\r\n\r\n\xff")
@example(b"Content-Type: text/plain; charset=koi8-r\nContent-Type: text/plain\n\n\xd0\xb9")
@example(b"Content-Transfer-Encoding: quoted-printable\r\n\r\ncaf=C3=A9 a_b=\r\nc=3D=\r\n")
def test_the_simple_message_shortcut_parses_as_the_full_parser_does(raw: bytes) -> None:
    """Every message the shortcut takes gives exactly the full parser's result."""
    if simple_message(raw) is not None:
        assert parse_message(raw, budget=PARSE_BUDGET) == _full_parse(raw)


MULTIPART_CONTENT_TYPES = [
    b'multipart/alternative; boundary="=_b"',
    b"multipart/alternative; boundary==_b",
    b'multipart/alternative;\r\n boundary="=_b"',
    b'multipart/alternative;\n\tboundary="=_b"',
    b"Multipart/Mixed; BOUNDARY==_b",
    b'multipart/related; boundary="=_b"',
    # Not taken by the shortcut:
    b'multipart/alternative; boundary="=_b"; charset=utf-8',
    b'multipart/alternative; boundary="=_b" ',
    b'multipart/alternative; boundary="=_b',
    b'multipart/alternative; boundary="=_b "',
    b"multipart/digest; boundary==_b",
    b"multipart/alternative",
]
# Lines of a multipart body: boundary lines and near misses among the text.
_BOUNDARY_LINES = st.sampled_from(
    [b"--=_b", b"--=_b--", b"--=_b \t", b"--=_b-- ", b"--=_bx", b"--=_b--x", b"--=_b-", b"--=_"]
)
_LINKS = st.sampled_from(
    [b"https://example.test/a", b'<a href="https://example.test/b">b</a>', b"www.example.test/c"]
)
_QUOTED_LOOKING = st.sampled_from(
    [b"caf=C3=A9", b"a=3Db snake_case", b"soft=\r\nbreak", b"=", b"=4"]
)
PLAIN_PART_TYPES = [b"text/plain", b"text/plain; charset=utf-8", b"text/plain;\r\n charset=koi8-r"]
HTML_PART_TYPES = [b"text/html", b'text/html; charset="utf-8"', b"TEXT/HTML;charset=iso-8859-1"]
OTHER_PART_TYPES = [b"image/png", b"text/html; name=a.html", b"text/plain; charset=utf-16", b""]


def _part_lines(draw: st.DrawFn, eol: bytes, content_types: list[bytes]) -> bytes:
    """A part's header lines, the empty line and its body, as a mail library writes them."""
    if _rarely(draw):
        content_types = OTHER_PART_TYPES
    headers = [b"Content-Type: " + draw(st.sampled_from(content_types))]
    if draw(st.booleans()):
        encoding = draw(
            st.sampled_from([b"7bit", b"8bit", b"7BIT", b"quoted-printable", b"\r\n 7bit"])
        )
        if _rarely(draw):
            encoding = draw(SIMPLE_VALUES[b"Content-Transfer-Encoding"])
        headers.append(b"Content-Transfer-Encoding: " + encoding)
    if _rarely(draw):
        headers.append(b"Content-Disposition: " + draw(SIMPLE_VALUES[b"Content-Disposition"]))
    if _rarely(draw):
        headers.append(b"X-Note: " + draw(HEADER_TEXT))
    if _rarely(draw):
        headers = headers[1:]  # no Content-Type: plain text
    headers = list(draw(st.permutations(headers)))
    head = b"".join(header.replace(b"\r\n", eol) + eol for header in headers)
    separator = eol if not _rarely(draw) else b""
    charset = draw(st.sampled_from(ENCODABLE))
    text = TEXT.map(lambda text: _encode_text(text.replace("\n", eol.decode()), charset))
    no_lone_cr = text.filter(lambda line: b"\r" not in line.replace(b"\r\n", b""))
    quoted = _QUOTED_LOOKING.map(lambda line: line.replace(b"\r\n", eol))
    lines = draw(st.lists(st.one_of(no_lone_cr, _LINKS, quoted), max_size=3))
    if _rarely(draw):
        near_miss = draw(st.one_of(_BOUNDARY_LINES, _ENCODED_LOOKING, st.binary(max_size=10)))
        lines.insert(draw(st.integers(0, len(lines))), near_miss)
    return head + separator + eol.join(lines)


@st.composite
def usual_multipart_messages(draw: st.DrawFn) -> bytes:
    """Text-and-HTML messages as applications send them, and ones a line or a byte away."""
    eol = draw(st.sampled_from([b"\r\n", b"\r\n", b"\n"]))
    headers = []
    for _ in range(draw(st.integers(0, 4))):
        name = draw(st.sampled_from(SIMPLE_NAMES))
        key = b"From" if name in (b"To", b"Cc", b"Reply-To") else name
        value = draw(SIMPLE_VALUES.get(key, _PLAIN_VALUES) if _rarely(draw) else _PLAIN_VALUES)
        headers.append(name + b": " + value)
    taken = MULTIPART_CONTENT_TYPES[:6]
    content_type = draw(st.sampled_from(MULTIPART_CONTENT_TYPES if _rarely(draw) else taken))
    headers.append(b"Content-Type: " + content_type.replace(b"\r\n", eol))
    if _rarely(draw):
        encodings = st.one_of(SIMPLE_VALUES[b"Content-Transfer-Encoding"], st.just(b"\r\n 7bit"))
        headers.append(b"Content-Transfer-Encoding: " + draw(encodings).replace(b"\r\n", eol))
    raw = b"".join(header + eol for header in draw(st.permutations(headers))) + eol
    if draw(st.booleans()):
        raw += b"This is a multi-part message in MIME format." + eol
    kinds = [PLAIN_PART_TYPES, HTML_PART_TYPES]
    count = draw(st.sampled_from([0, 1, 1, 2, 2, 2, 2, 3]))
    for number in range(count):
        boundary = draw(_BOUNDARY_LINES) if _rarely(draw) else b"--=_b"
        kind = kinds[number % 2] if draw(st.booleans()) else kinds[1 - number % 2]
        raw += boundary + eol + _part_lines(draw, eol, kind) + eol
    if draw(st.sampled_from([True, True, True, False])):  # the closing line is forgotten at times
        raw += b"--=_b--" + draw(st.sampled_from([b"", b" ", eol, eol + b"epilogue" + eol]))
    if _rarely(draw):  # a lone CR before a boundary line
        raw = raw.replace(eol + b"--=_b", b"\r--=_b", 1)
    if _rarely(draw):  # a lone CR, a NUL or an 8-bit byte somewhere
        position = draw(st.integers(0, len(raw)))
        raw = raw[:position] + draw(st.sampled_from([b"\r", b"\x00", b"\xe9"])) + raw[position:]
    return raw


_ALTERNATIVE = (
    b'Content-Type: multipart/alternative; boundary="=_b"\r\n%s\r\n--=_b\r\n'
    b"Content-Type: %s\r\n\r\n%s\r\n--=_b\r\nContent-Type: %s\r\n\r\n%s\r\n--=_b--\r\n"
)
_HREF = b'<a href="https://example.test/h">h</a>'
_QP = b"Content-Transfer-Encoding: quoted-printable\r\n"


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(usual_multipart_messages())
@example(_ALTERNATIVE % (b"", b"text/plain", b"Hello.\r\n", b"text/html", b"<p>Hello.</p>"))
@example(_ALTERNATIVE % (b"", b"text/html", _HREF, b"text/plain", b"https://example.test/t"))
@example(_ALTERNATIVE % (b"", b"text/plain", b"--=_bx", b"text/html", b"--=_b--x"))
@example(  # one part that looks like two
    b'Content-Type: multipart/alternative; boundary="=_b"\r\n\r\n--=_b\r\n'
    b"Content-Type: text/plain\r\n\r\na\r\n--=_b-x\r\nContent-Type: text/html\r\n\r\nb\r\n"
    b"--=_b--\r\n"
)
@example(_ALTERNATIVE % (_QP, b"text/plain", b"a=3Db", b"text/html", b"<p>snake_case</p>"))
@example(
    (
        _ALTERNATIVE % (b"", b"text/plain", b"caf=C3=A9 snake_case=\r\nsoft", b"text/html", b"")
    ).replace(b"Content-Type: text/plain", b"Content-Type: text/plain\r\n" + _QP.strip())
)
@example(
    (_ALTERNATIVE % (b"", b"text/plain", b"Hello.", b"text/html", b"")).replace(
        b"Hello.\r\n--=_b",
        b"Hello.\r--=_b",  # a lone CR ends a line too
    )
)
@example(
    _ALTERNATIVE
    % (b"Content-Transfer-Encoding:\r\n 7bit\r\n", b"text/plain", b"", b"text/html", b"")
)
def test_the_multipart_shortcut_parses_as_the_full_parser_does(raw: bytes) -> None:
    """Every text-and-HTML message the shortcut takes gives exactly the full parser's result."""
    if simple_message(raw) is not None:
        assert parse_message(raw, budget=PARSE_BUDGET) == _full_parse(raw)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mime_messages())
def test_the_shortcut_agrees_on_plausible_mime_too(raw: bytes) -> None:
    if simple_message(raw) is not None:
        assert parse_message(raw, budget=PARSE_BUDGET) == _full_parse(raw)


_ADDRESS_ALPHABET = st.sampled_from("aZ09.!#$%&'*+/=?^_`{|}~- <>@\"(),:;[]\\")


@settings(max_examples=800, deadline=None)
@given(
    st.one_of(
        st.from_regex(SIMPLE_ADDRESS, fullmatch=True),
        st.text(_ADDRESS_ALPHABET, max_size=30),
    )
)
@example("First Last <first.last@example.com>")
@example("a..b@c")
def test_the_simple_address_shortcut_reads_as_getaddresses_does(text: str) -> None:
    """Headers the shortcut takes give the same address getaddresses() would."""
    simple = SIMPLE_ADDRESS.fullmatch(text)
    if simple is not None:
        assert getaddresses([text]) == [(simple[1] or "", simple[2])]
        # Nor would the other path see an unquoted address as display name there.
        assert _headers._quote_address_names(text) is None


_PRINTABLE_NAMES = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=15)
_ADDR_SPECS = st.from_regex(rf"{DOT_ATOM}@{DOT_ATOM}", fullmatch=True)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(_PRINTABLE_NAMES, _ADDR_SPECS), min_size=1, max_size=4),
    st.sampled_from([", ", ",", ",\r\n "]),
    st.booleans(),
)
@example([("alice@example.com", "bob@example.com")], ", ", False)
@example([("a@x", "b@y"), ("", "c@z")], ", ", True)
def test_well_formed_address_lists_are_read_as_getaddresses_reads_them(
    mailboxes: list[tuple[str, str]], separator: str, group: bool
) -> None:
    """The unquoted-address repair never touches a header written as RFC 5322 says."""
    header = separator.join(formataddr(mailbox) for mailbox in mailboxes)
    if group:
        header = f"Team: {header};"
    assert _headers._quote_address_names(header) is None
    run = ParseRun(PARSE_BUDGET)
    read = _headers.addresses("To", [header], run)
    expected = getaddresses([header.replace("\r\n", "")])
    assert [(a.name or "", a.email) for a in read] == [(n.strip(), e) for n, e in expected if e]
    assert run.defects() == ()


@settings(
    max_examples=400,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(mime_messages())
# Bytes that decode to lone surrogates under the declared charset (UTF-7, UTF-16,
# UTF-8 of U+D800), in a header's encoded word, a filename and the body.
@example(b"Subject: =?utf-7?q?+2AA-?= =?utf-8?b?7aCA?=\r\n\r\n")
@example(b"Content-Type: text/plain; charset=utf-7\r\n\r\n+2AA- https://x.test/+2AA-\r\n")
@example(b"Content-Type: text/html; charset=utf-16-le\r\n\r\n\x00\xd8<\x00")
@example(b"Content-Disposition: attachment; filename*=utf-7''%2B2AA-\r\n\r\nx")
def test_parser_survives_plausible_mime(raw: bytes) -> None:
    _check_parsed(raw, _timed_parse(raw))


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
    from pytest_tempinbox.server.smtp import InboxHandler, _TrackedSMTP
    from pytest_tempinbox.server.store import Store

    loop = asyncio.new_event_loop()
    handler = InboxHandler(Store())
    yield _TrackedSMTP(
        handler, set(), max_connections=1, data_line_limit=1000, hostname="x.test", loop=loop
    )
    loop.close()


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
def test_the_address_reader_of_mail_and_rcpt_is_aiosmtpd_s(smtp_protocol: Any, arg: str) -> None:
    """Our copy of aiosmtpd's _getaddr (without its per-call class) reads as the original.

    Where the original fails with IndexError (a path cut short), ours reads no address.
    """
    from aiosmtpd.smtp import SMTP

    def outcome(read: Callable[[str], object]) -> object:
        try:
            return read(arg)
        except Exception as exc:  # the email package raises IndexError on some
            return type(exc)

    for limit in (0, 3):
        smtp_protocol.local_part_limit = limit
        theirs = outcome(lambda text: SMTP._getaddr(smtp_protocol, text))
        assert outcome(smtp_protocol._getaddr) == ((None, None) if theirs is IndexError else theirs)
