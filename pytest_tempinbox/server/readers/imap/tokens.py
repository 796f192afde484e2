"""IMAP command arguments: bytes in, values out; no I/O (RFC 3501 section 9).

A command as :mod:`.wire` assembles it (its lines, each literal's ``{n}`` line
followed by the literal's octets) is cut here into values: an atom is a
:class:`str` (``BODY.PEEK[HEADER.FIELDS (FROM)]<0.100>`` is one atom, brackets
and all), a quoted string or a literal is :class:`bytes`, a parenthesized list
is a :class:`list`. Anything else raises :class:`BadSyntax`, whose text the
session answers with ``BAD``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = [
    "BadSyntax",
    "SequenceSet",
    "Value",
    "astring",
    "nstring",
    "parse_sequence_set",
    "quoted",
    "resolve",
    "tokenize",
    "uid_set_contains",
]

Value = str | bytes | list["Value"]
"""One argument: an atom (str), a string (bytes), or a parenthesized list of them."""

# Octets an atom may not hold (RFC 3501 atom-specials but the list wildcards and
# the flag's backslash, which atoms here may hold) and controls.
_SPECIAL = frozenset(b'(){ "]') | frozenset(range(0x20)) | {0x7F}


class BadSyntax(ValueError):
    """The command is not well formed; its text says how, for a ``BAD`` answer."""


def tokenize(data: bytes, start: int = 0) -> list[Value]:
    """Cut ``data`` (what follows the command name) into values."""
    values, end = _values(data, start, closing=None)
    if end != len(data):  # pragma: no cover - _values reads to the end or raises
        raise BadSyntax("unexpected text at the end of the command")
    return values


def _values(data: bytes, i: int, closing: int | None) -> tuple[list[Value], int]:
    values: list[Value] = []
    size = len(data)
    while True:
        while i < size and data[i] == 0x20:
            i += 1
        if i >= size:
            if closing is not None:
                raise BadSyntax("unbalanced parenthesis: a ')' is missing")
            return values, i
        octet = data[i]
        if octet == closing:
            return values, i + 1
        if octet == 0x28:  # (
            inner, i = _values(data, i + 1, 0x29)
            values.append(inner)
        elif octet == 0x29:
            raise BadSyntax("unbalanced parenthesis: a ')' without its '('")
        elif octet == 0x22:  # "
            string, i = _quoted(data, i + 1)
            values.append(string)
        elif octet == 0x7B:  # {
            literal, i = _literal(data, i + 1)
            values.append(literal)
        else:
            atom, i = _atom(data, i)
            values.append(atom)
        if i < size and data[i] not in (0x20, 0x29):
            raise BadSyntax("values must be separated by a space")


def _quoted(data: bytes, i: int) -> tuple[bytes, int]:
    out = bytearray()
    size = len(data)
    while i < size:
        octet = data[i]
        if octet == 0x22:
            return bytes(out), i + 1
        if octet == 0x5C:  # backslash quotes the next octet, which must be " or \
            if i + 1 >= size or data[i + 1] not in (0x22, 0x5C):
                raise BadSyntax('a backslash in a quoted string may only quote " or \\')
            i += 1
            octet = data[i]
        elif octet in (0x0D, 0x0A, 0x00):
            raise BadSyntax("a quoted string may not hold CR, LF or NUL")
        out.append(octet)
        i += 1
    raise BadSyntax("unterminated quoted string")


def _literal(data: bytes, i: int) -> tuple[bytes, int]:
    end = data.find(b"}\r\n", i)
    if end < 0:
        raise BadSyntax("a literal's '{n}' must end its line")
    count = data[i:end].rstrip(b"+")
    if not count.isdigit():
        raise BadSyntax("a literal's length must be a number")
    start = end + 3
    stop = start + int(count)
    if stop > len(data):  # pragma: no cover - the wire reads every literal whole
        raise BadSyntax("the literal is shorter than announced")
    return data[start:stop], stop


def _atom(data: bytes, i: int) -> tuple[str, int]:
    start = i
    size = len(data)
    depth = 0
    while i < size:
        octet = data[i]
        if depth:  # inside BODY[...]: anything up to the matching bracket but CR/LF
            if octet == 0x5D:
                depth -= 1
            elif octet in (0x0D, 0x0A):
                raise BadSyntax("unterminated '[' in an atom")
        elif octet == 0x5B:
            depth += 1
        elif octet in _SPECIAL:
            break
        if octet > 0x7E:
            raise BadSyntax("8-bit octets are not allowed outside strings")
        i += 1
    if depth:
        raise BadSyntax("unterminated '[' in an atom")
    if i == start:
        raise BadSyntax(f"unexpected character {chr(data[i])!r}")
    return data[start:i].decode("ascii"), i


def astring(value: Value, what: str) -> str:
    """An atom or a string as text (UTF-8, errors replaced); a list raises :class:`BadSyntax`."""
    if isinstance(value, list):
        raise BadSyntax(f"{what} must be an atom or a string, not a list")
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value


SequenceSet = list[tuple[int, int]]
"""Ranges ``(low, high)``, both included; 0 stands for ``*``, the largest number in use."""


def parse_sequence_set(text: str) -> SequenceSet:
    """Read ``1:4,7,9:*`` into ranges; :class:`BadSyntax` when it is not one."""
    ranges: SequenceSet = []
    for item in text.split(","):
        low_text, colon, high_text = item.partition(":")
        low = _seq_number(low_text)
        high = _seq_number(high_text) if colon else low
        ranges.append((low, high))
    return ranges


def _seq_number(text: str) -> int:
    if text == "*":
        return 0
    if not text.isdigit() or len(text) > 10 or int(text) == 0 or int(text) > 0xFFFFFFFF:
        raise BadSyntax(f"{text!r} is not a message number (1 to 4294967295, or *)")
    return int(text)


def resolve(ranges: SequenceSet, largest: int) -> list[tuple[int, int]]:
    """Ranges with ``*`` replaced by ``largest``, each low to high."""
    out = []
    for low, high in ranges:
        low = low or largest
        high = high or largest
        out.append((min(low, high), max(low, high)))
    return out


def uid_set_contains(ranges: Sequence[tuple[int, int]], number: int) -> bool:
    """Tell whether ``number`` is in resolved ``ranges``."""
    return any(low <= number <= high for low, high in ranges)


_QUOTABLE = re.compile(rb"[\x01-\x09\x0b\x0c\x0e-\x7f]{0,1000}")


def quoted(value: bytes) -> bytes:
    """``value`` as an IMAP string: quoted when it can be, a literal otherwise."""
    if _QUOTABLE.fullmatch(value):
        return b'"' + value.replace(b"\\", b"\\\\").replace(b'"', b'\\"') + b'"'
    return b"{%d}\r\n%s" % (len(value), value)


def nstring(value: bytes | str | None) -> bytes:
    """``value`` as an IMAP nstring: ``NIL`` for None."""
    if value is None:
        return b"NIL"
    return quoted(value.encode("utf-8", "surrogateescape") if isinstance(value, str) else value)
