"""The in-memory store: inboxes, the messages routed to them, and waiting for new ones; no I/O.

:class:`Store` is the first :class:`~pytest_tempinbox.server.store.protocol.InboxStore`:
the single source of truth that the SMTP handler writes into and the HTTP API
reads from. Its methods may be called from any thread (the server's loop
delivers while an in-process client reads from its own thread), but
:meth:`Store.wait` must be awaited on the event loop that serves the store.
What an address may be lives in :mod:`pytest_tempinbox.server.store.addresses`,
one inbox's messages and waiters in :mod:`.inbox_record`, a message's copy in
:mod:`pytest_tempinbox.server.store.stored_message`. The module is long because the
rest stays in one class: every part of it shares the one lock and the inbox
records, and splitting it would put that lock's discipline in several places.
"""

from __future__ import annotations

import asyncio
import heapq
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

from ....errors import AddressTaken, InboxNotFound, InvalidRequest, MessageNotFound, QuotaExceeded
from ....limits import DEFAULT_MAX_MESSAGES_PER_INBOX, DEFAULT_MAX_STORED_BYTES, MAX_TTL
from ....models import Envelope, Fault, Stage
from ..addresses import (
    DEFAULT_DOMAIN,
    check_prefix,
    chosen_address,
    generated_local_part,
    normalize_address,
    not_found,
    random_token,
    recipient_inbox,
    served_domain,
    served_domains,
)
from ..protocol import InboxStore, Select, StoredInbox
from ..refusals import RefusalLog
from ..stored_message import (
    NO_KEYS,
    CompressedBody,
    CompressingMessage,
    StoredMessage,
    next_validity,
)
from ..waiting import alarm
from .inbox_record import InboxRecord

if TYPE_CHECKING:
    from ....quotas import QuotaPolicy
    from ....side_values import ProviderRecord
    from .quota_book import QuotaBook

# DEFAULT_DOMAIN and StoredMessage are named here too, where the server's modules import them.
__all__ = ["DEFAULT_DOMAIN", "InboxRecord", "Store", "StoredMessage"]


class Store:
    """Every live inbox of one server, keyed by lowercase address.

    ``domains`` are the domains generated addresses may use, the first being the
    default. Generated addresses are never handed out twice in the store's life:
    each carries 12 random characters from :mod:`secrets` and a sequence number.

    Memory stays bounded: an inbox keeps at most ``max_messages_per_inbox``
    messages and all inboxes together at most ``max_stored_bytes`` of raw
    message (each copy counted), the oldest being evicted first. An inbox lives
    ``inbox_ttl`` seconds (None: until deleted) unless generated with its own
    ``ttl``; an expired inbox is gone exactly as if deleted. ``quotas`` (None:
    none) are checked and counted as inboxes are generated and checks run.
    With ``compress_read_messages``, a delivery's raw bytes are kept
    compressed once one of its copies has been read (its copies are
    :class:`~pytest_tempinbox.server.store.stored_message.CompressingMessage`).
    """

    def __init__(
        self,
        domains: Iterable[str] = (DEFAULT_DOMAIN,),
        *,
        max_messages_per_inbox: int = DEFAULT_MAX_MESSAGES_PER_INBOX,
        max_stored_bytes: int = DEFAULT_MAX_STORED_BYTES,
        inbox_ttl: float | None = None,
        dkim_keys: Mapping[str, str] = NO_KEYS,
        quotas: QuotaPolicy | None = None,
        compress_read_messages: bool = False,
    ) -> None:
        self.domains: tuple[str, ...] = served_domains(domains)
        self._deletion_watchers: list[Callable[[str], None]] = []
        self._delivery_watchers: list[Callable[[list[StoredMessage]], None]] = []
        self.quotas = quotas
        """Which quotas hold for whom (docs/tenants.md); None: no quota."""
        self._book: QuotaBook | None = None
        if quotas is not None:  # a store without quotas never loads their modules
            from .quota_book import QuotaBook

            self._book = QuotaBook()
        if not self.domains:
            raise ValueError("a store needs at least one domain")
        self.max_messages_per_inbox = max_messages_per_inbox
        self.max_stored_bytes = max_stored_bytes
        self.inbox_ttl = inbox_ttl
        self.dkim_keys = dkim_keys
        """The public keys the messages' DKIM signatures are verified with."""
        self.compress_read_messages = compress_read_messages
        """Whether a delivery's bytes are kept compressed once a copy is read (else as they are)."""
        self.stored_bytes = 0
        self.evictions = 0
        self._inboxes: dict[str, InboxRecord] = {}
        # Every stored message in arrival order, for evicting the oldest overall.
        self._arrivals: OrderedDict[str, StoredMessage] = OrderedDict()
        self._deadlines: list[tuple[float, str]] = []  # a heap of (deadline, address)
        self._generated = 0
        self._last_validity = 0
        self._last_ms = 0
        self._sequence = 0
        self._closed = False
        # Held by every method that reads or changes the inboxes: short, never across an await.
        self._lock = threading.RLock()
        self._faults_added = False
        self._secrets: dict[str, bytes] = {}
        self.refusals = RefusalLog()
        """The recipients refused at ``RCPT TO`` lately, to explain a wait that saw no mail."""

    def __len__(self) -> int:
        return len(self._inboxes)

    def check(self) -> None:
        """Return: the store is this process's memory, which always answers."""

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
        owner: str | None = None,
    ) -> InboxRecord:
        """Create an inbox at a brand new address, or at the chosen ``address``, and return it.

        ``prefix`` (1-32 of ``a-z 0-9 . _ -``, not starting with a dot nor holding
        two dots in a row) starts the local part; ``domain`` must be one of the
        store's domains; ``ttl`` (seconds, up to a week) overrides the store's
        ``inbox_ttl``. Bad values raise :class:`InvalidRequest`.

        ``address`` creates exactly that inbox, lowercased, for test data that
        seeds fixed addresses; see :func:`pytest_tempinbox.server.store.addresses.chosen_address`
        for what it may be.
        It names the whole address, so it goes without ``prefix`` and ``domain``
        (:class:`InvalidRequest`). :class:`AddressTaken` when a live inbox has
        it; once that one is deleted or expired, it may be created again.
        """
        if ttl is not None and not 0 < ttl <= MAX_TTL:
            raise InvalidRequest(f"ttl must be a number of seconds above 0, up to {MAX_TTL}")
        if address is not None:
            if prefix is not None or domain is not None:
                raise InvalidRequest("address names the whole address: give no prefix or domain")
            return self._create(chosen_address(address, self.domains), ttl, owner)
        check_prefix(prefix)
        domain = served_domain(domain, self.domains)
        token = random_token()
        with self._lock:
            while True:  # a chosen address could hold a generated one's place
                self._generated += 1
                generated = f"{generated_local_part(prefix, token, self._generated)}@{domain}"
                if generated not in self._inboxes:
                    return self._create(generated, ttl, owner)

    def _create(self, address: str, ttl: float | None, owner: str | None) -> InboxRecord:
        ttl = ttl if ttl is not None else self.inbox_ttl
        with self._lock:
            if self._live(address) is not None:
                raise AddressTaken(f"{address!r} is a live inbox already; delete it first")
            if self.quotas is not None and self._book is not None:
                self.expire()  # an expired inbox no longer counts
                live = self._inboxes.__len__
                self._book.charge_generate(self.quotas.of(owner), owner, live)
                self._book.created(owner, address)
            created = datetime.now(timezone.utc)
            self._last_validity = next_validity(created, self._last_validity)
            inbox = InboxRecord(address, created, owner, self._last_validity)
            if ttl is not None:
                inbox.deadline = time.monotonic() + ttl
                inbox.expires_at = inbox.created_at + timedelta(seconds=ttl)
                heapq.heappush(self._deadlines, (inbox.deadline, address))
            self._inboxes[address] = inbox
            return inbox

    def get(self, address: str) -> InboxRecord:
        """Return the live inbox at ``address`` (any case).

        Raises :class:`InvalidAddress` for a string that is not an address and
        :class:`InboxNotFound` for an address with no live inbox.
        """
        inbox = self._live(normalize_address(address))
        if inbox is None:
            raise InboxNotFound(not_found(address))
        return inbox

    def owner(self, address: str) -> str | None:
        """The tenant that generated the live inbox at ``address``; raises as :meth:`get`."""
        return self.get(address).owner

    def owned(self, owner: str) -> list[tuple[StoredInbox, int]]:
        """The live inboxes that ``owner`` generated, oldest first, with their message counts."""
        with self._lock:
            mine = [inbox.address for inbox in self._inboxes.values() if inbox.owner == owner]
            live = [inbox for inbox in map(self._live, mine) if inbox is not None]
            return [(inbox, len(inbox.messages)) for inbox in live]

    async def accepts(self, address: str) -> bool:
        """Tell whether mail to ``address`` (any case, or a sub-address of it) has a live inbox."""
        return self._live(recipient_inbox(address)[0]) is not None

    def _live(self, address: str) -> InboxRecord | None:
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

    async def deliver(
        self,
        mail_from: str,
        rcpt_to: Sequence[str],
        raw: bytes,
        provider: ProviderRecord | None = None,
        *,
        within_quotas: bool = False,
    ) -> list[StoredMessage]:
        """Store one copy of ``raw`` in each live inbox among ``rcpt_to`` and wake their waiters.

        Recipients without a live inbox (and repeats) get nothing. Returns the
        stored copies; an empty list means nobody was there to receive it.
        ``within_quotas``: the quotas are checked under the same lock, so that
        a delivery's check and its count are one step.
        """
        envelope = Envelope(mail_from=mail_from, rcpt_to=tuple(rcpt_to))
        received_at = datetime.now(timezone.utc)
        stored = []
        book = self._book
        with self._lock:
            keys = dict.fromkeys(recipient_inbox(rcpt)[0] for rcpt in rcpt_to)
            inboxes = [inbox for key in keys if (inbox := self._live(key)) is not None]
            if within_quotas and book is not None and self.quotas is not None:
                everyone = (len(self._arrivals), self.stored_bytes)
                for inbox in inboxes:
                    over = book.room(self.quotas.of(inbox.owner), inbox.owner, len(raw), everyone)
                    if over is not None:
                        raise over
            kind: type[StoredMessage] = StoredMessage
            body: bytes | CompressedBody = raw
            if self.compress_read_messages:
                kind = CompressingMessage  # several copies share one body, a lone one makes its own
                body = CompressedBody(raw) if len(inboxes) > 1 else raw
            for inbox in inboxes:
                inbox.last_uid += 1
                message = kind(
                    self._next_id(),
                    inbox.address,
                    envelope,
                    body,
                    received_at,
                    self.dkim_keys,
                    provider,
                    inbox.last_uid,
                )
                inbox.messages.append(message)
                inbox.by_id[message.id] = message
                self._arrivals[message.id] = message
                self.stored_bytes += len(raw)
                inbox.stored_bytes += len(raw)
                if book is not None:
                    book.stored(inbox.owner, len(raw))
                if len(inbox.messages) > self.max_messages_per_inbox:
                    self._evict(inbox.messages[0])
                inbox.wake()
                stored.append(message)
            while self.stored_bytes > self.max_stored_bytes and self._arrivals:
                self._evict(next(iter(self._arrivals.values())))
        if stored:
            for watcher in self._delivery_watchers:
                watcher(stored)
        return stored

    def _evict(self, message: StoredMessage) -> None:
        # The oldest message overall is also the oldest of its inbox.
        inbox = self._inboxes[message.inbox]
        inbox.messages.pop(0)
        del inbox.by_id[message.id]
        del self._arrivals[message.id]
        size = message.size
        self.stored_bytes -= size
        inbox.stored_bytes -= size
        if self._book is not None:
            self._book.removed(inbox.owner, 1, size)
        self.evictions += 1

    def message(self, address: str, id: str) -> StoredMessage:
        """Return message ``id`` of the inbox at ``address``; :class:`MessageNotFound` if absent."""
        message = self.get(address).by_id.get(id)
        if message is None:
            raise MessageNotFound(f"the inbox has no message with id {id[:80]!r}")
        return message

    def uid_validity(self, address: str) -> int:
        """The inbox's UIDVALIDITY (see the protocol); raises as :meth:`get`."""
        return self.get(address).uid_validity

    def uid_next(self, address: str) -> int:
        """The UID the inbox's next message will get (see the protocol); raises as :meth:`get`."""
        return self.get(address).last_uid + 1

    def delete_messages(self, address: str, ids: Iterable[str]) -> int:
        """Remove messages ``ids`` from the inbox at ``address``; return how many were there."""
        with self._lock:
            inbox = self.get(address)
            gone = {id for id in ids if id in inbox.by_id}
            if gone:
                inbox.messages = [kept for kept in inbox.messages if kept.id not in gone]
                for id in gone:
                    size = inbox.by_id.pop(id).size
                    del self._arrivals[id]
                    self.stored_bytes -= size
                    inbox.stored_bytes -= size
                    if self._book is not None:
                        self._book.removed(inbox.owner, 1, size)
        if gone:
            for watcher in self._deletion_watchers:
                watcher(inbox.address)
        return len(gone)

    def on_messages_deleted(self, callback: Callable[[str], None]) -> None:
        """Call ``callback(address)`` after :meth:`delete_messages` removes any message."""
        self._deletion_watchers.append(callback)

    def on_delivered(self, callback: Callable[[list[StoredMessage]], None]) -> None:
        """Call ``callback(copies)`` each time :meth:`deliver` stores any copy."""
        self._delivery_watchers.append(callback)

    def secret(self, name: str) -> bytes:
        """A random secret named ``name``, made at the first call: this process's own."""
        with self._lock:
            return self._secrets.setdefault(name, os.urandom(32))

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

    def _drop(self, inbox: InboxRecord) -> int:
        del self._inboxes[inbox.address]
        if self._book is not None:
            self._book.dropped(inbox.owner, inbox.address)
            self._book.removed(inbox.owner, len(inbox.messages), inbox.stored_bytes)
        inbox.faults.clear()
        inbox.wake()
        for message in inbox.messages:
            del self._arrivals[message.id]
            self.stored_bytes -= message.size
        purged = len(inbox.messages)
        inbox.messages.clear()
        inbox.stored_bytes = 0
        inbox.by_id.clear()
        return purged

    def wait(
        self,
        address: str,
        *,
        after: str | None = None,
        timeout: float = 0.0,
        select: Select | None = None,
    ) -> Coroutine[Any, Any, list[StoredMessage]]:
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
        # Not a coroutine itself: a pending wait holds one coroutine the less.
        if select is not None:
            return self._wait_selected(address, after, timeout, select)
        return self._wait(address, after, timeout)

    def follow(
        self, address: str, cursor: str, timeout: float
    ) -> Coroutine[Any, Any, list[StoredMessage]]:
        """Like :meth:`wait`, for an event stream: the messages whose id sorts after ``cursor``.

        ``cursor`` need not be a message of the inbox (see
        :meth:`InboxRecord.messages_since`), so a message evicted meanwhile cannot
        break a stream.
        """
        return self._wait(address, cursor, timeout, since=True)

    async def _wait(
        self, address: str, after: str | None, timeout: float, since: bool = False
    ) -> list[StoredMessage]:
        """:meth:`wait` without ``select``; with ``since``, :meth:`follow`, ``after`` the cursor."""
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        with self._lock:
            inbox = self.get(address)
            messages = inbox.messages_since(after or "") if since else inbox.messages_after(after)
            if messages or timeout <= 0 or self._closed:
                return messages
            inbox.waiters.add(waiter)
        await self._woken(inbox, waiter, timeout)
        # Woken by a delivery (there is a message now), a delete (get raises) or
        # close (the list may be empty).
        with self._lock:
            inbox = self._same(address, inbox)
            return inbox.messages_since(after or "") if since else inbox.messages_after(after)

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

    async def _woken(
        self, inbox: InboxRecord, waiter: asyncio.Future[None], timeout: float
    ) -> None:
        """Wait until ``waiter`` (one of ``inbox.waiters``) is woken or ``timeout`` is up."""
        timer = alarm(waiter, timeout)
        try:
            await waiter
        finally:
            timer.cancel()
            with self._lock:
                inbox.waiters.discard(waiter)

    def _same(self, address: str, inbox: InboxRecord) -> InboxRecord:
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

    def pending_faults(self, address: str) -> list[Fault]:
        """The faults queued for the inbox at ``address``, first to apply first.

        Raises as :meth:`get`.
        """
        return self.get(address).faults.pending()

    def clear_faults(self, address: str) -> int:
        """Drop the faults queued for the inbox at ``address``; return how many.

        Raises as :meth:`get`.
        """
        return self.get(address).faults.clear()

    @property
    def keeps_delivered(self) -> bool:
        """Tell that the messages :meth:`deliver` returns are the ones kept: yes, in memory."""
        return True

    @property
    def faults_added(self) -> bool:
        """Tell whether a fault was ever queued: until then, deliveries need not look for one."""
        return self._faults_added

    async def take_fault(self, address: str, stage: Stage) -> Fault | None:
        """Consume the fault that the next delivery to ``address`` (any case) gets at ``stage``.

        None when the address has no live inbox, no pending fault, or a first
        fault for the other stage (see :meth:`FaultQueue.take`).
        """
        with self._lock:
            inbox = self._live(recipient_inbox(address)[0])
            return None if inbox is None else inbox.faults.take(stage)

    async def admits(self, address: str) -> bool | QuotaExceeded:
        """Whether ``RCPT TO:<address>`` may pass: False (no live inbox), a quota held, or True."""
        inbox = self._live(recipient_inbox(address)[0])
        if inbox is None:
            return False
        book, quotas = self._book, self.quotas
        if book is None or quotas is None:
            return True
        # Read without the lock: RCPT's check is a courtesy, DATA's (in deliver) is the one
        # that counts, and reading these numbers cannot see them half-written.
        everyone = (len(self._arrivals), self.stored_bytes)
        return book.room(quotas.of(inbox.owner), inbox.owner, None, everyone) or True

    async def quota_room(self, address: str, size: int | None) -> QuotaExceeded | None:
        """The ``messages`` or ``bytes`` quota mail to ``address`` would pass; None: room."""
        if self.quotas is None or self._book is None:
            return None
        with self._lock:
            inbox = self._live(recipient_inbox(address)[0])
            if inbox is None:
                return None
            everyone = (len(self._arrivals), self.stored_bytes)
            return self._book.room(self.quotas.of(inbox.owner), inbox.owner, size, everyone)

    def charge_check(self, owner: str | None) -> None:
        """Count one link or spam check for ``owner``; :class:`QuotaExceeded` when over."""
        if self.quotas is not None and self._book is not None:
            quotas = self.quotas.of(owner)
            with self._lock:
                self._book.charge(quotas, owner, "checks_per_minute", quotas.minute)

    async def start(self) -> None:
        """Nothing to get ready: the memory store serves as it is."""

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


def _satisfies_the_protocol(store: Store) -> InboxStore:
    # mypy checks here that Store has every member of InboxStore, typed alike.
    return store
