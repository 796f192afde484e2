"""The shortcut for the usual message: read without the email package, to the same result.

Most mail a test receives is an application's notification: ASCII header
lines without encoded words, and either one text body or a
``multipart/alternative`` of a text and an HTML body, each sent as 7bit, 8bit
or quoted-printable. For such a message the email package's feed parser, its
message objects and the walk over MIME parts cost most of a parse (about
0.2 ms of 0.27 ms for a short text; about 0.4 ms of 0.57 ms for a 2 KiB text
and HTML message, a quarter of it compiling a regular expression for its
boundary), yet their answer is plain: the headers as written, and each body's
bytes as they arrived. :func:`simple_message` reads exactly those messages
directly and returns None for anything else, which then takes the full path
in :mod:`pytest_tempinbox.parsing.message`. That both paths agree on every message
the shortcut accepts is a property test (``tests/test_properties.py``).

What the shortcut accepts, and why each condition keeps it equal to the full path:

- Header lines of printable ASCII (and tabs) of the form ``Name: value``, each
  ending in CRLF or LF and maybe folded onto lines that start with a blank,
  then an empty line: no 8-bit bytes, no line the feed parser would read as a
  defect or a Unix ``From`` line. Values are kept as ``compat32`` keeps them,
  folds included. The same holds for the header lines of each part.
- No ``=?`` in any header: no encoded word to decode.
- At most one of each ``Content-*`` header, and no ``Content-Disposition``; a
  ``Content-Transfer-Encoding`` of ``7bit``, ``8bit`` or ``binary`` (the
  payload is the bytes as they are), or for a text or HTML body
  ``quoted-printable`` (decoded with :func:`binascii.a2b_qp`, as the email
  package does). So every body is one part, not an attachment.
- A ``Content-Type`` of ``text/plain`` or ``text/html``, optionally with one
  ``charset`` parameter (a token, quoted or not), or none (plain text).
- Or, for the message itself only, ``multipart/alternative``, ``mixed`` or
  ``related`` with a ``boundary`` parameter alone, of RFC 2046's characters
  but the space. Its body: an optional preamble, then parts between boundary
  lines (never two boundary lines in a row), then the closing boundary line
  and an optional epilogue. Each part is a text or HTML body as above, at
  most one of each, so that none is an attachment. No carriage return but in
  CRLF (the feed parser ends a line at a lone CR too).
- At most :data:`SIMPLE_LIMIT` bytes, far below what the full path's time
  budget could cut short.
"""

from __future__ import annotations

import re
from binascii import a2b_qp

__all__ = ["SIMPLE_LIMIT", "SimpleBody", "SimpleMessage", "simple_message"]

#: Larger messages always take the full path.
SIMPLE_LIMIT = 256 << 10

# Header lines (the feed parser's header name: printable ASCII but ":"), then the empty line.
# Linear: no header line can also match the empty line or run past a line end.
_HEAD = re.compile(
    rb"((?:[\x21-\x39\x3b-\x7e]+:[\t\x20-\x7e]*\r?\n(?:[\t ][\t\x20-\x7e]*\r?\n)*)+)\r?\n"
)
_TEXT = re.compile(
    r"text/(plain|html)(?:;[ \t]*charset=(\"?)([A-Za-z0-9_.:+-]+)\2)?", re.IGNORECASE
)
_BOUNDARY = r"[0-9A-Za-z'()+_,./:=?-]{1,70}"  # RFC 2046's bchars, without the space
_MULTIPART = re.compile(
    rf"multipart/(?:alternative|mixed|related);[ \t]*boundary=(?:\"({_BOUNDARY})\"|({_BOUNDARY}))",
    re.IGNORECASE,
)
_AS_IS_ENCODINGS = frozenset({"7bit", "8bit", "binary"})
_QUOTED_PRINTABLE = "quoted-printable"


# A plain class, not a dataclass: making a dataclass costs about a millisecond of import
# (its methods are compiled from source), and these two are made at every server's start.
class SimpleBody:
    """A text or HTML body the shortcut found: its bytes, decoded if sent quoted-printable.

    ``path`` is its part number as the full parser counts (``""`` for the
    message itself, ``"2"`` for its second part); ``charset`` is the declared
    charset in lowercase, or None.
    """

    __slots__ = ("charset", "data", "path")

    def __init__(self, path: str, data: bytes, charset: str | None) -> None:
        self.path, self.data, self.charset = path, data, charset


class SimpleMessage:
    """A message the shortcut read: its headers as written, and its bodies.

    ``headers`` are ``(name, value)`` pairs in order, each value without its
    leading blanks and last line ending but with its folds, as the ``compat32``
    parser keeps them.
    ``html_first`` tells whether the HTML body comes before the text body.
    """

    __slots__ = ("headers", "html", "html_first", "text")

    def __init__(
        self,
        headers: list[tuple[str, str]],
        text: SimpleBody | None,
        html: SimpleBody | None = None,
        html_first: bool = False,
    ) -> None:
        self.headers, self.text, self.html, self.html_first = headers, text, html, html_first


class _Head:
    """A block of header lines read by the shortcut's rules, and what its Content-* said."""

    __slots__ = ("boundary", "charset", "headers", "quoted_printable", "subtype")

    def __init__(self) -> None:
        self.headers: list[tuple[str, str]] = []
        self.subtype = "plain"  # of text/; "" for a multipart
        self.charset: str | None = None
        self.boundary = ""
        self.quoted_printable = False

    def body(self, path: str, data: bytes) -> SimpleBody:
        """The body these headers head: ``data`` decoded as the full parser decodes it."""
        # compat32's get_payload(decode=True) decodes with binascii.a2b_qp, through quopri.
        return SimpleBody(path, a2b_qp(data) if self.quoted_printable else data, self.charset)


def _head(data: bytes, multipart: bool) -> tuple[_Head, bytes] | None:
    """Read the header block at the start of ``data``: its headers and what follows the block.

    None if the shortcut does not take them. ``multipart``: whether a multipart
    Content-Type is allowed (for the message itself).
    """
    block = _HEAD.match(data)
    if block is None:
        return None
    text = block[1].decode("ascii")
    if "=?" in text:
        return None
    head = _Head()
    headers = head.headers
    if "\n " in text or "\n\t" in text:
        for line in text.splitlines(keepends=True):
            if line[0] in " \t":  # a continuation line: the first line never is one
                name, value = headers[-1]
                headers[-1] = name, value + line
            else:
                name, _, value = line.partition(":")
                headers.append((name, value.lstrip(" \t")))
        # As compat32 keeps them: folds and all, but for the last line end.
        headers[:] = [(name, value.rstrip("\r\n")) for name, value in headers]
    else:
        for line in text.splitlines():
            name, _, value = line.partition(":")
            headers.append((name, value.lstrip(" \t")))
    seen: set[str] = set()
    for name, value in headers:
        if name[:8].lower() != "content-":
            continue
        key = name.lower()
        if key == "content-disposition" or key in seen:
            return None
        seen.add(key)
        if key == "content-type":
            flat = value.replace("\r", "").replace("\n", "")  # a fold keeps its blank
            declared = _TEXT.fullmatch(flat)
            if declared is not None:
                head.subtype = declared[1].lower()
                head.charset = declared[3].lower() if declared[3] else None
            elif multipart and (boundary := _MULTIPART.fullmatch(flat)) is not None:
                head.subtype = ""
                head.boundary = boundary[1] or boundary[2]
            else:
                return None
        elif key == "content-transfer-encoding":
            encoding = value.lower()
            head.quoted_printable = encoding == _QUOTED_PRINTABLE
            if encoding not in _AS_IS_ENCODINGS and not head.quoted_printable:
                return None
    if head.quoted_printable and not head.subtype:
        return None  # a multipart so encoded is a defect
    return head, data[block.end() :]


def simple_message(raw: bytes) -> SimpleMessage | None:
    """Read ``raw`` if it is a usual text, HTML or text-and-HTML message; else return None."""
    if len(raw) > SIMPLE_LIMIT:
        return None
    read = _head(raw, multipart=True)
    if read is None:
        return None
    head, body = read
    if head.subtype:
        found = head.body("", body)
        if head.subtype == "html":
            return SimpleMessage(head.headers, None, found, html_first=True)
        return SimpleMessage(head.headers, found)
    return _multipart(head, body)


def _boundary_line(line: bytes, separator: bytes) -> bool | None:
    """Whether ``line`` closes the multipart (True), separates parts (False), or neither (None).

    As the feed parser's pattern: the separator, maybe ``--``, blanks, the line end.
    """
    if not line.startswith(separator):
        return None
    rest = line[len(separator) :].rstrip(b"\r\n")  # one line end: no lone CR gets here
    closing = rest.startswith(b"--")
    if closing:
        rest = rest[2:]
    return None if rest.strip(b" \t") else closing


def _multipart(head: _Head, body: bytes) -> SimpleMessage | None:
    if body.count(b"\r") != body.count(b"\r\n"):
        return None
    separator = b"--" + head.boundary.encode("ascii")
    # Where each boundary line starts, and where the line after it starts.
    lines: list[tuple[int, int]] = []
    position = 0
    while True:
        start = body.find(separator, position)
        if start < 0:
            return None  # no closing boundary line
        end = body.find(b"\n", start) + 1 or len(body)
        position = end
        if start and body[start - 1] != 0x0A:  # not at the start of a line
            continue
        closing = _boundary_line(body[start:end], separator)
        if closing is None:
            continue
        if lines and lines[-1][1] == start:
            return None  # two boundary lines in a row: the feed parser skips the second
        lines.append((start, end))
        if closing:
            break
    if len(lines) < 2:
        return None  # a closing line, but no part
    text: SimpleBody | None = None
    html: SimpleBody | None = None
    html_first = False
    for number in range(len(lines) - 1):
        read = _head(body[lines[number][1] : lines[number + 1][0]], multipart=False)
        if read is None:
            return None
        part_head, data = read
        # The line end before a boundary line belongs to the boundary (RFC 2046).
        data = data[:-2] if data.endswith(b"\r\n") else data[:-1] if data.endswith(b"\n") else data
        found = part_head.body(str(number + 1), data)
        if part_head.subtype == "html":
            if html is not None:
                return None  # the second would be an attachment
            html = found
            html_first = text is None
        else:
            if text is not None:
                return None
            text = found
    return SimpleMessage(head.headers, text, html, html_first)
