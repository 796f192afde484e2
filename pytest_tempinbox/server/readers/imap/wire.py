"""Reading one IMAP command off a session, literals included, and writing values back.

:func:`read_command` reads a command's first line, and for each line that ends
with a literal's ``{n}`` (or LITERAL+'s ``{n+}``) asks for it with ``+`` (not
for ``{n+}``), reads exactly ``n`` octets and the line that follows. The limits
hold before anything is read into memory: a line over :data:`LINE_LIMIT`, a
literal over :data:`LITERAL_LIMIT` or a command over :data:`COMMAND_LIMIT` in
all. A synchronizing literal that is too big is refused before the client
sends it (the session goes on); a non-synchronizing one is already on its way,
so the session answers and closes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..session import IdleTimeout, LineTooLong, ReaderSession
from .tokens import BadSyntax, Value, tokenize

__all__ = [
    "COMMAND_LIMIT",
    "LINE_LIMIT",
    "LITERAL_LIMIT",
    "Command",
    "CommandRefused",
    "ConnectionEnds",
    "read_command",
]

LINE_LIMIT = 65536
"""Octets in one line of a command, CRLF included."""
LITERAL_LIMIT = 65536
"""Octets in one literal: commands here carry no message, only names and words."""
COMMAND_LIMIT = 262144
"""Octets in one command, its lines and literals together."""

_LITERAL = re.compile(rb"\{(\d{1,10})(\+?)\}\r?\n\Z")
_TAG = re.compile(rb"[!#$&'+,\-./0-9:;<=>?@A-Z^_`a-z|~\[]+")


class ConnectionEnds(Exception):
    """The session must end: the client left, or it sent what cannot be skipped."""

    def __init__(self, reply: bytes = b"") -> None:
        super().__init__(reply)
        self.reply = reply


class CommandRefused(Exception):
    """The command is refused before it is run: ``BAD`` with this text (tag ``*`` if unknown)."""

    def __init__(self, tag: str, text: str) -> None:
        super().__init__(text)
        self.tag = tag
        self.text = text


@dataclass(frozen=True)
class Command:
    """One command: its tag, its name (uppercased) and its arguments (:mod:`.tokens`)."""

    tag: str
    name: str
    args: list[Value]


async def read_command(session: ReaderSession) -> Command:
    """Read the next command; raise :class:`CommandRefused` or :class:`ConnectionEnds`."""
    line = await _line(session)
    data = bytearray(line)
    while (literal := _LITERAL.search(data)) is not None:
        count, non_sync = int(literal.group(1)), literal.group(2) == b"+"
        if count > LITERAL_LIMIT or len(data) + count > COMMAND_LIMIT:
            text = f"literal too big: {count} octets (limit {LITERAL_LIMIT})"
            if non_sync:
                raise ConnectionEnds(f"* BYE {text}\r\n".encode())
            raise CommandRefused(_tag_of(data), text)
        if data.endswith(b"}\n"):  # a bare LF ending: read the literal all the same
            data[-1:] = b"\r\n"
        if not non_sync:
            session.write(b"+ Ready for literal data\r\n")
            await session.drain()
        data += await _exactly(session, count)
        data += await _line(session)
    return _parse(bytes(data))


async def _line(session: ReaderSession) -> bytes:
    try:
        line = await session.readline(LINE_LIMIT)
    except LineTooLong:
        raise ConnectionEnds(
            f"* BYE line too long (limit {LINE_LIMIT} octets)\r\n".encode()
        ) from None
    except IdleTimeout:
        raise ConnectionEnds(b"* BYE idle for too long\r\n") from None
    if not line.endswith(b"\n"):
        raise ConnectionEnds()  # the client left (an unterminated line at the end is dropped)
    return line


async def _exactly(session: ReaderSession, count: int) -> bytes:
    data = await session.read_exactly(count)
    if len(data) != count:
        raise ConnectionEnds()  # the client left inside the literal
    return data


def _tag_of(data: bytes | bytearray) -> str:
    match = _TAG.match(data)
    return "*" if match is None else match.group().decode("ascii")


def _parse(data: bytes) -> Command:
    body = data[:-2] if data.endswith(b"\r\n") else data[:-1]
    tag_match = _TAG.match(body)
    if tag_match is None or tag_match.end() >= len(body) or body[tag_match.end()] != 0x20:
        tag = "*" if tag_match is None else tag_match.group().decode("ascii")
        raise CommandRefused(tag, "expected a tag, a space and a command")
    tag = tag_match.group().decode("ascii")
    rest = tag_match.end() + 1
    name_end = body.find(b" ", rest)
    name_end = len(body) if name_end < 0 else name_end
    name = body[rest:name_end]
    if not name.isalpha():
        raise CommandRefused(tag, "expected a command name")
    try:
        args = tokenize(body, name_end)
    except BadSyntax as exc:
        raise CommandRefused(tag, str(exc)) from None
    return Command(tag, name.decode("ascii").upper(), args)
