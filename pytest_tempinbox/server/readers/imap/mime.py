"""A message's MIME parts as octet ranges of its raw bytes, for ``BODY[section]`` and BODYSTRUCTURE.

Every part's header and body are slices of the message exactly as received, so
what a section fetch returns is byte for byte what the sender sent. Headers are
read with the standard library's parser (compat32: values as written); bodies
are never decoded. Parts nest at most :data:`MAX_DEPTH` deep; deeper ones are
served as opaque bodies.
"""

from __future__ import annotations

import itertools
import re
from email.message import Message
from email.parser import BytesHeaderParser
from email.policy import compat32

__all__ = ["MAX_DEPTH", "Part", "header_fields", "parse_part"]

MAX_DEPTH = 20
"""Levels of nested multiparts and attached messages read as parts."""

_BLANK = re.compile(rb"\r?\n\r?\n")
_FIELD_START = re.compile(rb"^(?=[^ \t\r\n])", re.MULTILINE)


class Part:
    """One MIME part: its raw header (blank line included), raw body and sub-parts."""

    __slots__ = ("body", "children", "header", "message", "subtype", "type")

    def __init__(self, raw: bytes, depth: int = 0, default_type: str = "text/plain") -> None:
        if raw.startswith((b"\r\n", b"\n")):
            split = 2 if raw.startswith(b"\r\n") else 1
            self.header, self.body = raw[:split], raw[split:]
        else:
            blank = _BLANK.search(raw)
            if blank is None:
                self.header, self.body = raw, b""
            else:
                self.header, self.body = raw[: blank.end()], raw[blank.end() :]
        self.message: Message = BytesHeaderParser(policy=compat32).parsebytes(self.header)
        content_type = self.message.get_content_type() if "content-type" in self.message else ""
        content_type = content_type or default_type
        self.type, _, self.subtype = content_type.partition("/")
        self.children: list[Part] = []
        if depth >= MAX_DEPTH:
            return
        if self.type == "multipart":
            boundary = self.message.get_param("boundary")
            if isinstance(boundary, str) and boundary:
                child_type = "message/rfc822" if self.subtype == "digest" else "text/plain"
                self.children = [
                    Part(raw, depth + 1, child_type) for raw in split_multipart(self.body, boundary)
                ]
        elif (self.type, self.subtype) == ("message", "rfc822"):
            self.children = [Part(self.body, depth + 1)]

    def param(self, name: str) -> str | None:
        """A Content-Type parameter's value, or None."""
        value = self.message.get_param(name)
        return value if isinstance(value, str) else None

    def text_of(self, name: str) -> str | None:
        """A header field's value as written (unfolded), or None."""
        value = self.message.get(name)
        if value is None:
            return None
        return re.sub(r"\r?\n(?=[ \t])", "", str(value))

    def find(self, path: list[int]) -> Part | None:
        """The part at ``path`` (``1.2`` as ``[1, 2]``), as RFC 3501 numbers them; None if none."""
        part: Part = self
        for number in path:
            if part.type == "message" and part.subtype == "rfc822" and part.children:
                part = part.children[0]  # an attached message's parts are its body's
            if part.type == "multipart":
                if not 1 <= number <= len(part.children):
                    return None
                part = part.children[number - 1]
            elif number != 1:
                return None  # a non-multipart's only part is part 1: itself
        return part


def parse_part(raw: bytes) -> Part:
    """Read a whole message into its tree of parts."""
    return Part(raw)


def split_multipart(body: bytes, boundary: str) -> list[bytes]:
    """The raw parts of a multipart body, between its ``--boundary`` lines (RFC 2046 5.1.1)."""
    delimiter = re.compile(
        rb"(?:\A|\r?\n)--"
        + re.escape(boundary.encode("utf-8", "replace"))
        + rb"(--)?[ \t]*(?:\r?\n|\Z)"
    )
    parts: list[bytes] = []
    start: int | None = None
    for match in delimiter.finditer(body):
        if start is not None:
            parts.append(body[start : match.start()])
        if match.group(1):
            return parts
        start = match.end()
    if start is not None:  # no closing delimiter: the last part runs to the end
        parts.append(body[start:])
    return parts


def header_fields(header: bytes, names: set[str], *, keep: bool) -> bytes:
    """The fields of ``header`` named in ``names`` (``keep``) or not named, and a blank line."""
    text = header.rstrip(b"\r\n")
    kept = []
    for field in _fields(text):
        name = field.split(b":", 1)[0].strip().decode("ascii", "replace").lower()
        if (name in names) == keep:
            kept.append(field if field.endswith(b"\n") else field + b"\r\n")
    return b"".join(kept) + b"\r\n"


def _fields(text: bytes) -> list[bytes]:
    starts = [match.start() for match in _FIELD_START.finditer(text)]
    if not text:
        return []
    if not starts or starts[0] != 0:
        starts.insert(0, 0)
    starts.append(len(text))
    out = []
    for begin, end in itertools.pairwise(starts):
        field = text[begin:end]
        if not field.endswith(b"\n"):
            field += b"\r\n"
        out.append(field)
    return out
