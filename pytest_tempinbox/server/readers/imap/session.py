"""The IMAP4rev1 session: states and commands (RFC 3501), over a :class:`ReaderSession`.

:class:`IMAPHandler` is the handler an IMAP :class:`~..service.ReaderService`
runs for each connection; it keeps the flags of this server's sessions
(:class:`~.mailbox.FlagBook`). A session is not authenticated, then
authenticated (LOGIN, AUTHENTICATE PLAIN), then has ``INBOX`` selected.
The module is long because a protocol's command table reads best whole: each
command is a short method, and the work is in the modules beside it.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import re
import weakref
from typing import Any

from ....errors import InboxNotFound, StoreUnavailable
from ..session import IdleTimeout, LineTooLong, ReaderSession
from .fetch import parse_items, render
from .mailbox import FLAGS, FlagBook, Mailbox, canonical_flags
from .search import parse_search
from .tokens import BadSyntax, Value, astring, parse_sequence_set
from .wire import Command, CommandRefused, ConnectionEnds, read_command

__all__ = [
    "BUSY",
    "FAILED_LOGIN_DELAY",
    "IDLE_TIMEOUT",
    "MAX_BAD_COMMANDS",
    "IMAPHandler",
    "handle",
]

BUSY = b"* BYE [UNAVAILABLE] too many connections, try again later\r\n"
"""What a connection over the server's limit is told before it is closed."""

MAX_BAD_COMMANDS = 20
"""Commands answered ``BAD`` in a session before it is closed."""
IDLE_TIMEOUT = 30 * 60.0
"""Seconds an IDLE command waits for DONE before the session is closed (RFC 3501 5.4)."""
FAILED_LOGIN_DELAY = 0.5
"""Seconds a wrong user or password waits before its ``NO``."""
_UTF7 = re.compile(r"(?:[\x20-\x25\x27-\x7e]|&-|&[A-Za-z0-9+,]+-)*\Z")


# One handler (and so one flag book) per store, that is per server; gone with the store.
_HANDLERS: weakref.WeakKeyDictionary[object, IMAPHandler] = weakref.WeakKeyDictionary()


async def handle(session: ReaderSession) -> None:
    """Serve one IMAP connection with its server's handler (its flags shared by its sessions)."""
    store = session.context.store
    handler = _HANDLERS.get(store)
    if handler is None:
        handler = _HANDLERS[store] = IMAPHandler()
    await handler(session)


class _No(Exception):
    """The command fails: tagged ``NO`` with this text."""


class IMAPHandler:
    """Serves IMAP sessions of one server; the flags they set live here, in memory."""

    def __init__(self) -> None:
        self.flags = FlagBook()

    async def __call__(self, session: ReaderSession) -> None:
        """Serve one connection until LOGOUT, the client leaves, or a limit closes it."""
        await _Session(session, self.flags).run()


class _Session:
    def __init__(self, session: ReaderSession, flags: FlagBook) -> None:
        self.io = session
        self.context = session.context
        self.book = flags
        self.address: str | None = None
        self.mailbox: Mailbox | None = None
        self.bad = 0
        self.tag = "*"
        self.tally = session.context.tally.imap
        self.tally.sessions += 1

    def capabilities(self) -> str:
        caps = [
            "IMAP4rev1",
            "LITERAL+",
            "SASL-IR",
            "IDLE",
            "UIDPLUS",
            "NAMESPACE",
            "UNSELECT",
            "ID",
        ]
        if self.context.starttls and not self.io.tls_active:
            caps.append("STARTTLS")
            if self.context.tls_required:
                caps.append("LOGINDISABLED")
                return " ".join(caps)
        caps.append("AUTH=PLAIN")
        return " ".join(caps)

    def send(self, text: str | bytes) -> None:
        self.io.write(text.encode("utf-8") if isinstance(text, str) else text)

    async def run(self) -> None:
        self.send(f"* OK [CAPABILITY {self.capabilities()}] {self.context.hostname} IMAP ready\r\n")
        try:
            while True:
                await self.io.drain()
                try:
                    command = await read_command(self.io)
                except CommandRefused as exc:
                    self.tally.commands += 1
                    self.refuse(exc.tag, exc.text)
                    continue
                if not await self.dispatch(command):
                    break
        except ConnectionEnds as exc:
            if exc.reply:
                self.send(exc.reply)
        except StoreUnavailable:
            self.send(b"* BYE the store does not answer; try again later\r\n")
        except InboxNotFound:
            self.send(b"* BYE the inbox is gone (deleted or expired)\r\n")
        await self.io.drain()

    async def read_line(self, limit: int, timeout: float | None = None) -> bytes:
        """One line inside a command (an AUTHENTICATE response, IDLE's DONE)."""
        try:
            line = await self.io.readline(limit, timeout)
        except LineTooLong:
            raise ConnectionEnds(b"* BYE line too long\r\n") from None
        except IdleTimeout:
            raise ConnectionEnds(b"* BYE idle for too long\r\n") from None
        if not line.endswith(b"\n"):
            raise ConnectionEnds()
        return line

    def refuse(self, tag: str, text: str) -> None:
        self.bad += 1
        self.send(f"{tag} BAD {text}\r\n")
        if self.bad >= MAX_BAD_COMMANDS:
            raise ConnectionEnds(b"* BYE too many bad commands\r\n")

    async def dispatch(self, command: Command) -> bool:
        self.tally.commands += 1
        name, tag = command.name, command.tag
        self.tag = tag
        uid = False
        args = command.args
        if name == "UID":
            if not args or not isinstance(args[0], str):
                self.refuse(tag, "UID needs FETCH, SEARCH, STORE or EXPUNGE")
                return True
            name, uid, args = "UID " + args[0].upper(), True, args[1:]
        method = getattr(self, "do_" + name.replace(" ", "_").lower(), None)
        if method is None:
            self.refuse(tag, f"unknown command {name[:30]}")
            return True
        needs = _STATE.get(name.removeprefix("UID "), "any")
        if needs != "any" and self.address is None:
            self.refuse(tag, f"{name} needs a login first")
            return True
        if needs == "selected" and self.mailbox is None:
            self.refuse(tag, f"{name} needs a selected mailbox")
            return True
        try:
            text = await method(args, uid) if uid or name.startswith("UID") else await method(args)
        except BadSyntax as exc:
            self.refuse(tag, str(exc))
            return True
        except _No as exc:
            self.send(f"{tag} NO {exc}\r\n")
            return True
        if text is None:
            return False
        if text:
            self.send(f"{tag} OK {text}\r\n")
        return True

    # any state
    async def do_capability(self, args: list[Value]) -> str:
        self.send(f"* CAPABILITY {self.capabilities()}\r\n")
        return "CAPABILITY completed"

    async def do_noop(self, args: list[Value]) -> str:
        if self.mailbox is not None:
            self.report_changes()
        return "NOOP completed"

    async def do_check(self, args: list[Value]) -> str:
        return await self.do_noop(args)

    async def do_logout(self, args: list[Value]) -> None:
        self.send(f"* BYE logging out\r\n{self.tag} OK LOGOUT completed\r\n")
        return

    async def do_id(self, args: list[Value]) -> str:
        self.send(b'* ID ("name" "pytest-tempinbox")\r\n')
        return "ID completed"

    # not authenticated
    async def do_starttls(self, args: list[Value]) -> str | None:
        if not self.context.starttls or self.io.tls_active:
            raise _No("STARTTLS is not offered here")
        # the tagged OK leaves before the handshake; the client forgets what it knew
        self.send(f"{self.tag} OK begin TLS now\r\n")
        await self.io.drain()
        await self.io.start_tls()
        return ""

    async def do_login(self, args: list[Value]) -> str:
        if self.address is not None:
            raise BadSyntax("already logged in")
        if len(args) != 2:
            raise BadSyntax("LOGIN needs a user and a password")
        if self.context.tls_required and not self.io.tls_active:
            raise _No("[PRIVACYREQUIRED] LOGIN is disabled until STARTTLS")
        return await self.login(astring(args[0], "user"), astring(args[1], "password"))

    async def do_authenticate(self, args: list[Value]) -> str:
        if self.address is not None:
            raise BadSyntax("already logged in")
        if not args or not isinstance(args[0], str) or args[0].upper() != "PLAIN":
            raise _No("only AUTHENTICATE PLAIN is offered")
        if self.context.tls_required and not self.io.tls_active:
            raise _No("[PRIVACYREQUIRED] AUTHENTICATE is disabled until STARTTLS")
        if len(args) > 1:
            response = astring(args[1], "response").encode()
        else:
            self.send(b"+ \r\n")
            await self.io.drain()
            response = (await self.read_line(8192)).strip()
            if response == b"*":
                raise BadSyntax("authentication cancelled")
        try:
            decoded = base64.b64decode(response, validate=True)
        except (binascii.Error, ValueError):
            raise BadSyntax("the PLAIN response is not base64") from None
        parts = decoded.split(b"\0")
        if len(parts) != 3 or parts[0] not in (b"", parts[1]):
            raise BadSyntax("the PLAIN response is not authzid NUL user NUL password")
        user, password = (part.decode("utf-8", "replace") for part in parts[1:])
        return await self.login(user, password)

    async def login(self, user: str, password: str) -> str:
        address = self.context.passwords.check(user, password)
        if address is None:
            self.tally.logins_failed += 1
            await asyncio.sleep(FAILED_LOGIN_DELAY)
            raise _No("[AUTHENTICATIONFAILED] Authentication failed")
        self.address = address
        return f"[CAPABILITY {self.capabilities()}] logged in"

    # authenticated
    def check_inbox(self, value: Value) -> None:
        name = astring(value, "mailbox")
        if not _UTF7.match(name):
            raise BadSyntax("invalid mailbox name (modified UTF-7 expected)")
        if name.upper() != "INBOX":
            raise _No("[NONEXISTENT] only INBOX exists here")

    async def do_select(self, args: list[Value], read_only: bool = False) -> str:
        if len(args) != 1:
            raise BadSyntax("SELECT needs a mailbox name")
        self.mailbox = None
        self.check_inbox(args[0])
        assert self.address is not None
        box = Mailbox(self.context.store, self.address, self.book, read_only)
        self.mailbox = box
        flags = " ".join(FLAGS)
        self.send(f"* FLAGS ({flags})\r\n")
        self.send(f"* OK [PERMANENTFLAGS ({flags})] kept in this server's memory\r\n")
        self.send(f"* {len(box.messages)} EXISTS\r\n* 0 RECENT\r\n")
        unseen = box.first_unseen()
        if unseen is not None:
            self.send(f"* OK [UNSEEN {unseen}] first unseen\r\n")
        self.send(f"* OK [UIDVALIDITY {box.uid_validity}] UIDs valid\r\n")
        self.send(f"* OK [UIDNEXT {box.uid_next}] predicted next UID\r\n")
        if read_only:
            return "[READ-ONLY] EXAMINE completed"
        return "[READ-WRITE] SELECT completed"

    async def do_examine(self, args: list[Value]) -> str:
        return await self.do_select(args, read_only=True)

    async def do_list(self, args: list[Value]) -> str:
        if len(args) != 2:
            raise BadSyntax("LIST needs a reference and a mailbox pattern")
        reference, pattern = astring(args[0], "reference"), astring(args[1], "pattern")
        if not _UTF7.match(pattern) or not _UTF7.match(reference):
            raise BadSyntax("invalid mailbox name (modified UTF-7 expected)")
        if pattern == "":
            self.send(b'* LIST (\\Noselect) "/" ""\r\n')
        elif re.fullmatch(
            re.escape(reference + pattern).replace(r"\*", ".*").replace("%", "[^/]*"),
            "INBOX",
            re.IGNORECASE,
        ):
            self.send(b'* LIST (\\HasNoChildren) "/" INBOX\r\n')
        return "LIST completed"

    async def do_lsub(self, args: list[Value]) -> str:
        await self.do_list(args)
        return "LSUB completed"

    async def do_namespace(self, args: list[Value]) -> str:
        self.send(b'* NAMESPACE (("" "/")) NIL NIL\r\n')
        return "NAMESPACE completed"

    async def do_status(self, args: list[Value]) -> str:
        if len(args) != 2 or not isinstance(args[1], list):
            raise BadSyntax("STATUS needs a mailbox and a list of items")
        self.check_inbox(args[0])
        assert self.address is not None
        box = Mailbox(self.context.store, self.address, self.book, True)
        values = {
            "MESSAGES": len(box.messages),
            "RECENT": 0,
            "UIDNEXT": box.uid_next,
            "UIDVALIDITY": box.uid_validity,
            "UNSEEN": box.unseen_count(),
        }
        items = []
        for item in args[1]:
            key = astring(item, "status item").upper()
            if key not in values:
                raise BadSyntax(f"unknown STATUS item {key[:30]}")
            items.append(f"{key} {values[key]}")
        self.send(f"* STATUS INBOX ({' '.join(items)})\r\n")
        return "STATUS completed"

    # selected
    def report_changes(self) -> None:
        assert self.mailbox is not None
        expunged, exists = self.mailbox.refresh()
        for number in expunged:
            self.send(f"* {number} EXPUNGE\r\n")
        self.send(f"* {exists} EXISTS\r\n")

    async def do_fetch(self, args: list[Value], uid: bool = False) -> str:
        assert self.mailbox is not None
        if len(args) != 2 or not isinstance(args[0], str):
            raise BadSyntax("FETCH needs a sequence set and items")
        ranges = parse_sequence_set(args[0])
        items = parse_items(args[1], by_uid=uid)
        texts = any(item.sends_text for item in items)
        for count, (number, message) in enumerate(self.mailbox.select(ranges, by_uid=uid)):
            self.send(render(number, message, items, self.mailbox))
            self.tally.messages_fetched += texts
            if count % 64 == 63:
                await self.io.drain()
        return f"{'UID ' if uid else ''}FETCH completed"

    async def do_uid_fetch(self, args: list[Value], uid: bool = True) -> str:
        return await self.do_fetch(args, True)

    async def do_search(self, args: list[Value], uid: bool = False) -> str:
        assert self.mailbox is not None
        test = parse_search(args, self.mailbox)
        found = [
            str(message.uid if uid else number)
            for number, message in enumerate(self.mailbox.messages, 1)
            if test(number, message)
        ]
        self.send(("* SEARCH " + " ".join(found)).rstrip() + "\r\n")
        return f"{'UID ' if uid else ''}SEARCH completed"

    async def do_uid_search(self, args: list[Value], uid: bool = True) -> str:
        return await self.do_search(args, True)

    async def do_store(self, args: list[Value], uid: bool = False) -> str:
        box = self.mailbox
        assert box is not None
        if len(args) < 3 or not isinstance(args[0], str) or not isinstance(args[1], str):
            raise BadSyntax("STORE needs a sequence set, an action and flags")
        if box.read_only:
            raise _No("the mailbox is read-only (EXAMINE)")
        action = args[1].upper()
        mode, silent = action.removesuffix(".SILENT"), action.endswith(".SILENT")
        if mode not in ("FLAGS", "+FLAGS", "-FLAGS"):
            raise BadSyntax(f"unknown STORE action {action[:30]}")
        raw = args[2] if isinstance(args[2], list) else args[2:]
        names = canonical_flags(astring(value, "flag") for value in raw)
        for number, message in box.select(parse_sequence_set(args[0]), by_uid=uid):
            flags = box.flags(message)
            if mode == "FLAGS":
                flags.clear()
            (flags.difference_update if mode == "-FLAGS" else flags.update)(names)
            if not silent:
                uid_part = f"UID {message.uid} " if uid else ""
                self.send(f"* {number} FETCH ({uid_part}FLAGS ({' '.join(sorted(flags))}))\r\n")
        return f"{'UID ' if uid else ''}STORE completed"

    async def do_uid_store(self, args: list[Value], uid: bool = True) -> str:
        return await self.do_store(args, True)

    def expunge(self, only: set[str] | None = None, *, quiet: bool = False) -> None:
        box = self.mailbox
        assert box is not None
        if box.read_only:
            raise _No("the mailbox is read-only (EXAMINE)")
        gone = [
            (number, message)
            for number, message in enumerate(box.messages, 1)
            if "\\Deleted" in box.flags(message) and (only is None or message.id in only)
        ]
        if gone:
            ids = [message.id for _, message in gone]
            self.tally.messages_deleted += self.context.store.delete_messages(box.address, ids)
        for number in box.forget(gone):
            if not quiet:
                self.send(f"* {number} EXPUNGE\r\n")

    async def do_expunge(self, args: list[Value]) -> str:
        self.expunge()
        return "EXPUNGE completed"

    async def do_uid_expunge(self, args: list[Value], uid: bool = True) -> str:
        assert self.mailbox is not None
        if len(args) != 1 or not isinstance(args[0], str):
            raise BadSyntax("UID EXPUNGE needs a UID set")
        chosen = self.mailbox.select(parse_sequence_set(args[0]), by_uid=True)
        self.expunge({message.id for _, message in chosen})
        return "UID EXPUNGE completed"

    async def do_close(self, args: list[Value]) -> str:
        assert self.mailbox is not None
        if not self.mailbox.read_only:
            self.expunge(quiet=True)
        self.mailbox = None
        return "CLOSE completed"

    async def do_unselect(self, args: list[Value]) -> str:
        self.mailbox = None
        return "UNSELECT completed"

    async def do_idle(self, args: list[Value]) -> str:
        box = self.mailbox
        assert box is not None
        assert self.address is not None
        store = self.context.store
        self.send(b"+ idling\r\n")
        await self.io.drain()
        done = asyncio.ensure_future(self.read_line(64, timeout=IDLE_TIMEOUT))
        try:
            while True:
                cursor = store.cursor(self.address)
                news = asyncio.ensure_future(store.follow(self.address, cursor, 60.0))
                deleted = self.context.changes.waiter(self.address)
                wakers: set[asyncio.Future[Any]] = {done, news, deleted}
                await asyncio.wait(wakers, return_when=asyncio.FIRST_COMPLETED)
                woken = news.done() or deleted.done()
                deleted.cancel()
                if news.done():
                    news.result()
                else:
                    news.cancel()
                if woken:
                    self.report_changes()
                    await self.io.drain()
                if done.done():
                    break
        finally:
            if not done.done():
                done.cancel()
        line = done.result()
        if line.strip().upper() != b"DONE":
            raise BadSyntax("IDLE ends with DONE")
        return "IDLE terminated"


_STATE = {
    "SELECT": "auth",
    "EXAMINE": "auth",
    "LIST": "auth",
    "LSUB": "auth",
    "STATUS": "auth",
    "NAMESPACE": "auth",
    "FETCH": "selected",
    "SEARCH": "selected",
    "STORE": "selected",
    "EXPUNGE": "selected",
    "CLOSE": "selected",
    "UNSELECT": "selected",
    "IDLE": "selected",
}
