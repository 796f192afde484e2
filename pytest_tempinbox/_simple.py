"""The shortcut for the usual message: read without the email package, to the same result.

Most mail a test receives is an application's plain notification: unfolded
ASCII header lines, no encoded words, one ``text/plain`` body sent as 7bit or
8bit. For such a message the email package's feed parser, its message objects
and the walk over MIME parts cost most of a parse (about 0.2 ms of 0.27 ms),
yet their answer is plain: the headers as written, and the body's bytes as
they arrived. :func:`simple_message` reads exactly those messages directly
and returns None for anything else, which then takes the full path in
:mod:`pytest_tempinbox.parsing`. That both paths agree on every message the
shortcut accepts is a property test (``tests/test_properties.py``).

What the shortcut accepts, and why each condition keeps it equal to the full path:

- Header lines of printable ASCII (and tabs) of the form ``Name: value``, each
  ending in CRLF or LF, then an empty line: no folding, no 8-bit bytes, no
  line the feed parser would read as a defect or a Unix ``From`` line.
- No ``=?`` in any header: no encoded word to decode.
- At most one ``Content-Type``, exactly ``text/plain``, optionally with one
  ``charset`` parameter (a token, quoted or not); at most one
  ``Content-Transfer-Encoding``, ``7bit``, ``8bit`` or ``binary``; no
  ``Content-Disposition``. So the message is one body part, not an
  attachment, whose payload is its bytes as they are.
- At most :data:`SIMPLE_LIMIT` bytes, far below what the full path's time
  budget could cut short.
"""

from __future__ import annotations

import re

__all__ = ["SIMPLE_LIMIT", "SimpleMessage", "simple_message"]

#: Larger messages always take the full path.
SIMPLE_LIMIT = 256 << 10

# Header lines (the feed parser's header name: printable ASCII but ":"), then the empty line.
# Linear: no header line can also match the empty line or run past a line end.
_HEAD = re.compile(rb"((?:[\x21-\x39\x3b-\x7e]+:[\t\x20-\x7e]*\r?\n)+)\r?\n")
_TEXT_PLAIN = re.compile(r"text/plain(?:; ?charset=(\"?)([A-Za-z0-9_.:+-]+)\1)?", re.IGNORECASE)
_AS_IS_ENCODINGS = frozenset({"7bit", "8bit", "binary"})


class SimpleMessage:
    """A message the shortcut read: its headers as written, and its body.

    ``headers`` are ``(name, value)`` pairs in order, each value without its
    leading blanks and line ending, as the ``compat32`` parser keeps them.
    ``charset`` is the declared charset in lowercase, or None.
    """

    # A plain class, not a dataclass: creating a dataclass costs about 1 ms of import.
    __slots__ = ("body", "charset", "headers")

    def __init__(self, headers: list[tuple[str, str]], body: bytes, charset: str | None) -> None:
        self.headers = headers
        self.body = body
        self.charset = charset


def simple_message(raw: bytes) -> SimpleMessage | None:
    """Read ``raw`` if it is a usual single-part text message; else return None."""
    if len(raw) > SIMPLE_LIMIT:
        return None
    head = _HEAD.match(raw)
    if head is None:
        return None
    block = head[1].decode("ascii")
    if "=?" in block:
        return None
    headers = []
    charset: str | None = None
    seen: set[str] = set()
    for line in block.splitlines():
        name, _, value = line.partition(":")
        value = value.lstrip(" \t")
        key = name.lower()
        if key.startswith("content-"):
            if key == "content-disposition" or key in seen:
                return None
            seen.add(key)
            if key == "content-type":
                declared = _TEXT_PLAIN.fullmatch(value)
                if declared is None:
                    return None
                charset = declared[2].lower() if declared[2] else None
            elif key == "content-transfer-encoding" and value.lower() not in _AS_IS_ENCODINGS:
                return None
        headers.append((name, value))
    return SimpleMessage(headers, raw[head.end() :], charset)
