"""Plausible MIME for property tests: words, headers, parts and whole messages.

Hypothesis strategies shared by the parser's property tests and those of its
shortcut for the usual message.
"""

from __future__ import annotations

import base64
import binascii
from urllib.parse import quote

from hypothesis import strategies as st

# Far above what any of these inputs needs (a few milliseconds), so that a slow
# CI machine cannot trip it, yet low enough to catch quadratic behaviour.
PARSE_BUDGET = 2.0


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


def encode_text(text: str, charset: str) -> bytes:
    try:
        return text.encode(charset or "utf-8", "replace")
    except LookupError:
        return text.encode("utf-8", "surrogatepass")


@st.composite
def encoded_words(draw: st.DrawFn) -> str:
    """An RFC 2047 encoded word: well formed, or broken in one of the usual ways."""
    charset = draw(st.sampled_from(CHARSETS)) or "utf-8"
    data = encode_text(draw(TEXT), charset.strip('"').split("*")[0])
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
        st.one_of(TEXT.map(lambda text: encode_text(text, charset)), st.binary(max_size=80))
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
