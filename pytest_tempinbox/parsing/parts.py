"""The structure of a message the fast path does not take, read with the email package.

:func:`parse_structure` feeds the raw bytes to the ``compat32`` feed parser a
chunk at a time, looking at the parse's clock between chunks; :func:`sort_parts`
tells the text body, the HTML body and the attachments apart, in document order;
:func:`part_payload` and :func:`describe_attachment` read a part's bytes and
describe it. :mod:`pytest_tempinbox.parsing.message` builds the parsed message
and serves attachments from these. Standard library only and no I/O.
"""

from __future__ import annotations

import re
from email.errors import InvalidBase64LengthDefect
from email.message import Message
from typing import Any

from ..values import Attachment
from .budget import ParseRun
from .decode import UUENCODINGS, b64decode, clean, header_text, to_text, uudecode
from .email_internals import Part
from .reused_boundary import regroup

__all__ = [
    "MAX_ATTACHMENTS",
    "PARTS_ANYWAY",
    "Layout",
    "describe_attachment",
    "line_ending",
    "note_email_defects",
    "parse_structure",
    "part_name",
    "part_payload",
    "sort_parts",
]

#: Attachments listed at most; the others are noted in ``defects``.
MAX_ATTACHMENTS = 2000
_FEED_CHUNK = 4096

#: Parts looked at for the text and HTML bodies whatever the parse's clock says.
PARTS_ANYWAY = 64


def part_name(path: str) -> str:
    """How defects name the part at IMAP-style ``path``: ``part 2.1``, or the body for ``""``."""
    return f"part {path}" if path else "the body"


def parse_structure(raw: bytes, run: ParseRun) -> Message:
    """Parse the structure of ``raw``, within half the run's budget; never raises.

    What the clock left unread is told on ``run`` (and ``run.feed_cut`` set);
    a structure the parser fails on gives the headers over one text body. A
    nested multipart that reused its parent's boundary gets its parts back
    (:mod:`.reused_boundary`).
    """
    # Imported here: the usual message never needs them (see .fast). Their
    # default policy is compat32.
    from email.feedparser import BytesFeedParser
    from email.parser import BytesParser

    parser = BytesFeedParser(_factory=Part)
    in_headers = 0.0  # time spent feeding what may be one block of header lines
    clock = run.clock
    try:
        # Fed a chunk at a time, so that the clock is looked at between chunks.
        start = 0
        while start < len(raw):
            # Whole lines: a line cut in two would read as a broken header.
            end = raw.find(b"\n", start + _FEED_CHUNK - 1) + 1 or len(raw)
            chunk = raw[start:end]
            before = clock()
            parser.feed(chunk)
            now = clock()
            # The parser parses a block of header lines only at its end, or at
            # close(), taking about twice as long as reading them took; count that
            # in. Base64 holds no ":" and a body has empty lines.
            if b":" not in chunk or b"\n\n" in chunk or b"\n\r\n" in chunk:
                in_headers = 0.0
            else:
                in_headers += now - before
            start = end
            if start < len(raw) and now + 2 * in_headers > run.feed_deadline:
                run.cut(
                    f"message read only to byte {start:,} of {len(raw):,}"
                    " (reading it may take half the budget)"
                )
                run.feed_cut = True
                break
        message: Message = parser.close()
    except RecursionError:
        run.note("nested too deeply to parse: the body is served as one text part")
    except Exception:  # a bug in the parser
        run.note("structure could not be parsed: the body is served as one text part")
    else:
        try:
            regroup(message, run)
        except Exception:  # a bug, or RecursionError: the parts stay as the parser left them
            run.note("the parts of a nested multipart reusing its boundary could not be regrouped")
        return message
    try:
        # The headers still parse; the body stays one undivided text part.
        return BytesParser(Part).parsebytes(raw, headersonly=True)
    except Exception:
        return Part()


_MIME_HEADERS = frozenset(
    {"content-type", "content-disposition", "content-transfer-encoding", "content-id"}
)


def _repair_headers(part: Message) -> None:
    # compat32 turns a header holding raw 8-bit bytes into an email.header.Header
    # that decodes as ASCII with U+FFFD, losing UTF-8 filenames; give it text.
    # Only the headers read through part.get(), and deleting by name is a scan of
    # all headers, so a part with a million headers is not rebuilt for one of them.
    items = [(n, str(v)) for n, v in part.raw_items() if n.lower() in _MIME_HEADERS]
    if all(value.isascii() for _, value in items):
        return
    for name in {name.lower() for name, _ in items}:
        del part[name]
    for name, value in items:
        part.set_raw(name, clean(value))


def _children(part: Message) -> list[Message]:
    # is_multipart() first: get_payload() on a leaf decodes 8-bit text with the
    # declared charset, and raises on some.
    payload = part.get_payload() if part.is_multipart() else None
    if not isinstance(payload, list):
        return []
    return [child for child in payload if isinstance(child, Message)]


def _content_type(part: Message) -> str:
    content_type = clean(part.get_content_type())
    # A multipart the parser could not split (no boundary, or too deep) is
    # left holding its body as text, and is served as such.
    return "text/plain" if content_type.startswith("multipart/") else content_type


def _filename(part: Message, run: ParseRun | None = None, where: str = "a part") -> str | None:
    for header, param in (("content-disposition", "filename"), ("content-type", "name")):
        if param not in str(part.get(header, "")).lower():
            continue  # parsing the parameters is most of the cost of telling bodies apart
        try:
            value: Any = part.get_param(param, None, header)
            if isinstance(value, tuple):  # RFC 2231: (charset, language, %-decoded latin-1)
                charset, _, text = value
                try:
                    value = to_text(str(text).encode("latin-1"), charset, run, where)
                except UnicodeEncodeError:
                    value = str(text)
            name = header_text(value, run, where) if value else ""
        except Exception:
            name = ""
        if name:
            return name
    return None


def _disposition(part: Message) -> str | None:
    try:
        return part.get_content_disposition()
    except Exception:
        return None


def _is_attachment(part: Message) -> bool:
    return _disposition(part) == "attachment" or _filename(part) is not None


class Layout:
    """The text body, the HTML body and the attachments, in document order, with their paths."""

    # Plain classes, not dataclasses: creating a dataclass costs about 1 ms of import.
    __slots__ = ("attachments", "capped", "html", "html_first", "parts", "stopped", "text")

    def __init__(self) -> None:
        self.text: tuple[str, Message] | None = None
        self.html: tuple[str, Message] | None = None
        self.html_first = False
        self.attachments: list[tuple[str, Message]] = []
        self.parts: list[tuple[str, Message]] = []  # every part looked at
        self.stopped = False  # by the clock, with parts left to look at
        self.capped = False  # more than MAX_ATTACHMENTS attachments


def sort_parts(message: Message, run: ParseRun, until: int | None = None) -> Layout:
    """Sort the parts out, stopping when the clock runs out or at the cap.

    Once the clock has run out, no more attachments are listed, but the text
    and HTML bodies are still looked for among the first :data:`PARTS_ANYWAY`
    parts: on a machine slow enough to spend the budget on reading the
    structure, a test still reads the bodies, at a bounded cost.
    With ``until``, stop as soon as attachment ``until`` is found. When the
    clock cut reading the message short, its last part was still being read
    and may lack headers or content: it is not listed as an attachment (a text
    or HTML body cut short is still served, with a defect saying where reading
    stopped).
    """
    layout = Layout()
    unfinished = _last_leaf(message) if run.feed_cut else None
    # Iterative, depth-first, in document order: nesting depth costs no stack.
    stack: list[tuple[str, Message]] = [("", message)]
    late = False  # the clock has run out: only the bodies are still looked for
    while stack:
        late = late or (bool(layout.parts) and run.expired())
        if late and (len(layout.parts) >= PARTS_ANYWAY or None not in (layout.text, layout.html)):
            layout.stopped = True
            break
        path, part = stack.pop()
        layout.parts.append((path, part))
        _repair_headers(part)
        if part.is_multipart() and part.get_content_maintype() == "multipart":
            prefix = f"{path}." if path else ""
            children = list(enumerate(_children(part), 1))
            stack.extend((f"{prefix}{number}", child) for number, child in reversed(children))
            continue
        if path and _empty_multipart(part):
            # One the parser could not split (a nested multipart reusing its parent's
            # boundary): nothing to serve, and it must not take the text body's place.
            continue
        content_type = _content_type(part)
        if content_type in ("text/plain", "text/html") and not _is_attachment(part):
            if content_type == "text/plain" and layout.text is None:
                layout.text = path, part
                continue
            if content_type == "text/html" and layout.html is None:
                layout.html = path, part
                layout.html_first = layout.text is None
                continue
        if part is unfinished:
            continue
        if late:
            layout.stopped = True  # an attachment the clock leaves unlisted
            continue
        if len(layout.attachments) == MAX_ATTACHMENTS:
            layout.capped = True
            break
        layout.attachments.append((path, part))
        if until is not None and len(layout.attachments) > until:
            break
    return layout


def _empty_multipart(part: Message) -> bool:
    if part.get_content_maintype() != "multipart":
        return False
    payload = part.get_payload()
    return isinstance(payload, str) and (not payload or payload.isspace())


def _last_leaf(message: Message) -> Message:
    """The part that comes last in document order and holds no parts."""
    part = message
    while part.is_multipart() and part.get_content_maintype() == "multipart":
        children = _children(part)
        if not children:
            break
        part = children[-1]
    return part


_EMAIL_DEFECTS = {
    # class name: (text, whether it is about the part's body rather than its structure)
    "NoBoundaryInMultipartDefect": ("multipart without boundary", False),
    "StartBoundaryNotFoundDefect": ("multipart whose boundary never occurs", False),
    "CloseBoundaryNotFoundDefect": ("multipart without its closing boundary", False),
    "MultipartInvariantViolationDefect": ("", False),  # always comes with one of those
    "FirstHeaderLineIsContinuationDefect": ("first header line is a continuation line", False),
    "MisplacedEnvelopeHeaderDefect": ("'From ' line among the headers", False),
    "MissingHeaderBodySeparatorDefect": ("a header line without a colon ends the headers", False),
    "InvalidMultipartContentTransferEncodingDefect": (
        "multipart with a transfer encoding other than 7bit, 8bit or binary",
        False,
    ),
    "InvalidBase64PaddingDefect": ("invalid base64", True),
    "InvalidBase64CharactersDefect": ("invalid base64", True),
    "InvalidBase64LengthDefect": ("invalid base64", True),
}
# Cutting the input short leaves multiparts unclosed: that is not the sender's doing.
_CUT_DEFECTS = frozenset({"StartBoundaryNotFoundDefect", "CloseBoundaryNotFoundDefect"})


def note_email_defects(layout: Layout, run: ParseRun) -> None:
    """Note, in words, the defects the email package found in the parts looked at."""
    for path, part in layout.parts:
        for defect in part.defects:
            kind = type(defect).__name__
            if run.feed_cut and kind in _CUT_DEFECTS:
                continue
            words = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", kind.removesuffix("Defect")).lower()
            text, about_body = _EMAIL_DEFECTS.get(kind, (words, False))
            if text:
                where = f" in {part_name(path)}" if path or about_body else ""
                run.note(text + where)


# --- payloads -----------------------------------------------------------------


def part_payload(part: Message, linesep: str) -> bytes:
    """The decoded bytes of a part (an embedded message re-serialised); ``b""`` on failure."""
    try:
        if part.is_multipart():
            # message/* parts: the embedded message itself, not descended into.
            policy = part.policy.clone(linesep=linesep)
            return b"".join(inner.as_bytes(policy=policy) for inner in _children(part))
        if str(part.get("content-transfer-encoding", "")).lower() in UUENCODINGS:
            # Python 3.10 reads some uuencoded bodies otherwise than 3.11 on.
            undecoded = str(part.get_payload()).encode("ascii", "surrogateescape")
            decoded = uudecode(undecoded)
            return undecoded if decoded is None else decoded
        known_defects = len(part.defects)
        data = part.get_payload(decode=True)
        new_defects = part.defects[known_defects:]
        if isinstance(data, bytes) and any(
            isinstance(defect, InvalidBase64LengthDefect) for defect in new_defects
        ):
            # compat32 gives up on base64 of impossible length and returns it undecoded.
            data = b64decode(data)
        return data if isinstance(data, bytes) else b""
    except Exception:  # including RecursionError from deeply nested message/rfc822
        return b""


def describe_attachment(
    part: Message, index: int, linesep: str, run: ParseRun | None = None, where: str = "a part"
) -> tuple[Attachment, bytes]:
    """Describe a part as attachment ``index``, and return its decoded bytes with it."""
    data = part_payload(part, linesep)
    content_id = header_text(part.get("content-id", ""), run, where).strip("<> \t") or None
    attachment = Attachment(
        index=index,
        filename=_filename(part, run, where),
        content_type=_content_type(part),
        size=len(data),
        content_id=content_id,
        inline=_disposition(part) == "inline",
    )
    return attachment, data


def line_ending(raw: bytes) -> str:
    """The line ending to re-serialise a message's embedded messages with: the one it came with."""
    # Embedded messages are re-serialised; keep the line endings they arrived with.
    return "\r\n" if b"\r\n" in raw else "\n"
