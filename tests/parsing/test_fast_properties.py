"""Properties of the shortcut for the usual message: it parses as the full parser does."""

from __future__ import annotations

from email.utils import getaddresses
from unittest import mock

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from pytest_tempinbox.parsing import headers as _headers
from pytest_tempinbox.parsing import message as parsing
from pytest_tempinbox.parsing.fast import simple_message
from pytest_tempinbox.parsing.headers import SIMPLE_ADDRESS
from pytest_tempinbox.parsing.message import ParsedMessage, parse_message

from .mime_strategies import (
    ENCODABLE,
    HEADER_TEXT,
    PARSE_BUDGET,
    TEXT,
    encode_text,
    encoded_words,
    mime_messages,
)

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
            TEXT.map(lambda text: encode_text(text.replace("\n", "\r\n"), charset)),
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
    text = TEXT.map(lambda text: encode_text(text.replace("\n", eol.decode()), charset))
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
