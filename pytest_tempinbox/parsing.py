"""Raw RFC 5322 bytes -> message fields: addresses, bodies, attachments, links, codes.

Standard library only and no I/O. Whatever bytes arrive, :func:`parse_message`
returns a result: senders and test code are entitled to send broken mail, and a
message that cannot be read is worse than one read approximately.

The structure is parsed with the ``compat32`` policy, which is about ten times
faster than ``email.policy.default`` and never raises on a header; headers are
decoded here, and only those that need it. Every string handed out goes through
:func:`_clean`, so none carries a lone surrogate and all survive ``json.dumps``
followed by ``.encode("utf-8")``.
"""

from __future__ import annotations

import binascii
import inspect
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from email import message_from_bytes
from email.errors import InvalidBase64LengthDefect
from email.message import Message
from email.parser import BytesParser
from email.utils import getaddresses, parsedate_to_datetime
from typing import Any

from ._extract import find_codes, html_links, html_text, text_links
from .errors import AttachmentNotFound
from .models import Address, Attachment

__all__ = ["ParsedMessage", "attachment_payload", "parse_message"]


@dataclass(frozen=True, slots=True)
class ParsedMessage:
    """Everything the service derives from a message's raw bytes.

    ``headers`` maps lowercase names to every value in order, decoded and
    unfolded. ``text`` and ``html`` are the first ``text/plain`` and
    ``text/html`` parts that are not attachments; every other leaf part is in
    ``attachments``, whose ``index`` is its position there.
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


# --- text: surrogates, charsets, encoded words --------------------------------

_SURROGATES = re.compile("[\ud800-\udfff]+")


def _decode_surrogates(match: re.Match[str]) -> str:
    try:
        data = match.group().encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a surrogate that never stood for a byte
        return "\ufffd"
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def _clean(text: str) -> str:
    # Bytes the ASCII-based parser could not read come back as surrogateescape'd
    # code points: raw UTF-8 (RFC 6532) headers, or undeclared 8-bit text.
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATES.sub(_decode_surrogates, text)
    return text


def _to_text(data: bytes, charset: str | None) -> str:
    # Declared charsets lie (us-ascii over UTF-8) or are unknown to Python; the
    # last resort, latin-1, cannot fail.
    for candidate in (charset, "utf-8"):
        if candidate:
            try:
                return data.decode(candidate.strip().strip("\"'"))
            except (LookupError, UnicodeError, ValueError, TypeError):
                pass
    return data.decode("latin-1")


def _b64decode(data: bytes) -> bytes:
    try:
        return binascii.a2b_base64(data)  # lenient about junk, strict about length
    except binascii.Error:
        pass
    data = re.sub(rb"[^A-Za-z0-9+/]", b"", data)
    data = data[: len(data) - len(data) % 4] if len(data) % 4 == 1 else data
    try:
        return binascii.a2b_base64(data + b"=" * (-len(data) % 4))
    except binascii.Error:
        return b""


_ENCODED_WORD = re.compile(r"=\?([^?\s]+)\?([bBqQ])\?([\x21-\x3e\x40-\x7e]*)\?=")


def _decode_words(value: str) -> str:
    """Decode RFC 2047 encoded words, leniently: bad ones decode as best they can."""
    if "=?" not in value:
        return value
    pieces: list[str] = []
    pending = bytearray()
    pending_charset = ""
    position = 0
    for match in _ENCODED_WORD.finditer(value):
        gap = value[position : match.start()]
        charset = match.group(1).split("*", 1)[0]  # drop an RFC 2231 language tag
        adjacent = bool(pending_charset) and (not gap or gap.isspace())
        if not adjacent or charset.lower() != pending_charset.lower():
            # Adjacent words of one charset are joined as bytes first, because
            # encoders split multi-byte characters across words.
            if pending_charset:
                pieces.append(_to_text(bytes(pending), pending_charset))
                pending.clear()
            if not adjacent:
                pieces.append(gap)
        encoded = match.group(3).encode("ascii")
        if match.group(2) in "bB":
            pending += _b64decode(encoded)
        else:
            pending += binascii.a2b_qp(encoded, header=True)
        pending_charset = charset
        position = match.end()
    if pending_charset:
        pieces.append(_to_text(bytes(pending), pending_charset))
    pieces.append(value[position:])
    return "".join(pieces)


def _unfold(value: object) -> str:
    # Folding only ever inserts a line break before whitespace, so dropping the
    # breaks restores the original line.
    return str(value).replace("\r", "").replace("\n", "").strip()


def _header_text(value: object) -> str:
    unfolded = _clean(_unfold(value))
    try:
        return _clean(_decode_words(unfolded)).strip()
    except Exception:  # a bug in the decoder must not cost the header
        return unfolded


# --- headers -----------------------------------------------------------------

# Since 3.13 (and security releases of older branches) getaddresses() discards a
# whole header it finds suspicious; salvaging what it can is more useful here.
_GETADDRESSES_OPTIONS: dict[str, Any] = (
    {"strict": False} if "strict" in inspect.signature(getaddresses).parameters else {}
)


def _addresses(values: list[str]) -> tuple[Address, ...]:
    found = []
    for value in values:  # one by one, so a broken header spoils only itself
        try:
            pairs = getaddresses([_clean(_unfold(value))], **_GETADDRESSES_OPTIONS)
        except Exception:
            continue
        for name, email in pairs:
            email = _clean(email).strip()
            if email:
                display = _header_text(name) if name else ""
                found.append(Address(name=display or None, email=email))
    return tuple(found)


def _date(value: str) -> datetime | None:
    try:
        moment = parsedate_to_datetime(_clean(_unfold(value)))
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    # RFC 5322 reads "-0000" as "UTC, but the local offset is unknown".
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def _header_map(message: Message) -> tuple[dict[str, tuple[str, ...]], dict[str, list[str]]]:
    """Return the decoded header map and the raw (still folded) values by lowercase name."""
    raw: dict[str, list[str]] = {}
    for name, value in message.raw_items():
        raw.setdefault(_clean(name).strip().lower(), []).append(str(value))
    decoded = {name: tuple(_header_text(value) for value in values) for name, values in raw.items()}
    return decoded, raw


# --- structure ----------------------------------------------------------------


def _parse(raw: bytes) -> Message:
    try:
        return message_from_bytes(raw)
    except Exception:
        pass  # RecursionError on pathological nesting, or a bug in the parser
    try:
        # The headers still parse; the body stays one undivided text part.
        return BytesParser().parsebytes(raw, headersonly=True)
    except Exception:
        return Message()


def _repair_headers(part: Message) -> None:
    # compat32 turns a header holding raw 8-bit bytes into an email.header.Header
    # that decodes as ASCII with U+FFFD, losing UTF-8 filenames; give it text.
    items = list(part.raw_items())
    if all(str(value).isascii() for _, value in items):
        return
    for name, _ in items:
        del part[name]
    for name, value in items:
        part.set_raw(name, _clean(str(value)))


def _children(part: Message) -> list[Message]:
    # is_multipart() first: get_payload() on a leaf decodes 8-bit text with the
    # declared charset, and raises on some.
    payload = part.get_payload() if part.is_multipart() else None
    if not isinstance(payload, list):
        return []
    return [child for child in payload if isinstance(child, Message)]


def _leaves(message: Message) -> list[Message]:
    # Iterative, depth-first, in document order: nesting depth costs no stack.
    leaves = []
    stack = [message]
    while stack:
        part = stack.pop()
        if part.is_multipart() and part.get_content_maintype() == "multipart":
            stack.extend(reversed(_children(part)))
        else:
            leaves.append(part)
    return leaves


def _content_type(part: Message) -> str:
    content_type = _clean(part.get_content_type())
    # A multipart the parser could not split (no boundary, or too deep) is
    # left holding its body as text, and is served as such.
    return "text/plain" if content_type.startswith("multipart/") else content_type


def _filename(part: Message) -> str | None:
    for header, param in (("content-disposition", "filename"), ("content-type", "name")):
        if param not in str(part.get(header, "")).lower():
            continue  # parsing the parameters is most of the cost of telling bodies apart
        try:
            value: Any = part.get_param(param, None, header)
            if isinstance(value, tuple):  # RFC 2231: (charset, language, %-decoded latin-1)
                charset, _, text = value
                try:
                    value = _to_text(str(text).encode("latin-1"), charset)
                except UnicodeEncodeError:
                    value = str(text)
            name = _header_text(value) if value else ""
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


@dataclass(slots=True)
class _Layout:
    """The text body, the HTML body and the attachments, in document order."""

    text: Message | None = None
    html: Message | None = None
    html_first: bool = False
    attachments: list[Message] = field(default_factory=list)


def _layout(message: Message) -> _Layout:
    layout = _Layout()
    for part in _leaves(message):
        _repair_headers(part)
        content_type = _content_type(part)
        if content_type in ("text/plain", "text/html") and not _is_attachment(part):
            if content_type == "text/plain" and layout.text is None:
                layout.text = part
                continue
            if content_type == "text/html" and layout.html is None:
                layout.html = part
                layout.html_first = layout.text is None
                continue
        layout.attachments.append(part)
    return layout


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
            data = _b64decode(data)
        return data if isinstance(data, bytes) else b""
    except Exception:  # including RecursionError from deeply nested message/rfc822
        return b""


def _body(part: Message) -> str:
    try:
        charset = part.get_content_charset()
    except Exception:
        charset = None
    text = _to_text(_payload(part, "\n"), charset)
    return _clean(text.replace("\r\n", "\n").replace("\r", "\n"))


def _attachment(part: Message, index: int, linesep: str) -> tuple[Attachment, bytes]:
    data = _payload(part, linesep)
    content_id = _header_text(part.get("content-id", "")).strip("<> \t") or None
    attachment = Attachment(
        index=index,
        filename=_filename(part),
        content_type=_content_type(part),
        size=len(data),
        content_id=content_id,
        inline=_disposition(part) == "inline",
    )
    return attachment, data


def _linesep(raw: bytes) -> str:
    # Embedded messages are re-serialised; keep the line endings they arrived with.
    return "\r\n" if b"\r\n" in raw else "\n"


# --- public API ----------------------------------------------------------------


def parse_message(raw: bytes) -> ParsedMessage:
    """Parse a message's raw bytes into the fields the service serves. Never raises.

    - A header that cannot be decoded is served as its raw unfolded text; raw
      UTF-8 headers (RFC 6532) are read as UTF-8, other 8-bit bytes as latin-1.
    - ``text``/``html`` are decoded with the declared charset, else UTF-8, else
      latin-1, with LF line endings. A single-part message without a
      Content-Type is text. An empty text part gives ``""``; a message with no
      text part at all (HTML only, attachments only) gives ``None``.
    - A multipart that cannot be split (no boundary, or nested too deeply for
      the parser) is treated as one ``text/plain`` part holding its body.
    - ``links`` come from the ``text`` and ``html`` bodies in document order;
      ``codes`` from the subject, then ``text`` (or the HTML's visible text when
      there is no text part). See :func:`pytest_tempinbox._extract.find_codes`.
    """
    message = _parse(raw)
    headers, raw_headers = _header_map(message)
    layout = _layout(message)

    def first(name: str) -> str | None:
        values = raw_headers.get(name)
        return values[0] if values else None

    senders = _addresses(raw_headers.get("from", []))
    message_id = _clean(_unfold(first("message-id") or "")) or None
    date = first("date")
    subject = headers["subject"][0] if "subject" in headers else ""
    text = _body(layout.text) if layout.text is not None else None
    html = _body(layout.html) if layout.html is not None else None

    in_text = text_links(text) if text is not None else []
    in_html = html_links(html) if html is not None else []
    found = in_html + in_text if layout.html_first else in_text + in_html
    links = dict.fromkeys(_clean(url) for url in found)
    body = text if text is not None else html_text(html) if html is not None else ""
    codes = find_codes(subject, body)

    linesep = _linesep(raw)
    attachments = tuple(
        _attachment(part, index, linesep)[0] for index, part in enumerate(layout.attachments)
    )
    return ParsedMessage(
        message_id=message_id,
        sender=senders[0] if senders else None,
        to=_addresses(raw_headers.get("to", [])),
        cc=_addresses(raw_headers.get("cc", [])),
        reply_to=_addresses(raw_headers.get("reply-to", [])),
        subject=subject,
        date=_date(date) if date is not None else None,
        text=text,
        html=html,
        headers=headers,
        attachments=attachments,
        links=tuple(links),
        codes=tuple(_clean(code) for code in codes),
    )


def attachment_payload(raw: bytes, index: int) -> tuple[Attachment, bytes]:
    """Return the description and decoded bytes of attachment ``index`` of a message.

    ``index`` counts as in :attr:`ParsedMessage.attachments`. Raises
    :class:`~pytest_tempinbox.errors.AttachmentNotFound` if there is no such
    attachment (a negative index included).
    """
    parts = _layout(_parse(raw)).attachments
    if not 0 <= index < len(parts):
        raise AttachmentNotFound(f"the message has no attachment {index} (it has {len(parts)})")
    return _attachment(parts[index], index, _linesep(raw))
