"""SEARCH criteria (RFC 3501 6.4.4) read into one predicate over a message.

Kept: ALL, SEEN, UNSEEN, DELETED, UNDELETED, FLAGGED, UNFLAGGED, ANSWERED,
UNANSWERED, DRAFT, UNDRAFT, NEW, OLD, RECENT, FROM, TO, CC, BCC, SUBJECT,
HEADER, BODY, TEXT, SINCE, BEFORE, ON (the received date), LARGER, SMALLER,
UID, sequence sets, NOT, OR and parenthesized groups. Text matches are
case-insensitive substrings of the header as written or of the raw message.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date, datetime, timezone

from ...store.protocol import StoredMessage
from .mailbox import MONTHS, Mailbox
from .mime import parse_part
from .tokens import BadSyntax, Value, parse_sequence_set, resolve, uid_set_contains

__all__ = ["Predicate", "parse_search"]

Predicate = Callable[[int, StoredMessage], bool]
_FLAG_KEYS = {
    "SEEN": ("\\Seen", True),
    "UNSEEN": ("\\Seen", False),
    "DELETED": ("\\Deleted", True),
    "UNDELETED": ("\\Deleted", False),
    "FLAGGED": ("\\Flagged", True),
    "UNFLAGGED": ("\\Flagged", False),
    "ANSWERED": ("\\Answered", True),
    "UNANSWERED": ("\\Answered", False),
    "DRAFT": ("\\Draft", True),
    "UNDRAFT": ("\\Draft", False),
    "NEW": ("\\Seen", False),
}
_HEADERS = {"FROM", "TO", "CC", "BCC", "SUBJECT"}


def parse_search(args: list[Value], mailbox: Mailbox) -> Predicate:
    """All the criteria of a SEARCH command, ANDed; :class:`BadSyntax` when they do not read."""
    args = list(args)
    if args and isinstance(args[0], str) and args[0].upper() == "CHARSET":
        del args[:2]
    if not args:
        raise BadSyntax("SEARCH needs a criterion, such as ALL")
    tests = []
    while args:
        tests.append(_key(args, mailbox))
    return lambda number, message: all(test(number, message) for test in tests)


def _text(args: list[Value], key: str) -> str:
    if not args or isinstance(args[0], list):
        raise BadSyntax(f"{key} needs a string")
    value = args.pop(0)
    assert not isinstance(value, list)
    return (value.decode("utf-8", "replace") if isinstance(value, bytes) else value).lower()


def _key(args: list[Value], mailbox: Mailbox) -> Predicate:
    value = args.pop(0)
    if isinstance(value, list):
        inner = parse_search(value, mailbox) if value else None
        if inner is None:
            raise BadSyntax("an empty parenthesized search")
        return inner
    if isinstance(value, bytes):
        raise BadSyntax("a search key must be an atom")
    key = value.upper()
    if key in ("ALL", "OLD"):
        return lambda number, message: True
    if key == "RECENT":
        return lambda number, message: False
    if key in _FLAG_KEYS:
        flag, present = _FLAG_KEYS[key]
        return lambda number, message: (flag in mailbox.flags(message)) == present
    if key in ("KEYWORD", "UNKEYWORD"):
        _text(args, key)
        return lambda number, message: key == "UNKEYWORD"
    if key in _HEADERS:
        return _header(key.lower(), _text(args, key))
    if key == "HEADER":
        name = _text(args, key)
        return _header(name, _text(args, key))
    if key in ("BODY", "TEXT"):
        needle = _text(args, key).encode("utf-8")
        return lambda number, message: needle in message.raw.lower()
    if key in ("SINCE", "BEFORE", "ON", "SENTSINCE", "SENTBEFORE", "SENTON"):
        day = _date(_text(args, key))
        compare = {"SINCE": date.__ge__, "BEFORE": date.__lt__, "ON": date.__eq__}[
            key.removeprefix("SENT")
        ]
        return lambda number, message: compare(_received(message), day)
    if key in ("LARGER", "SMALLER"):
        size_text = _text(args, key)
        if not size_text.isdigit():
            raise BadSyntax(f"{key} needs a number")
        size = int(size_text)
        if key == "LARGER":
            return lambda number, message: message.size > size
        return lambda number, message: message.size < size
    if key == "NOT":
        if not args:
            raise BadSyntax("NOT needs a criterion")
        inner = _key(args, mailbox)
        return lambda number, message: not inner(number, message)
    if key == "OR":
        if len(args) < 2:
            raise BadSyntax("OR needs two criteria")
        left = _key(args, mailbox)
        right = _key(args, mailbox)
        return lambda number, message: left(number, message) or right(number, message)
    if key == "UID":
        highest = mailbox.uids[-1] if mailbox.uids else 1  # what * means: the highest UID in use
        ranges = resolve(parse_sequence_set(_text(args, key)), highest)
        return lambda number, message: uid_set_contains(ranges, message.uid)
    try:
        seq = resolve(parse_sequence_set(value), len(mailbox.messages) or 1)
    except BadSyntax:
        raise BadSyntax(f"unknown search key {value[:40]!r}") from None
    return lambda number, message: uid_set_contains(seq, number)


def _header(name: str, needle: str) -> Predicate:
    def test(number: int, message: StoredMessage) -> bool:
        value = parse_part(message.raw).text_of(name)
        return value is not None and needle in value.lower()

    return test


def _received(message: StoredMessage) -> date:
    return message.received_at.astimezone(timezone.utc).date()


def _date(text: str) -> date:
    try:
        day, month, year = text.strip('"').split("-")
        return datetime(int(year), MONTHS.index(month.capitalize()) + 1, int(day)).date()
    except ValueError:
        raise BadSyntax(f"{text!r} is not a date such as 1-Feb-2026") from None
