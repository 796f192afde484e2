"""Inboxes, the messages routed to them, and waiting for new ones; no I/O.

The store is the single source of truth that the SMTP handler writes into and
the HTTP API reads from. Its methods may be called from any thread (the server's
loop delivers while an in-process client reads from its own thread), but
:meth:`Store.wait` must be awaited on the event loop that serves the store.
"""

from __future__ import annotations

import asyncio
import bisect
import heapq
import json
import logging
import re
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable, Sequence
from datetime import datetime, timedelta, timezone

from ..errors import AddressTaken, InboxNotFound, InvalidAddress, InvalidRequest, MessageNotFound
from ..limits import DEFAULT_MAX_MESSAGES_PER_INBOX, DEFAULT_MAX_STORED_BYTES, MAX_TTL
from ..models import Envelope, Fault, Message, Stage
from ..parsing.match import searchable_text
from ..parsing.message import parse_message
from .faults import FaultQueue
from .refusals import RefusalLog

__all__ = [
    "DEFAULT_DOMAIN",
    "MAX_ADDRESS_LENGTH",
    "MAX_LOCAL_PART",
    "Facets",
    "Inbox",
    "Select",
    "Store",
    "StoredMessage",
    "normalize_address",
]

log = logging.getLogger(__name__)

DEFAULT_DOMAIN = "tempinbox.test"

MAX_ADDRESS_LENGTH = 254
PREFIX_PATTERN = re.compile(r"[a-z0-9._-]{1,32}")
# Lowercase letters and digits: 36 symbols, so 12 of them carry about 62 bits.
_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789"
_RANDOM_LENGTH = 12
_TOKENS = len(_ALPHABET) ** _RANDOM_LENGTH
# \s is str.isspace() here: Unicode white space.
_NOT_IN_ADDRESS = re.compile(r"[\s\x00-\x1f\x7f]")
MAX_LOCAL_PART = 64  # octets (RFC 5321 4.5.3.1.1)
# A dot-atom of RFC 5322 atext, less "/": the API's paths could not name it.
_ATOM = r"[a-z0-9!#$%&'*+=?^_`{|}~-]+"
_CHOSEN_LOCAL_PART = re.compile(rf"{_ATOM}(?:\.{_ATOM})*")

Facets = tuple[str, str | None, tuple[str, ...]]
"""What the filters of ``GET /api/messages/{email}`` look at in a message.

Its subject, its ``From`` address (None without one), and the white-space
collapsed forms of its text and HTML bodies that the ``text`` filter searches
(see :mod:`pytest_tempinbox.parsing.match`).
"""
Select = Callable[[list["StoredMessage"]], Awaitable[list["StoredMessage"]]]
"""Keeps the messages a filter wants, awaited by :meth:`Store.wait` outside the store's lock."""


def normalize_address(address: str) -> str:
    """Return ``address`` lowercased, or raise :class:`InvalidAddress` if it is not an address.

    An address has a non-empty local part, an ``@`` and a non-empty domain, at
    most 254 characters in all, and no whitespace or control characters.
    """
    local, at, domain = address.rpartition("@")
    if (
        not at
        or not local
        or not domain
        or len(address) > MAX_ADDRESS_LENGTH
        or _NOT_IN_ADDRESS.search(address)
    ):
        raise InvalidAddress(f"{address[:80]!r} is not an email address")
    return _fold(address)


def _fold(address: str) -> str:
    # Only ASCII is folded: generated addresses are ASCII, and Unicode lowercasing
    # maps look-alikes onto them (the Kelvin sign "\u212a" lowercases to "k").
    return address.lower() if address.isascii() else address


class StoredMessage:
    """One copy of a received message, as delivered to one inbox.

    The raw bytes are kept exactly as received; parsing happens on first read,
    and only its JSON form is kept (the most compact of the parsed forms). The
    first filtered read of it also keeps its :data:`Facets`.
    """

    __slots__ = ("_facets", "_json", "envelope", "id", "inbox", "raw", "received_at")

    def __init__(
        self, id: str, inbox: str, envelope: Envelope, raw: bytes, received_at: datetime
    ) -> None:
        self.id = id
        self.inbox = inbox
        self.envelope = envelope
        self.raw = raw
        self.received_at = received_at
        self._json: bytes | None = None
        self._facets: Facets | None = None

    def message(self) -> Message:
        """Parse the raw bytes into the full message object that the API serves.

        The parser never raises by design; should it fail anyway, the message is
        still served, with empty parsed fields, and the failure is logged.
        """
        try:
            parsed = parse_message(self.raw)
        except Exception:
            log.exception("failed to parse message %s; serving it unparsed", self.id)
            parsed = parse_message(b"")
        return Message(
            id=self.id,
            inbox=self.inbox,
            envelope=self.envelope,
            message_id=parsed.message_id,
            sender=parsed.sender,
            to=parsed.to,
            cc=parsed.cc,
            reply_to=parsed.reply_to,
            subject=parsed.subject,
            date=parsed.date,
            received_at=self.received_at,
            text=parsed.text,
            html=parsed.html,
            headers=parsed.headers,
            attachments=parsed.attachments,
            links=parsed.links,
            codes=parsed.codes,
            size=len(self.raw),
            defects=parsed.defects,
            link_details=parsed.link_details,
        )

    @property
    def is_parsed(self) -> bool:
        """Tell whether the JSON form is computed already (reading it is then free)."""
        return self._json is not None

    @property
    def json(self) -> bytes:
        """The message's JSON object, UTF-8 encoded (computed once).

        Two threads asking at once may both compute it; they get equal bytes.
        """
        if self._json is None:
            self._json = _json_bytes(self.message())
        return self._json

    @property
    def has_facets(self) -> bool:
        """Tell whether :meth:`facets` is computed already (reading it is then free)."""
        return self._facets is not None

    def facets(self) -> Facets:
        """What the message filters look at (computed once, with the JSON form if not parsed yet).

        Kept only for messages that a filter has looked at: the text forms cost
        about the size of the message's text again, which reads without a
        filter never pay.
        """
        facets = self._facets
        if facets is None:
            if self._json is None:
                message = self.message()
                self._json = _json_bytes(message)
                sender = None if message.sender is None else message.sender.email
                subject, text, html = message.subject, message.text, message.html
            else:  # decoding the JSON costs a fraction of parsing the message again
                data = json.loads(self._json)
                sender = None if data["from"] is None else data["from"]["email"]
                subject, text, html = data["subject"], data["text"], data["html"]
            facets = self._facets = (subject, sender, searchable_text(text, html))
        return facets


def _json_bytes(message: Message) -> bytes:
    return json.dumps(message.to_json(), ensure_ascii=False, separators=(",", ":")).encode("utf-8")


class Inbox:
    """A generated address (a routing session): its messages, oldest first, and pending faults."""

    # A plain class, not a dataclass: creating a dataclass costs about 1 ms of import.
    __slots__ = (
        "address",
        "by_id",
        "created_at",
        "deadline",
        "expires_at",
        "faults",
        "messages",
        "waiters",
    )

    def __init__(self, address: str, created_at: datetime) -> None:
        self.address = address
        self.created_at = created_at
        self.expires_at: datetime | None = None
        self.deadline: float | None = None  # time.monotonic() of expires_at
        self.messages: list[StoredMessage] = []
        self.by_id: dict[str, StoredMessage] = {}
        self.waiters: set[asyncio.Future[None]] = set()
        self.faults = FaultQueue()

    def __repr__(self) -> str:
        return f"Inbox(address={self.address!r}, messages={len(self.messages)})"

    def messages_after(self, after: str | None) -> list[StoredMessage]:
        """Return the messages received after the message ``after`` (all of them for None).

        Raises :class:`InvalidRequest` when ``after`` is not the id of a message in
        this inbox.
        """
        if after is None:
            return list(self.messages)
        if after not in self.by_id:
            raise InvalidRequest(f"after={after[:80]!r} is not the id of a message in this inbox")
        return self.messages_since(after)

    def messages_since(self, cursor: str) -> list[StoredMessage]:
        """Return the messages whose id sorts after ``cursor``, which need not be one of them.

        Ids sort in arrival order all over the store, so any id is a point in
        time, also one of a message since evicted; ``""`` is before them all.
        """
        return self.messages[bisect.bisect_right(self.messages, cursor, key=_message_id) :]

    def wake(self) -> None:
        """Wake every pending :meth:`Store.wait` on this inbox, from any thread."""
        for waiter in self.waiters:
            loop = waiter.get_loop()
            if asyncio._get_running_loop() is loop:
                _wake(waiter)
            elif not loop.is_closed():
                loop.call_soon_threadsafe(_wake, waiter)
        self.waiters.clear()


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


def _message_id(message: StoredMessage) -> str:
    return message.id


class Store:
    """Every live inbox of one server, keyed by lowercase address.

    ``domains`` are the domains generated addresses may use, the first being the
    default. Generated addresses are never handed out twice in the store's life:
    each carries 12 random characters from :mod:`secrets` and a sequence number.

    Memory stays bounded: an inbox keeps at most ``max_messages_per_inbox``
    messages and all inboxes together at most ``max_stored_bytes`` of raw
    message (each copy counted), the oldest being evicted first. An inbox lives
    ``inbox_ttl`` seconds (None: until deleted) unless generated with its own
    ``ttl``; an expired inbox is gone exactly as if deleted.
    """

    def __init__(
        self,
        domains: Iterable[str] = (DEFAULT_DOMAIN,),
        *,
        max_messages_per_inbox: int = DEFAULT_MAX_MESSAGES_PER_INBOX,
        max_stored_bytes: int = DEFAULT_MAX_STORED_BYTES,
        inbox_ttl: float | None = None,
    ) -> None:
        self.domains: tuple[str, ...] = tuple(dict.fromkeys(d.lower() for d in domains))
        if not self.domains:
            raise ValueError("a store needs at least one domain")
        self.max_messages_per_inbox = max_messages_per_inbox
        self.max_stored_bytes = max_stored_bytes
        self.inbox_ttl = inbox_ttl
        self.stored_bytes = 0
        self.evictions = 0
        self._inboxes: dict[str, Inbox] = {}
        # Every stored message in arrival order, for evicting the oldest overall.
        self._arrivals: OrderedDict[str, StoredMessage] = OrderedDict()
        self._deadlines: list[tuple[float, str]] = []  # a heap of (deadline, address)
        self._generated = 0
        self._last_ms = 0
        self._sequence = 0
        self._closed = False
        # Held by every method that reads or changes the inboxes: short, never across an await.
        self._lock = threading.RLock()
        self._faults_added = False
        self.refusals = RefusalLog()
        """The recipients refused at ``RCPT TO`` lately, to explain a wait that saw no mail."""

    def __len__(self) -> int:
        return len(self._inboxes)

    def stats(self) -> dict[str, int]:
        """Count live inboxes, stored messages, stored bytes and evictions so far."""
        with self._lock:
            self.expire()
            return {
                "inboxes": len(self._inboxes),
                "messages": len(self._arrivals),
                "stored_bytes": self.stored_bytes,
                "evictions": self.evictions,
            }

    def generate(
        self,
        prefix: str | None = None,
        domain: str | None = None,
        ttl: float | None = None,
        *,
        address: str | None = None,
    ) -> Inbox:
        """Create an inbox at a brand new address, or at the chosen ``address``, and return it.

        ``prefix`` (1-32 of ``a-z 0-9 . _ -``, not starting with a dot nor holding
        two dots in a row) starts the local part; ``domain`` must be one of the
        store's domains; ``ttl`` (seconds, up to a week) overrides the store's
        ``inbox_ttl``. Bad values raise :class:`InvalidRequest`.

        ``address`` creates exactly that inbox, lowercased, for test data that
        seeds fixed addresses; see :meth:`chosen_address` for what it may be.
        It names the whole address, so it goes without ``prefix`` and ``domain``
        (:class:`InvalidRequest`). :class:`AddressTaken` when a live inbox has
        it; once that one is deleted or expired, it may be created again.
        """
        if ttl is not None and not 0 < ttl <= MAX_TTL:
            raise InvalidRequest(f"ttl must be a number of seconds above 0, up to {MAX_TTL}")
        if address is not None:
            if prefix is not None or domain is not None:
                raise InvalidRequest("address names the whole address: give no prefix or domain")
            return self._create(self.chosen_address(address), ttl)
        if prefix is not None and (
            not PREFIX_PATTERN.fullmatch(prefix) or prefix.startswith(".") or ".." in prefix
        ):
            raise InvalidRequest(
                "prefix must be 1-32 characters of a-z, 0-9, '.', '_' and '-',"
                " not starting with '.' and without '..'"
            )
        if domain is None:
            domain = self.domains[0]
        elif domain.lower() not in self.domains:
            raise InvalidRequest(
                f"domain {domain[:80]!r} is not served here; use one of: {', '.join(self.domains)}"
            )
        token = _base36(secrets.randbelow(_TOKENS)).rjust(_RANDOM_LENGTH, _ALPHABET[0])
        with self._lock:
            while True:  # a chosen address could hold a generated one's place
                self._generated += 1
                local = token + _base36(self._generated)
                local = f"{prefix}-{local}" if prefix else local
                generated = f"{local}@{domain.lower()}"
                if generated not in self._inboxes:
                    return self._create(generated, ttl)

    def chosen_address(self, address: str) -> str:
        """Return ``address`` lowercased if an inbox may be created at it by choice.

        Its domain must be one of the store's (else :class:`InvalidRequest`),
        and its local part what every SMTP client sends unquoted: a dot-atom of
        ``a-z 0-9 !#$%&'*+=?^_`{|}~-`` with single dots between the atoms, at
        most 64 octets; no quoted local part, no ``/`` (the API's paths could
        not name it), no non-ASCII (:class:`InvalidAddress` otherwise).
        """
        folded = normalize_address(address)
        local, _, domain = folded.rpartition("@")
        if len(local) > MAX_LOCAL_PART or not _CHOSEN_LOCAL_PART.fullmatch(local):
            raise InvalidAddress(
                f"{address[:80]!r} cannot be chosen: its local part must be at most"
                f" {MAX_LOCAL_PART} characters of a-z, 0-9 and !#$%&'*+=?^_`{{|}}~-, with"
                " single dots between them (no quoted local part, no '/', no non-ASCII)"
            )
        if domain not in self.domains:
            raise InvalidRequest(
                f"domain {domain[:80]!r} is not served here; use one of: {', '.join(self.domains)}"
            )
        return folded

    def _create(self, address: str, ttl: float | None) -> Inbox:
        ttl = ttl if ttl is not None else self.inbox_ttl
        with self._lock:
            if self._live(address) is not None:
                raise AddressTaken(f"{address!r} is a live inbox already; delete it first")
            inbox = Inbox(address=address, created_at=datetime.now(timezone.utc))
            if ttl is not None:
                inbox.deadline = time.monotonic() + ttl
                inbox.expires_at = inbox.created_at + timedelta(seconds=ttl)
                heapq.heappush(self._deadlines, (inbox.deadline, address))
            self._inboxes[address] = inbox
            return inbox

    def get(self, address: str) -> Inbox:
        """Return the live inbox at ``address`` (any case).

        Raises :class:`InvalidAddress` for a string that is not an address and
        :class:`InboxNotFound` for an address with no live inbox.
        """
        inbox = self._live(normalize_address(address))
        if inbox is None:
            raise InboxNotFound(
                f"no inbox at {address[:80]!r}: never generated, deleted or expired"
            )
        return inbox

    def accepts(self, address: str) -> bool:
        """Tell whether mail to ``address`` (any case) has a live inbox to go to."""
        return self._live(_fold(address)) is not None

    def _live(self, address: str) -> Inbox | None:
        with self._lock:
            inbox = self._inboxes.get(address)
            deadline = None if inbox is None else inbox.deadline
            if inbox is not None and deadline is not None and deadline <= time.monotonic():
                self._drop(inbox)
                return None
            return inbox

    def messages(self, address: str, after: str | None = None) -> list[StoredMessage]:
        """Return the messages of the inbox at ``address`` received after message ``after``.

        All of them for None, oldest first. Raises as :meth:`get`, and
        :class:`InvalidRequest` when ``after`` is no message of this inbox.
        """
        with self._lock:
            return self.get(address).messages_after(after)

    def deliver(self, mail_from: str, rcpt_to: Sequence[str], raw: bytes) -> list[StoredMessage]:
        """Store one copy of ``raw`` in each live inbox among ``rcpt_to`` and wake their waiters.

        Recipients without a live inbox (and repeats) get nothing. Returns the
        stored copies; an empty list means nobody was there to receive it.
        """
        envelope = Envelope(mail_from=mail_from, rcpt_to=tuple(rcpt_to))
        received_at = datetime.now(timezone.utc)
        stored = []
        with self._lock:
            for address in dict.fromkeys(_fold(rcpt) for rcpt in rcpt_to):
                inbox = self._live(address)
                if inbox is None:
                    continue
                message = StoredMessage(self._next_id(), inbox.address, envelope, raw, received_at)
                inbox.messages.append(message)
                inbox.by_id[message.id] = message
                self._arrivals[message.id] = message
                self.stored_bytes += len(raw)
                if len(inbox.messages) > self.max_messages_per_inbox:
                    self._evict(inbox.messages[0])
                inbox.wake()
                stored.append(message)
            while self.stored_bytes > self.max_stored_bytes and self._arrivals:
                self._evict(next(iter(self._arrivals.values())))
        return stored

    def _evict(self, message: StoredMessage) -> None:
        # The oldest message overall is also the oldest of its inbox.
        inbox = self._inboxes[message.inbox]
        inbox.messages.pop(0)
        del inbox.by_id[message.id]
        del self._arrivals[message.id]
        self.stored_bytes -= len(message.raw)
        self.evictions += 1

    def message(self, address: str, id: str) -> StoredMessage:
        """Return message ``id`` of the inbox at ``address``; :class:`MessageNotFound` if absent."""
        message = self.get(address).by_id.get(id)
        if message is None:
            raise MessageNotFound(f"the inbox has no message with id {id[:80]!r}")
        return message

    def delete(self, address: str) -> int:
        """Destroy the inbox at ``address`` and its messages; return how many were purged.

        Mail to the address is refused from then on, and pending waits end with
        :class:`InboxNotFound`.
        """
        with self._lock:
            return self._drop(self.get(address))

    def expire(self) -> int:
        """Drop every inbox whose time is up; return how many. The server calls it regularly."""
        now = time.monotonic()
        expired = 0
        with self._lock:
            while self._deadlines and self._deadlines[0][0] <= now:
                _, address = heapq.heappop(self._deadlines)
                inbox = self._inboxes.get(address)
                if inbox is not None and inbox.deadline is not None and inbox.deadline <= now:
                    self._drop(inbox)
                    expired += 1
        return expired

    def _drop(self, inbox: Inbox) -> int:
        del self._inboxes[inbox.address]
        inbox.faults.clear()
        inbox.wake()
        for message in inbox.messages:
            del self._arrivals[message.id]
            self.stored_bytes -= len(message.raw)
        purged = len(inbox.messages)
        inbox.messages.clear()
        inbox.by_id.clear()
        return purged

    async def wait(
        self,
        address: str,
        *,
        after: str | None = None,
        timeout: float = 0.0,
        select: Select | None = None,
    ) -> list[StoredMessage]:
        """Return the messages after ``after``, waiting up to ``timeout`` seconds for one.

        Returns at once when there already is one; otherwise as soon as a
        delivery wakes it (no polling), or with ``[]`` when the time is up or the
        store closes. Raises :class:`InboxNotFound` if the inbox is (or gets)
        deleted.

        With ``select``, only the messages it keeps count: a delivery it drops
        does not end the wait, which goes on until one it keeps arrives or the
        time is up. It is awaited outside the store's lock, once for the
        messages there are and then once for each delivery's new ones.
        """
        if select is not None:
            return await self._wait_selected(address, after, timeout, select)
        return await self._wait(address, lambda inbox: inbox.messages_after(after), timeout)

    async def follow(self, address: str, cursor: str, timeout: float) -> list[StoredMessage]:
        """Like :meth:`wait`, for an event stream: the messages whose id sorts after ``cursor``.

        ``cursor`` need not be a message of the inbox (see
        :meth:`Inbox.messages_since`), so a message evicted meanwhile cannot
        break a stream.
        """
        return await self._wait(address, lambda inbox: inbox.messages_since(cursor), timeout)

    async def _wait(
        self, address: str, pick: Callable[[Inbox], list[StoredMessage]], timeout: float
    ) -> list[StoredMessage]:
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        with self._lock:
            inbox = self.get(address)
            messages = pick(inbox)
            if messages or timeout <= 0 or self._closed:
                return messages
            inbox.waiters.add(waiter)
        await self._woken(inbox, waiter, timeout)
        # Woken by a delivery (there is a message now), a delete (get raises) or
        # close (the list may be empty).
        with self._lock:
            return pick(self._same(address, inbox))

    async def _wait_selected(
        self, address: str, after: str | None, timeout: float, select: Select
    ) -> list[StoredMessage]:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        with self._lock:
            inbox = self.get(address)
            found = inbox.messages_after(after)
        cursor = after or ""
        while True:
            kept = await select(found)  # outside the lock: it may parse, off the loop
            remaining = deadline - loop.time()
            if kept or remaining <= 0 or self._closed:
                return kept
            # None of the messages up to the cursor is wanted: only newer ones can be.
            cursor = found[-1].id if found else cursor
            waiter: asyncio.Future[None] = loop.create_future()
            with self._lock:
                found = self._same(address, inbox).messages_since(cursor)
                if found or self._closed:
                    continue
                inbox.waiters.add(waiter)
            await self._woken(inbox, waiter, remaining)
            with self._lock:
                found = self._same(address, inbox).messages_since(cursor)

    async def _woken(self, inbox: Inbox, waiter: asyncio.Future[None], timeout: float) -> None:
        """Wait until ``waiter`` (one of ``inbox.waiters``) is woken or ``timeout`` is up."""
        try:
            await asyncio.wait_for(waiter, timeout)
        except asyncio.TimeoutError:
            pass
        finally:
            with self._lock:
                inbox.waiters.discard(waiter)

    def _same(self, address: str, inbox: Inbox) -> Inbox:
        # A wait that began on ``inbox`` ends with 404 once it is gone, also when
        # an inbox has been created at its address since (a chosen address).
        current = self.get(address)
        if current is not inbox:
            raise InboxNotFound(f"no inbox at {address[:80]!r}: deleted or expired")
        return current

    def cursor(self, address: str) -> str:
        """The id of the inbox's newest message, ``""`` if none: :meth:`follow` from now on."""
        with self._lock:
            messages = self.get(address).messages
            return messages[-1].id if messages else ""

    @property
    def closed(self) -> bool:
        """Tell whether :meth:`close` was called: the server is stopping."""
        return self._closed

    def add_fault(self, address: str, fault: Fault) -> None:
        """Queue ``fault`` for the next deliveries to the inbox at ``address``.

        Raises as :meth:`get`, and :class:`~pytest_tempinbox.errors.TooManyFaults`
        when the inbox's queue is full.
        """
        inbox = self.get(address)
        self._faults_added = True
        inbox.faults.add(fault)

    @property
    def faults_added(self) -> bool:
        """Tell whether a fault was ever queued: until then, deliveries need not look for one."""
        return self._faults_added

    def take_fault(self, address: str, stage: Stage) -> Fault | None:
        """Consume the fault that the next delivery to ``address`` (any case) gets at ``stage``.

        None when the address has no live inbox, no pending fault, or a first
        fault for the other stage (see :meth:`FaultQueue.take`).
        """
        with self._lock:
            inbox = self._live(_fold(address))
            return None if inbox is None else inbox.faults.take(stage)

    def close(self) -> None:
        """End every pending wait (they answer with what they have) and refuse new waits."""
        with self._lock:
            self._closed = True
            for inbox in self._inboxes.values():
                inbox.wake()

    def _next_id(self) -> str:
        # Milliseconds then a sequence number, both fixed-width hex: sorting the
        # ids as strings sorts them by arrival, even if the wall clock steps back.
        self._last_ms = max(self._last_ms, time.time_ns() // 1_000_000)
        self._sequence += 1
        return f"{self._last_ms:012x}{self._sequence:08x}"


def _base36(number: int) -> str:
    digits = ""
    while True:
        number, digit = divmod(number, 36)
        digits = _ALPHABET[digit] + digits
        if not number:
            return digits
