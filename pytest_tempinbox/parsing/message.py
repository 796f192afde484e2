"""Raw RFC 5322 bytes -> message fields: addresses, bodies, attachments, links, codes.

Standard library only and no I/O. Whatever bytes arrive, :func:`parse_message`
returns a result: senders and test code are entitled to send broken mail, and a
message that cannot be read is worse than one read approximately. What was
broken, or left unread, is told in :attr:`ParsedMessage.defects`.

The usual message (a text body, an HTML body or both) is read without the email
package, to the same result (:mod:`pytest_tempinbox.parsing.fast`). Any other has
its structure parsed with the ``compat32`` policy, which is about ten times
faster than ``email.policy.default`` and never raises on a header; headers are
decoded by this package, and only those that need it. This module reads the
structure and the payloads; :mod:`pytest_tempinbox.parsing.headers` reads addresses,
dates and the header map, and :mod:`pytest_tempinbox.parsing.decode` decodes text and
keeps the parse's clock. Every string handed out goes through
:func:`pytest_tempinbox.parsing.decode.clean`, so none carries a lone surrogate and all
survive ``json.dumps`` followed by ``.encode("utf-8")``.

No input may make a parse run away: the work is bounded by a time budget,
checked between bounded steps (a few KiB of input, one part, one header), and
by caps on size where those are cheaper than the clock.
"""

from __future__ import annotations

import functools
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from email.errors import InvalidBase64LengthDefect
from email.message import Message
from email.utils import decode_params
from typing import Any

from ..errors import AttachmentNotFound
from ..models import Address, Attachment, Link
from .codes import find_codes
from .decode import ParseRun, b64decode, clean, header_text, slow, to_text, unfold
from .extract import text_links
from .fast import SimpleMessage, simple_message
from .headers import addresses, header_map, media_type, parse_date

__all__ = [
    "MAX_ATTACHMENTS",
    "ParsedMessage",
    "attachment_payload",
    "parse_message",
    "served_attachment",
]

#: Attachments listed at most; the others are noted in ``defects``.
MAX_ATTACHMENTS = 2000
_SEARCH_LIMIT = 1 << 20  # characters of each body searched for links and codes
_PARAMS_LIMIT = 16 << 10  # characters of a header searched for MIME parameters
_FEED_CHUNK = 4096


@dataclass(frozen=True, slots=True)
class ParsedMessage:
    """Everything the service derives from a message's raw bytes.

    ``headers`` maps lowercase names to every value in order, decoded and
    unfolded. ``text`` and ``html`` are the first ``text/plain`` and
    ``text/html`` parts that are not attachments; every other leaf part is in
    ``attachments``, whose ``index`` is its position there.

    ``links`` are the unique URLs of ``link_details``: every link in document
    order, duplicates kept, with the text of its HTML anchor.

    ``defects`` are short notes for people, unique, at most 20: what in the
    message was broken and how it was read anyway ("multipart without
    boundary", "invalid base64 in part 3"), and what was left out to stay
    within the parse budget or the size caps (starting "parse budget of").
    Parts are numbered as in IMAP: ``2.1`` is the first part of the second.
    """

    message_id: str | None
    sender: Address | None
    to: tuple[Address, ...]
    cc: tuple[Address, ...]
    reply_to: tuple[Address, ...]
    subject: str
    date: datetime | None
    text: str | None
    html: str | None
    headers: dict[str, tuple[str, ...]]
    attachments: tuple[Attachment, ...]
    links: tuple[str, ...]
    codes: tuple[str, ...]
    defects: tuple[str, ...] = ()
    link_details: tuple[Link, ...] = ()


def _part_name(path: str) -> str:
    return f"part {path}" if path else "the body"


# --- structure ----------------------------------------------------------------


def _split_params(value: str) -> list[tuple[str, str]]:
    """Split a header into ``(name, value)`` parameters, as the email package does.

    The package's own splitter copies the rest of the header at each ``;`` and
    recounts quotes from the start at each ``;`` inside quotes: quadratic, and
    minutes for a few hundred KB of ``;``. This one gives the same pieces in
    linear time.
    """
    text = ";" + value
    params = []
    position = 0
    while position < len(text):  # text[position] == ";"
        start = position + 1
        end = text.find(";", start)
        if end > start:
            quotes = text.count('"', start, end) - text.count('\\"', start, end)
            while quotes % 2:  # that ";" is inside a quoted string
                following = text.find(";", end + 1)
                if following < 0:
                    end = -1
                    break
                quotes += text.count('"', end, following) - text.count('\\"', end, following)
                end = following
        if end < 0:
            end = len(text)
        piece = text[start:end]
        key, equals, rest = piece.partition("=")
        if equals:
            params.append((key.strip().lower(), rest.strip()))
        else:
            params.append((piece.strip(), ""))
        position = end
    return params


class _Part(Message):
    """A compat32 message part whose MIME parameters read in linear time and never raise."""

    # Message.get_params(), get_param() and get_boundary() all come through here,
    # and so does the feed parser when it looks for a multipart's boundary.
    def _get_params_preserve(self, failobj: Any, header: str) -> Any:
        wanted = header.lower()
        # The raw value: a boundary holding 8-bit bytes must match the body's lines.
        value = next((str(v) for k, v in self.raw_items() if k.lower() == wanted), None)
        if value is None:
            return failobj
        params = _split_params(value[:_PARAMS_LIMIT])
        try:
            decoded = decode_params(params)
        except Exception:  # RFC 2231 sections that do not fit together ("name*" and "name*0")
            return params
        safe: list[tuple[str, Any]] = []
        for name, text in decoded:
            if isinstance(text, tuple) and slow(text[0]):
                # get_boundary() and get_content_charset() decode with that charset.
                text = (None, *text[1:])
            safe.append((name, text))
        return safe


def _parse(raw: bytes, run: ParseRun) -> Message:
    # Imported here: the usual message never needs them (see _simple). Their
    # default policy is compat32.
    from email.feedparser import BytesFeedParser
    from email.parser import BytesParser

    parser = BytesFeedParser(_factory=_Part)
    in_headers = 0.0  # time spent feeding what may be one block of header lines
    try:
        # Fed a chunk at a time, so that the clock is looked at between chunks.
        start = 0
        while start < len(raw):
            # Whole lines: a line cut in two would read as a broken header.
            end = raw.find(b"\n", start + _FEED_CHUNK - 1) + 1 or len(raw)
            chunk = raw[start:end]
            before = time.monotonic()
            parser.feed(chunk)
            now = time.monotonic()
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
        return parser.close()
    except RecursionError:
        run.note("nested too deeply to parse: the body is served as one text part")
    except Exception:  # a bug in the parser
        run.note("structure could not be parsed: the body is served as one text part")
    try:
        # The headers still parse; the body stays one undivided text part.
        return BytesParser(_Part).parsebytes(raw, headersonly=True)
    except Exception:
        return _Part()


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


class _Layout:
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


def _layout(message: Message, run: ParseRun, until: int | None = None) -> _Layout:
    """Sort the parts out, stopping when the clock runs out or at the cap.

    With ``until``, stop as soon as attachment ``until`` is found. When the
    clock cut reading the message short, its last part was still being read
    and may lack headers or content: it is not listed as an attachment (a text
    or HTML body cut short is still served, with a defect saying where reading
    stopped).
    """
    layout = _Layout()
    unfinished = _last_leaf(message) if run.feed_cut else None
    # Iterative, depth-first, in document order: nesting depth costs no stack.
    stack: list[tuple[str, Message]] = [("", message)]
    while stack:
        if layout.parts and run.expired():
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


def _note_email_defects(layout: _Layout, run: ParseRun) -> None:
    for path, part in layout.parts:
        for defect in part.defects:
            kind = type(defect).__name__
            if run.feed_cut and kind in _CUT_DEFECTS:
                continue
            words = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", kind.removesuffix("Defect")).lower()
            text, about_body = _EMAIL_DEFECTS.get(kind, (words, False))
            if text:
                where = f" in {_part_name(path)}" if path or about_body else ""
                run.note(text + where)


# --- payloads -----------------------------------------------------------------


def _payload(part: Message, linesep: str) -> bytes:
    try:
        if part.is_multipart():
            # message/* parts: the embedded message itself, not descended into.
            policy = part.policy.clone(linesep=linesep)
            return b"".join(inner.as_bytes(policy=policy) for inner in _children(part))
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


def _body(path: str, part: Message, run: ParseRun) -> str:
    try:
        charset = part.get_content_charset()
    except Exception:
        charset = None
    return _text(_payload(part, "\n"), charset, path, run)


def _text(data: bytes, charset: str | None, path: str, run: ParseRun) -> str:
    text = to_text(data, charset, run, _part_name(path))
    return clean(text.replace("\r\n", "\n").replace("\r", "\n"))


def _attachment(
    part: Message, index: int, linesep: str, run: ParseRun | None = None, where: str = "a part"
) -> tuple[Attachment, bytes]:
    data = _payload(part, linesep)
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


def _linesep(raw: bytes) -> str:
    # Embedded messages are re-serialised; keep the line endings they arrived with.
    return "\r\n" if b"\r\n" in raw else "\n"


def _searched(text: str, what: str, run: ParseRun) -> str:
    if len(text) <= _SEARCH_LIMIT:
        return text
    run.note(f"{what} over 1 MiB: links and codes searched in its first 1 MiB only")
    # At a word boundary, so that no link or code is found cut in half.
    end = max(text.rfind(space, 0, _SEARCH_LIMIT) for space in " \n\t")
    return text[: end if end > 0 else _SEARCH_LIMIT]


def _links_and_codes(
    subject: str, text: str | None, html: str | None, html_first: bool, run: ParseRun
) -> tuple[tuple[Link, ...], tuple[str, ...]]:
    if run.expired():
        run.cut("links and codes not searched")
        return (), ()
    deadline = run.deadline
    text = _searched(text, "the text body", run) if text is not None else None
    html = _searched(html, "the HTML body", run) if html is not None else None
    in_text = text_links(text, deadline=deadline) if text is not None else []
    in_html: list[tuple[str, str | None]] = []
    body = text if text is not None else ""
    if html is not None:
        from .html import html_anchors, html_text  # only for mail that has HTML

        in_html = html_anchors(html, deadline=deadline)
        body = text if text is not None else html_text(html)
    links = _link_details(in_html, in_text, html_first)
    codes = find_codes(_searched(subject, "the subject", run), body, html, deadline=deadline)
    if run.expired():
        run.cut("links and codes may be incomplete")
    return links, tuple(clean(code) for code in codes)


def _link_details(
    in_html: list[tuple[str, str | None]], in_text: list[str], html_first: bool
) -> tuple[Link, ...]:
    from_html = [Link(clean(url), clean(text) if text else None, "html") for url, text in in_html]
    from_text = [Link(clean(url), None, "text") for url in in_text]
    return tuple(from_html + from_text if html_first else from_text + from_html)


# --- public API ----------------------------------------------------------------


def parse_message(raw: bytes, *, budget: float = 0.5) -> ParsedMessage:
    """Parse a message's raw bytes into the fields the service serves. Never raises.

    - A header that cannot be decoded is served as its raw unfolded text; raw
      UTF-8 headers (RFC 6532) are read as UTF-8, other 8-bit bytes as latin-1.
    - ``text``/``html`` are decoded with the declared charset, else UTF-8, else
      latin-1, with LF line endings. A single-part message without a
      Content-Type is text. An empty text part gives ``""``; a message with no
      text part at all (HTML only, attachments only) gives ``None``.
    - A multipart that cannot be split (no boundary, or nested too deeply for
      the parser) is treated as one ``text/plain`` part holding its body.
    - ``link_details`` (each link with its anchor's text, see
      :func:`pytest_tempinbox.parsing.html.html_anchors`), and so ``links``, come
      from the ``text`` and ``html`` bodies in document order;
      ``codes`` from the subject and ``text`` (or the HTML's visible text when
      there is no text part), most likely first, the HTML telling which words
      stand out. See :func:`pytest_tempinbox.parsing.codes.find_codes`.
      Only the first 1 MiB of each is searched.
    - At most :data:`MAX_ATTACHMENTS` attachments are listed.

    ``budget`` is the time in seconds the parse may take, give or take one
    bounded step. Reading the structure may take half of it; then come the
    headers, the bodies, links and codes, and the attachments. What the clock
    stopped is left out, and told in ``defects``, never raised: a message with
    tens of thousands of parts has those after the first few thousand unlisted.
    """
    run = ParseRun(budget)
    simple = simple_message(raw)
    if simple is not None:
        return _parsed(raw, run, _simple_structure(raw, simple, run))
    return _parsed(raw, run, _structure(raw, run))


class _Structure:
    """The headers, the bodies' sources and the attachments' parts, before they are read.

    The bodies are read later, after the addresses, so that both paths note
    defects in the same order.
    """

    __slots__ = ("headers", "html", "html_first", "layout", "raw_headers", "text")

    def __init__(
        self,
        headers: dict[str, tuple[str, ...]],
        raw_headers: dict[str, list[str]],  # by lowercase name, still folded
        *,
        text: Callable[[], str] | None = None,
        html: Callable[[], str] | None = None,
        html_first: bool = False,
        layout: _Layout | None = None,
    ) -> None:
        self.headers = headers
        self.raw_headers = raw_headers
        self.text = text
        self.html = html
        self.html_first = html_first
        self.layout = layout


def _structure(raw: bytes, run: ParseRun) -> _Structure:
    message = _parse(raw, run)
    if b"\x00" in raw:
        run.note("NUL bytes in the message")
    headers, raw_headers = header_map(message, run)
    layout = _layout(message, run)
    structure = _Structure(headers, raw_headers, html_first=layout.html_first, layout=layout)
    if layout.text is not None:
        structure.text = functools.partial(_body, *layout.text, run)
    if layout.html is not None:
        structure.html = functools.partial(_body, *layout.html, run)
    return structure


def _simple_structure(raw: bytes, simple: SimpleMessage, run: ParseRun) -> _Structure:
    if b"\x00" in raw:
        run.note("NUL bytes in the message")
    raw_headers: dict[str, list[str]] = {}
    headers: dict[str, list[str]] = {}
    for name, value in simple.headers:
        key = name.lower()
        raw_headers.setdefault(key, []).append(value)
        # What header_text() makes of ASCII without encoded words.
        headers.setdefault(key, []).append(unfold(value))
    decoded = {key: tuple(values) for key, values in headers.items()}
    structure = _Structure(decoded, raw_headers, html_first=simple.html_first)
    if (text := simple.text) is not None:
        structure.text = functools.partial(_text, text.data, text.charset, text.path, run)
    if (html := simple.html) is not None:
        structure.html = functools.partial(_text, html.data, html.charset, html.path, run)
    return structure


def _parsed(raw: bytes, run: ParseRun, structure: _Structure) -> ParsedMessage:
    headers, raw_headers, layout = structure.headers, structure.raw_headers, structure.layout

    def first(name: str) -> str | None:
        values = raw_headers.get(name)
        return values[0] if values else None

    senders = addresses("From", raw_headers.get("from", []), run)
    to = addresses("To", raw_headers.get("to", []), run)
    cc = addresses("Cc", raw_headers.get("cc", []), run)
    reply_to = addresses("Reply-To", raw_headers.get("reply-to", []), run)
    message_id = clean(unfold(first("message-id") or "")) or None
    date = first("date")
    subject = headers["subject"][0] if "subject" in headers else ""
    text = structure.text() if structure.text is not None else None
    html = structure.html() if structure.html is not None else None
    link_details, codes = _links_and_codes(subject, text, html, structure.html_first, run)

    attachments = []
    if layout is not None:
        linesep = _linesep(raw)
        for index, (path, part) in enumerate(layout.attachments):
            if run.expired():
                break
            attachments.append(_attachment(part, index, linesep, run, _part_name(path))[0])
        if layout.stopped or len(attachments) < len(layout.attachments):
            run.cut(f"attachments after #{len(attachments):,} not listed")
        if layout.capped:
            run.note(
                f"more than {MAX_ATTACHMENTS:,} attachments: "
                f"attachments after #{MAX_ATTACHMENTS:,} not listed"
            )
        _note_email_defects(layout, run)
    return ParsedMessage(
        message_id=message_id,
        sender=senders[0] if senders else None,
        to=to,
        cc=cc,
        reply_to=reply_to,
        subject=subject,
        date=parse_date(date) if date is not None else None,
        text=text,
        html=html,
        headers=headers,
        attachments=tuple(attachments),
        links=tuple(dict.fromkeys(link.url for link in link_details)),
        codes=codes,
        defects=run.defects(),
        link_details=link_details,
    )


def attachment_payload(raw: bytes, index: int, *, budget: float = 2.0) -> tuple[Attachment, bytes]:
    """Return the description and decoded bytes of attachment ``index`` of a message.

    ``index`` counts as in :attr:`ParsedMessage.attachments`. Raises
    :class:`~pytest_tempinbox.errors.AttachmentNotFound` if there is no such
    attachment (a negative index included), also when it lies beyond what
    ``budget`` seconds allow to be read: four times :func:`parse_message`'s
    default, so that every attachment it listed is found.
    """
    described, _, payload = served_attachment(raw, index, budget=budget)
    return described, payload


def served_attachment(
    raw: bytes, index: int, *, budget: float = 2.0
) -> tuple[Attachment, str, bytes]:
    """Return attachment ``index`` as the API serves it: description, Content-Type, bytes.

    The Content-Type is the part's own with its parameters, as an HTTP header
    value (see :func:`pytest_tempinbox.parsing.headers.media_type`): a
    ``text/csv; charset=windows-1252`` part is served so, and a part without a
    charset is served without one. Raises as :func:`attachment_payload`.
    """
    if not 0 <= index < MAX_ATTACHMENTS:
        why = f" (only the first {MAX_ATTACHMENTS:,} are listed)" if index > 0 else ""
        raise AttachmentNotFound(f"the message has no attachment {index}{why}")
    run = ParseRun(budget)
    layout = _layout(_parse(raw, run), run, until=index)
    if index < len(layout.attachments):
        path, part = layout.attachments[index]
        described, payload = _attachment(part, index, _linesep(raw), run, _part_name(path))
        try:
            # Not those of a multipart served as text (its boundary means nothing then).
            own = described.content_type == clean(part.get_content_type())
            params = part.get_params() if own else None
        except Exception:
            params = None
        return described, media_type(described.content_type, params), payload
    if layout.stopped or run.feed_cut:
        why = f"only {len(layout.attachments):,} could be read within the parse budget"
    else:
        why = f"it has {len(layout.attachments)}"
    raise AttachmentNotFound(f"the message has no attachment {index} ({why})")
