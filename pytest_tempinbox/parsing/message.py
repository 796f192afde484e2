"""Raw RFC 5322 bytes -> message fields: addresses, bodies, attachments, links, codes.

Standard library only and no I/O. Whatever bytes arrive, :func:`parse_message`
returns a result: senders and test code are entitled to send broken mail, and a
message that cannot be read is worse than one read approximately. What was
broken, or left unread, is told in :attr:`ParsedMessage.defects`.

The usual message (a text body, an HTML body or both) is read without the email
package, to the same result (:mod:`pytest_tempinbox.parsing.fast`). Any other has
its structure parsed with the ``compat32`` policy, which is about ten times
faster than ``email.policy.default`` and never raises on a header; headers are
decoded by this package, and only those that need it. This module puts the
message together and serves its attachments;
:mod:`pytest_tempinbox.parsing.parts` reads the structure and the payloads,
:mod:`pytest_tempinbox.parsing.headers` reads addresses, dates and the header
map, :mod:`pytest_tempinbox.parsing.decode` decodes text, and
:mod:`pytest_tempinbox.parsing.budget` keeps the parse's one clock, which the
way in takes as ``clock``. Every string handed out goes through
:func:`pytest_tempinbox.parsing.decode.clean`, so none carries a lone surrogate and all
survive ``json.dumps`` followed by ``.encode("utf-8")``.

No input may make a parse run away: the work is bounded by a time budget,
checked between bounded steps (a few KiB of input, one part, one header), and
by caps on size where those are cheaper than the clock.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from email.message import Message

from ..errors import AttachmentNotFound
from ..values import Address, Attachment, Link
from .budget import Clock, ParseRun
from .codes import find_codes
from .decode import clean, to_text, unfold
from .fast import SimpleMessage, simple_message
from .headers import addresses, header_map, media_type, parse_date
from .parts import (
    MAX_ATTACHMENTS,
    Layout,
    describe_attachment,
    line_ending,
    note_email_defects,
    parse_structure,
    part_name,
    part_payload,
    sort_parts,
)
from .text_links import text_links

__all__ = [
    "MAX_ATTACHMENTS",
    "ParsedMessage",
    "attachment_payload",
    "parse_message",
    "served_attachment",
]

_SEARCH_LIMIT = 1 << 20  # characters of each body searched for links and codes


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


def _body(path: str, part: Message, run: ParseRun) -> str:
    try:
        charset = part.get_content_charset()
    except Exception:
        charset = None
    return _text(part_payload(part, "\n"), charset, path, run)


def _text(data: bytes, charset: str | None, path: str, run: ParseRun) -> str:
    text = to_text(data, charset, run, part_name(path))
    return clean(text.replace("\r\n", "\n").replace("\r", "\n"))


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
    deadline, clock = run.deadline, run.clock
    text = _searched(text, "the text body", run) if text is not None else None
    html = _searched(html, "the HTML body", run) if html is not None else None
    in_text = text_links(text, deadline=deadline, clock=clock) if text is not None else []
    in_html: list[tuple[str, str | None]] = []
    body = text if text is not None else ""
    if html is not None:
        from .html import html_anchors, html_text  # only for mail that has HTML

        in_html = html_anchors(html, deadline=deadline, clock=clock)
        body = text if text is not None else html_text(html)
    links = _link_details(in_html, in_text, html_first)
    searched = _searched(subject, "the subject", run)
    codes = find_codes(searched, body, html, deadline=deadline, clock=clock)
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


def parse_message(
    raw: bytes, *, budget: float = 0.5, clock: Clock = time.monotonic
) -> ParsedMessage:
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
    ``clock`` is where the parse reads the time, in seconds, as from
    :func:`time.monotonic` (see :mod:`pytest_tempinbox.parsing.budget`).
    """
    run = ParseRun(budget, clock)
    simple = simple_message(raw)
    if simple is not None:
        return _parsed(raw, run, _simple_structure(raw, simple, run))
    return _parsed(raw, run, _structure(raw, run))


# A plain class, not a dataclass: making a dataclass costs about a millisecond of import
# (its methods are compiled from source), and this one is made at every server's start.
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
        html_first: bool = False,
        layout: Layout | None = None,
    ) -> None:
        self.headers, self.raw_headers = headers, raw_headers
        self.text: Callable[[], str] | None = None
        self.html: Callable[[], str] | None = None
        self.html_first, self.layout = html_first, layout


def _structure(raw: bytes, run: ParseRun) -> _Structure:
    message = parse_structure(raw, run)
    if b"\x00" in raw:
        run.note("NUL bytes in the message")
    headers, raw_headers = header_map(message, run)
    layout = sort_parts(message, run)
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
        linesep = line_ending(raw)
        for index, (path, part) in enumerate(layout.attachments):
            if run.expired():
                break
            attachments.append(describe_attachment(part, index, linesep, run, part_name(path))[0])
        if layout.stopped or len(attachments) < len(layout.attachments):
            run.cut(f"attachments after #{len(attachments):,} not listed")
        if layout.capped:
            run.note(
                f"more than {MAX_ATTACHMENTS:,} attachments: "
                f"attachments after #{MAX_ATTACHMENTS:,} not listed"
            )
        note_email_defects(layout, run)
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


def attachment_payload(
    raw: bytes, index: int, *, budget: float = 2.0, clock: Clock = time.monotonic
) -> tuple[Attachment, bytes]:
    """Return the description and decoded bytes of attachment ``index`` of a message.

    ``index`` counts as in :attr:`ParsedMessage.attachments`. Raises
    :class:`~pytest_tempinbox.errors.AttachmentNotFound` if there is no such
    attachment (a negative index included), also when it lies beyond what
    ``budget`` seconds allow to be read: four times :func:`parse_message`'s
    default, so that every attachment it listed is found. ``clock`` is as for
    :func:`parse_message`.
    """
    described, _, payload = served_attachment(raw, index, budget=budget, clock=clock)
    return described, payload


def served_attachment(
    raw: bytes, index: int, *, budget: float = 2.0, clock: Clock = time.monotonic
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
    run = ParseRun(budget, clock)
    layout = sort_parts(parse_structure(raw, run), run, until=index)
    if index < len(layout.attachments):
        path, part = layout.attachments[index]
        described, payload = describe_attachment(
            part, index, line_ending(raw), run, part_name(path)
        )
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
