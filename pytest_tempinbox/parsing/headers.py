"""Header fields for the parser: addresses, dates, the decoded header map, media types.

Standard library only and no I/O; every step is bounded, and the clock of the
parse (:class:`~pytest_tempinbox.parsing.budget.ParseRun`) is looked at between steps.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from email.message import Message
from email.utils import collapse_rfc2231_value, parsedate_to_datetime
from typing import Any

from ..values import Address
from .budget import ParseRun
from .decode import clean, header_text, unfold
from .email_internals import address_list

__all__ = ["DOT_ATOM", "SIMPLE_ADDRESS", "addresses", "header_map", "media_type", "parse_date"]

_ADDRESS_PIECE = 16 << 10  # longer address headers are read a piece at a time


def _header_name(name: str) -> str:
    return f"header {name[:40]!r}"


# Up to the next comma outside a quoted string. Linear: nothing follows the
# repetition, so the first (greedy) way through always succeeds and nothing is
# retried. (Possessive quantifiers would say so, but need Python 3.11.)
_TO_COMMA = re.compile(r'(?:[^",]+|"[^"]*"?)*')
_EMPTY_GROUP = re.compile(r"[^:]*:\s*;?")  # "undisclosed-recipients:;"
# The usual header, one address in plain ASCII atoms: "a.b@c.d" or "Name Here <a.b@c.d>".
# address_list() reads these exactly as this does, only ten times slower.
_ATOM = r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+"
#: RFC 5322's dot-atom, ASCII only: a pattern's text.
DOT_ATOM = rf"{_ATOM}(?:\.{_ATOM})*"
SIMPLE_ADDRESS = re.compile(rf"(?:({_ATOM}(?: {_ATOM})*) <)?({DOT_ATOM}@{DOT_ATOM})(?(1)>)")


# One address of an address list: up to the next comma outside a quoted string,
# a comment or angle brackets. Linear, as _TO_COMMA.
_ADDRESS_SEGMENT = re.compile(r'(?:"(?:[^"\\]|\\.)*"?|\((?:[^()\\]|\\.)*\)?|<[^<>]*>?|[^",<(]+)*')
# A display name that is itself an address, unquoted: "alice@x.test <bob@x.test>",
# maybe opening a group ("Team: a@x <b@y>"), with comments anywhere, and the
# group's closing ";". RFC 5322 has no "@" in a phrase, but real mail does, and
# address_list() reads it as two addresses. The "@" must stand outside comments
# ("Bob (bob@x.test) <b@x.test>" is well formed), and the angle brackets must
# end the address: "a@x <b@y> <c@z>" and "a@x <b@y> c@z" are left alone.
# Linear: each repetition's choices begin with different characters, and no
# name character before the "@" can be the "@".
_COMMENT = r"\([^()]*\)"
_ADDRESS_AS_NAME = re.compile(
    r'((?:[^"<>(),;:@]*:)?)'  # a group's name
    rf'((?:[^"<>(),;:@]|{_COMMENT})*@(?:[^"<>(),;:]|{_COMMENT})*)'  # the display name
    r"<([^<>]*)>"
    rf"((?:\s*{_COMMENT})*\s*;?)"
)
_COMMENTS = re.compile(_COMMENT)


def _quote_address_names(text: str) -> str | None:
    """Quote each display name that is an unquoted address; None if there is none.

    ``alice@x.test <bob@x.test>, c@x.test`` becomes
    ``"alice@x.test" <bob@x.test>, c@x.test``, which address_list() reads as
    the name and the address the sender meant. Comments in such an address are
    dropped; any other text is left alone.
    """
    if "<" not in text:
        return None
    segments = []
    changed = False
    position = 0
    while True:
        match = _ADDRESS_SEGMENT.match(text, position)  # always matches, if only ""
        end = match.end() if match else len(text)
        segment = text[position:end]
        found = _ADDRESS_AS_NAME.fullmatch(segment.strip())
        address = _COMMENTS.sub("", found[3]).strip() if found else ""
        if found and address:
            name = " ".join(_COMMENTS.sub(" ", found[2]).split())
            quoted = name.replace("\\", "\\\\").replace('"', '\\"')
            segment = f'{found[1]} "{quoted}" <{address}>{";" if found[4].endswith(";") else ""}'
            changed = True
        segments.append(segment)
        if end >= len(text):
            break
        position = end + 1  # past the comma
    return ",".join(segments) if changed else None


def _address_pieces(text: str) -> list[str]:
    """Split a long address header at commas, so each piece is read in bounded time."""
    pieces = []
    start = 0
    while len(text) - start > _ADDRESS_PIECE:
        position = start + _ADDRESS_PIECE
        if text.count('"', start, position) % 2:  # inside a quoted string
            close = text.find('"', position)
            position = len(text) if close < 0 else close + 1
        match = _TO_COMMA.match(text, position)  # always matches, if only ""
        end = match.end() if match else len(text)
        pieces.append(text[start:end])
        start = end + 1
    pieces.append(text[start:])
    return pieces


def addresses(name: str, values: list[str], run: ParseRun) -> tuple[Address, ...]:
    """The addresses of every value of header ``name``, bounded in count and time."""
    if not values:
        return ()
    found: list[Address] = []
    where = _header_name(name)
    pieces = 0
    for value in values:  # one by one, so a broken header spoils only itself
        text = clean(unfold(value))
        readable = skipped = False
        for piece in _address_pieces(text):
            pieces += 1
            if pieces > 1 and run.expired():  # the first 16 KiB are read in any case
                run.cut(f"addresses in {where} after the first {len(found):,} not read")
                return tuple(found)
            if len(piece) > 4 * _ADDRESS_PIECE:
                run.note(f"{where} holds over 64 KiB without a comma, not read as addresses")
                skipped = True
                continue
            simple = SIMPLE_ADDRESS.fullmatch(piece)
            if simple:
                pairs = [(simple[1] or "", simple[2])]
            else:
                quoted = _quote_address_names(piece)
                if quoted is not None:
                    run.note(f"unquoted address as display name in {where}")
                    piece = quoted
                try:
                    pairs = address_list([piece])
                except Exception:
                    continue
            for display, email in pairs:
                email = clean(email).strip()
                if email:
                    readable = True
                    shown = header_text(display, run, where) if display else ""
                    found.append(Address(name=shown or None, email=email))
        if not (readable or skipped or not text or _EMPTY_GROUP.fullmatch(text)):
            run.note(f"{where} could not be parsed, served raw")
    return tuple(found)


def parse_date(value: str) -> datetime | None:
    """A ``Date`` header as an aware datetime; None when it reads as no date."""
    try:
        # A date is short; splitting megabytes into words only to ignore them is not.
        moment = parsedate_to_datetime(clean(unfold(value[:1024])))
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    # RFC 5322 reads "-0000" as "UTC, but the local offset is unknown".
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


# RFC 9110's token, and what a quoted-string may hold in an HTTP header (ASCII only).
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_MEDIA_TYPE = re.compile(rf"{_TOKEN.pattern}/{_TOKEN.pattern}")
_QUOTABLE = re.compile(r"[\t\x20-\x7e]*")
_MEDIA_TYPE_LIMIT = 1024  # characters of parameters served at most
_NOT_SERVED_PARAMS = frozenset({"name"})


def media_type(content_type: str, params: list[tuple[str, Any]] | None = None) -> str:
    """Return a part's Content-Type as an HTTP header value: its type and its own parameters.

    ``params`` are the part's parameters as ``Message.get_params()`` gives them
    (the first, the type itself, is skipped). Each is served as the sender wrote
    it (``charset=windows-1252``, ``format=flowed``), re-quoted where needed, and
    nothing is added: a part without a charset is served without one. Left out:
    ``name``, the file's name, which Content-Disposition gives once made safe; a
    repeated parameter; one without a value; one that is not ASCII or would take
    the parameters past 1 KiB. A type that is not ``token/token`` is served as
    ``application/octet-stream``.
    """
    if not _MEDIA_TYPE.fullmatch(content_type):
        return "application/octet-stream"
    served = [content_type]
    seen = set(_NOT_SERVED_PARAMS)
    length = 0
    for name, value in (params or [])[1:]:
        name = str(name).lower()
        if name in seen or not _TOKEN.fullmatch(name):
            continue
        seen.add(name)
        try:
            text = collapse_rfc2231_value(value, errors="strict", fallback_charset="us-ascii")
        except Exception:
            continue
        if not text:  # "; foo" or 'foo=""': no value to serve
            continue
        if not _TOKEN.fullmatch(text):
            if not _QUOTABLE.fullmatch(text):
                continue
            text = '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
        length += len(name) + len(text) + 3
        if length > _MEDIA_TYPE_LIMIT:
            break
        served.append(f"{name}={text}")
    return "; ".join(served)


_SERVED_ALONE = ("from", "to", "cc", "reply-to", "subject", "date", "message-id")
_SERVED_ALONE_TEXT = ", ".join(_SERVED_ALONE)


def header_map(
    message: Message, run: ParseRun
) -> tuple[dict[str, tuple[str, ...]], dict[str, list[str]]]:
    """Return the decoded header map and the raw (still folded) values by lowercase name."""
    raw: dict[str, list[str]] = {}
    decoded: dict[str, list[str]] = {}
    items = list(message.raw_items())
    for number, (name, value) in enumerate(items):
        if run.expired():
            run.cut(f"headers after #{number:,} not listed, but for {_SERVED_ALONE_TEXT}")
            # The first of each field served on its own is still looked for.
            wanted = set(_SERVED_ALONE) - raw.keys()
            later = []
            for item in items[number:]:
                if wanted and item[0].strip().lower() in wanted:
                    wanted.discard(item[0].strip().lower())
                    later.append(item)
            items = later
            break
        written = clean(str(name)).strip()
        key = written.lower()
        raw.setdefault(key, []).append(str(value))
        decoded.setdefault(key, []).append(header_text(value, run, _header_name(written)))
    else:
        items = []
    for name, value in items:
        key = name.strip().lower()
        raw.setdefault(key, []).append(str(value))
        decoded.setdefault(key, []).append(header_text(value, run, _header_name(name.strip())))
    return {key: tuple(values) for key, values in decoded.items()}, raw
