"""POP3 (RFC 1939, CAPA of RFC 2449, STLS of RFC 2595) over an inbox: ``handle(session)``.

The user is an inbox's address, the password the one ``POST /api/generate``
handed out (USER/PASS or AUTH PLAIN). The maildrop is the inbox's messages at
login, numbered from 1; UIDL gives each one's store id; RETR and TOP send the
raw bytes as received, dot-stuffed. DELE marks, RSET unmarks, and QUIT deletes
the marked ones from the inbox for every reader (the UPDATE state). There is
no exclusive lock on the maildrop: two sessions may read one inbox at once.
"""

from __future__ import annotations

import asyncio
import base64
import binascii

from ...errors import InboxNotFound, StoreUnavailable
from ..store.protocol import StoredMessage
from .session import IdleTimeout, LineTooLong, ReaderSession

__all__ = ["BUSY", "LINE_LIMIT", "MAX_ERRORS", "handle"]

BUSY = b"-ERR [SYS/TEMP] too many connections, try again later\r\n"
LINE_LIMIT = 512
"""Octets in a command line (RFC 2449's 255 for a command, with room for AUTH PLAIN's)."""
MAX_ERRORS = 10
"""Bad commands in a row after which the session is closed."""
FAILED_LOGIN_DELAY = 0.5
"""Seconds a wrong login waits before its answer, as Dovecot does."""


def _ok(text: str = "") -> bytes:
    return b"+OK " + text.encode() + b"\r\n" if text else b"+OK\r\n"


def _err(text: str) -> bytes:
    return b"-ERR " + text.encode() + b"\r\n"


def _stuffed(raw: bytes) -> bytes:
    """``raw`` as a multi-line answer: CRLF line ends, dot-stuffed, ended by ``.``."""
    lines = raw.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    body = b"".join(
        (b"." if line.startswith(b".") else b"") + line.rstrip(b"\r") + b"\r\n" for line in lines
    )
    return body + b".\r\n"


def _top(raw: bytes, count: int) -> bytes:
    head, sep, body = raw.partition(b"\r\n\r\n")
    if not sep:
        head, sep, body = raw.partition(b"\n\n")
    if not sep:
        return raw
    kept = body.split(b"\n")[:count] if count else []
    return head + sep + b"\n".join(kept) + (b"\n" if kept else b"")


class _Session:
    def __init__(self, session: ReaderSession) -> None:
        self.session = session
        self.context = session.context
        self.user: str | None = None
        self.inbox: str | None = None
        self.drop: list[StoredMessage] = []
        self.deleted: set[int] = set()
        self.tally = session.context.tally.pop3
        self.tally.sessions += 1

    def capabilities(self) -> bytes:
        caps = ["TOP", "UIDL", "USER", "RESP-CODES", "AUTH-RESP-CODE", "PIPELINING", "SASL PLAIN"]
        if self.context.starttls and not self.session.tls_active and self.inbox is None:
            caps.append("STLS")
        caps.append("IMPLEMENTATION pytest-tempinbox")
        return (
            _ok("Capability list follows") + "".join(c + "\r\n" for c in caps).encode() + b".\r\n"
        )

    def tls_first(self) -> bool:
        return self.context.tls_required and not self.session.tls_active

    async def login(self, user: str, password: str) -> bytes:
        try:
            inbox = self.context.passwords.check(user, password)
            drop = [] if inbox is None else self.context.store.messages(inbox)
        except StoreUnavailable:
            return _err("[SYS/TEMP] the store does not answer; try again later")
        except InboxNotFound:  # deleted since the check: as if it never was
            inbox = None
        if inbox is None:
            self.tally.logins_failed += 1
            await asyncio.sleep(FAILED_LOGIN_DELAY)
            return _err("[AUTH] invalid user name or password")
        self.inbox, self.drop = inbox, drop
        size = sum(m.size for m in self.drop)
        return _ok(f"{len(self.drop)} messages ({size} octets)")

    def message(self, arg: str) -> StoredMessage | None:
        if not arg.isdigit() or not 0 < int(arg) <= len(self.drop) or int(arg) in self.deleted:
            return None
        return self.drop[int(arg) - 1]

    def listing(self, arg: str, value: str) -> bytes:
        if arg:
            found = self.message(arg)
            if found is None:
                return _err("no such message")
            return _ok(f"{arg} {self._value(found, value)}")
        rows = [
            f"{n} {self._value(m, value)}\r\n"
            for n, m in enumerate(self.drop, 1)
            if n not in self.deleted
        ]
        return _ok() + "".join(rows).encode() + b".\r\n"

    @staticmethod
    def _value(message: StoredMessage, value: str) -> str:
        return str(message.size) if value == "size" else message.id

    async def transaction(self, verb: str, args: list[str]) -> bytes:
        arg = args[0] if args else ""
        if verb == "STAT":
            kept = [m for n, m in enumerate(self.drop, 1) if n not in self.deleted]
            return _ok(f"{len(kept)} {sum(m.size for m in kept)}")
        if verb == "LIST":
            return self.listing(arg, "size")
        if verb == "UIDL":
            return self.listing(arg, "id")
        if verb in ("RETR", "TOP"):
            found = self.message(arg)
            if found is None:
                return _err("no such message")
            if verb == "TOP":
                if len(args) != 2 or not args[1].isdigit():
                    return _err("TOP takes a message number and a number of lines")
                return _ok() + _stuffed(_top(found.raw, int(args[1])))
            self.tally.messages_fetched += 1
            return _ok(f"{found.size} octets") + _stuffed(found.raw)
        if verb == "DELE":
            if self.message(arg) is None:
                return _err("no such message")
            self.deleted.add(int(arg))
            return _ok(f"message {arg} deleted")
        if verb == "RSET":
            self.deleted.clear()
            return _ok()
        return _err(f"unknown command {verb[:20]}")

    async def authorization(self, verb: str, args: list[str]) -> bytes | None:
        if verb == "STLS":
            if not self.context.starttls or self.session.tls_active:
                return _err("STLS is not offered here")
            self.session.write(_ok("Begin TLS negotiation"))
            await self.session.start_tls()
            self.user = None
            return None
        if verb in ("USER", "PASS", "AUTH") and self.tls_first():
            return _err("[AUTH] STLS first: this server requires TLS before login")
        if verb == "USER":
            if len(args) != 1:
                return _err("USER takes one argument, the inbox's address")
            self.user = args[0]
            return _ok("send PASS")
        if verb == "PASS":
            if self.user is None:
                return _err("USER first")
            return await self.login(self.user, " ".join(args))
        if verb == "AUTH":
            return await self.auth(args)
        return _err(f"{verb[:20]} is not valid before login" if verb else "empty command")

    async def auth(self, args: list[str]) -> bytes:
        if not args:
            return _ok("SASL mechanisms follow") + b"PLAIN\r\n.\r\n"
        if args[0].upper() != "PLAIN":
            return _err("only AUTH PLAIN is offered")
        if len(args) > 1:
            response = args[1]
        else:
            self.session.write(b"+ \r\n")
            line = await self.session.readline(LINE_LIMIT)
            response = line.decode("latin-1").strip()
        if response == "*":
            return _err("AUTH cancelled")
        try:
            decoded = base64.b64decode(response.encode("ascii"), validate=True)
            _, user, password = decoded.decode("utf-8").split("\0")
        except (binascii.Error, UnicodeError, ValueError):
            return _err("AUTH PLAIN wants base64 of authzid NUL user NUL password")
        return await self.login(user, password)

    def update(self) -> int:
        if self.inbox is None or not self.deleted:
            return 0
        ids = [self.drop[n - 1].id for n in sorted(self.deleted)]
        removed = self.context.store.delete_messages(self.inbox, ids)
        self.tally.messages_deleted += removed
        return removed


async def handle(session: ReaderSession) -> None:
    """Serve one POP3 connection until QUIT, a closed connection, or too many errors."""
    state = _Session(session)
    session.write(_ok(f"{session.context.hostname} POP3 ready"))
    errors = 0
    while True:
        await session.drain()
        try:
            line = await session.readline(LINE_LIMIT)
        except LineTooLong:
            session.write(_err(f"line over {LINE_LIMIT} octets; closing"))
            return
        except IdleTimeout:
            session.write(_err("idle for too long; closing"))
            return
        if not line:
            return
        state.tally.commands += 1
        words = line.decode("utf-8", "surrogateescape").rstrip("\r\n").split(" ")
        verb, args = words[0].upper(), [w for w in words[1:] if w]
        reply: bytes | None
        if verb == "QUIT":
            try:
                removed = state.update()
            except Exception:
                session.write(_err("[SYS/TEMP] some deleted messages were not removed"))
                return
            session.write(_ok(f"bye ({removed} messages deleted)"))
            await session.drain()
            return
        if verb == "CAPA":
            reply = state.capabilities()
        elif verb == "NOOP" and state.inbox is not None:
            reply = _ok()
        elif state.inbox is None:
            reply = await state.authorization(verb, args)
        else:
            reply = await _transaction(state, verb, args)
        if reply is None:
            continue
        errors = errors + 1 if reply.startswith(b"-ERR") else 0
        session.write(reply)
        if errors >= MAX_ERRORS:
            session.write(_err("too many bad commands; closing"))
            return


async def _transaction(state: _Session, verb: str, args: list[str]) -> bytes:
    if verb in ("USER", "PASS", "AUTH", "STLS"):
        return _err(f"{verb} is not valid after login")
    return await state.transaction(verb, args)
