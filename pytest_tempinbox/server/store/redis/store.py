"""The Redis store: inboxes kept in Redis, so that several server processes serve the same ones.

:class:`RedisStore` is an :class:`~pytest_tempinbox.server.store.protocol.InboxStore` on one
Redis, 7.0 or later (its scripts use ``PEXPIRETIME``). Every server process pointed at it
serves the same inboxes: generate on one, deliver on another, read, wait,
delete or inject faults on a third. Each change is one Lua script
(:mod:`.scripts`): atomic across processes and one round trip; a message
is in Redis before :meth:`RedisStore.deliver` returns (so before the SMTP
``250``). Waits are woken through pub/sub (:mod:`.notices`), never by
polling. The SMTP side's members (:meth:`RedisStore.accepts`,
:meth:`RedisStore.deliver`, :meth:`RedisStore.take_fault`) are coroutines that
go through one pipelined connection (:mod:`.connection`) once the store
is started on its serving loop, so that the loop serves other sessions while
Redis works; ``RCPT`` is answered from the inboxes this process knows are live
(:class:`~.notices.LiveInboxes`), asking Redis only about the others.
redis-py (and hiredis) are imported by this module and the ones it splits off
only: nothing else of the package needs them unless the Redis store is asked for. The
module is long because this docstring is the reference of the keys the store
keeps; the rest is one class whose members share its scripts and its waits.

Keys (``A`` is an inbox's lowercased address; the braces are a Redis Cluster
hash tag, so that all of an inbox's keys hash to one slot)::

    tempinbox:{A}:inbox    hash: created (ISO time), ttl (seconds, "" for
                           none), gen (a number new at each creation, so that a
                           wait tells an inbox made again at A from its own),
                           validity (its UIDVALIDITY), uid (the last message's);
                           expires with the inbox (PEXPIRE its ttl)
    tempinbox:{A}:msgs     hash: <id> -> raw bytes exactly as received,
                           <id>:e -> envelope and received_at (JSON),
                           <id>:u -> the message's uid in the inbox,
                           <id>:j -> the parsed message's JSON once a server
                           parsed it (so no other server parses it again);
                           expires with the inbox (PEXPIREAT its expiry)
    tempinbox:{A}:faults   list of pending faults, "stage times json", first
                           to apply first; expires with the inbox
    tempinbox:{A}:ids      sorted set of the inbox's message ids (all scored 0:
                           ordered as strings, so by arrival); no expiry
    tempinbox:{A}:bytes    string: the raw bytes the inbox keeps; no expiry
    tempinbox:{A}:owner    string: the tenant that generated the inbox, written
                           by the create script with it (its expiry the
                           inbox's), dropped by its purge
    tempinbox:{A}:watched  string, present while a process waits on the
                           inbox: only then is a delivery to it announced;
                           expires a second after the longest wait may end

    tempinbox:{store}:inboxes   sorted set: live addresses, scored by their
                                deadline (Redis time, ms; +inf for none)
    tempinbox:{store}:arrivals  sorted set: "<id> <A>" of every kept message,
                                scored by arrival, to evict the oldest overall
    tempinbox:{store}:stats     hash: messages, bytes, evictions
    tempinbox:{store}:seq, :ms  the last message number, and the last Redis
                                time (ms) an id was made at
    tempinbox:{store}:gen, :generated   counters of creations and of generated addresses
    tempinbox:{store}:validity          the last UIDVALIDITY given
    tempinbox:{store}:secret:<name>     a secret every server shares (store.secret)
    tempinbox:{store}:faults-added      set once any fault is added
    tempinbox:{store}:refusals  list of recent refusals, newest first, at most
                                1000; expires 600 s after the last one
    tempinbox:tenant:<T>:inboxes  set: the addresses tenant T generated
    tempinbox:tenant:<T>:live     sorted set: T's live inboxes by deadline
    tempinbox:tenant:<T>:window   inboxes T generated in the current
                                  inboxes_per_hour window; expires with it
                                  (T is "*" for everyone, without tenants)
    tempinbox:tenant:<T>:checks   checks in the current minute's window (also "*")
    tempinbox:{store}:events    the pub/sub channel ("d A" while A is watched,
                                "x A", "f")

``ids`` and ``bytes`` outlive an expired inbox until :meth:`RedisStore.expire`
(which the server runs regularly; :meth:`RedisStore.stats` runs it too) purges
what is left and corrects the store-wide counts: an expired inbox is gone for
every read at its expiry instant, as Redis drops its ``inbox`` key. The
scripts name the keys of the inboxes they touch themselves and touch the
store-wide keys too, so the store needs one Redis (with replicas if wished),
not a cluster spread over several primaries.

Limits: ``max_messages_per_inbox`` trims ``ids`` (the oldest id goes, with its
fields in ``msgs``); ``max_stored_bytes`` is checked against ``stats.bytes``
after each delivery, popping ``arrivals`` from the oldest; ``inbox_ttl`` (or a
``ttl`` of its own) is the ``inbox`` key's expiry. Message ids are the Redis
time in ms (never less than the last one used) and a store-wide counter, 12 hex
digits each: they sort as strings in arrival order across every process.

Redis down: every member raises :class:`~pytest_tempinbox.errors.StoreUnavailable`,
:meth:`RedisStore.accepts` and :meth:`RedisStore.take_fault` included (the SMTP
side answers ``451 4.3.0`` then); redis-py connects again by itself, and the
subscription is made again after a short backoff.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import math
import os
from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from ....errors import (
    AddressTaken,
    InboxNotFound,
    InvalidRequest,
    MessageNotFound,
    QuotaExceeded,
    TooManyFaults,
)
from ....limits import (
    DEFAULT_MAX_MESSAGES_PER_INBOX,
    DEFAULT_MAX_STORED_BYTES,
    MAX_FAULTS_PER_INBOX,
    MAX_TTL,
)
from ....models import Envelope, Fault, Stage
from ....quotas import QuotaPolicy, storage_exceeded
from ....side_values import ProviderRecord
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
from ..stored_message import NO_KEYS, StoredMessage
from ..waiting import alarm, running_loop
from . import scripts, tenancy
from .connection import RedisConnection, Script
from .notices import Listener, LiveInboxes, Waiters
from .quota_keys import check_arguments, over_quota, quota_arguments
from .records import RedisInbox, RedisStoredMessage, fault_entry, read_fault
from .refusals import REDIS_DOWN, RedisRefusals, unavailable

__all__ = ["RedisStore"]

# A wait's inbox is watched this much longer than the wait may last: deliveries
# are announced (a notice to every process) only to inboxes some process watches.
_WATCH_MARGIN_MS = 1000


class RedisStore:
    """The inboxes of every server process on the Redis at ``url`` (``redis://`` or ``rediss://``).

    ``domains``, the limits and ``inbox_ttl`` are as
    :class:`~pytest_tempinbox.server.store.memory.store.Store`'s; every process on
    one Redis should be given the same ones. Nothing is connected until the first call.
    """

    def __init__(
        self,
        url: str,
        domains: Iterable[str] = (DEFAULT_DOMAIN,),
        *,
        max_messages_per_inbox: int = DEFAULT_MAX_MESSAGES_PER_INBOX,
        max_stored_bytes: int = DEFAULT_MAX_STORED_BYTES,
        inbox_ttl: float | None = None,
        dkim_keys: Mapping[str, str] = NO_KEYS,
        quotas: QuotaPolicy | None = None,
    ) -> None:
        self.domains: tuple[str, ...] = served_domains(domains)
        self.quotas = quotas
        """Which quotas hold for whom (docs/tenants.md); counted in Redis, for every server."""
        self.dkim_keys = dkim_keys
        """The public keys the messages' DKIM signatures are verified with."""
        if not self.domains:
            raise ValueError("a store needs at least one domain")
        self.max_messages_per_inbox = max_messages_per_inbox
        self.max_stored_bytes = max_stored_bytes
        self.inbox_ttl = inbox_ttl
        self.url = url
        # One retry: a pooled connection broken by a Redis restart is made again at once.
        self._redis = redis.Redis.from_url(
            url, retry=Retry(NoBackoff(), 1), socket_connect_timeout=2, socket_timeout=10
        )
        register = self._redis.register_script
        self._create = register(scripts.CREATE)
        self._deliver = register(scripts.DELIVER)
        self._read = register(scripts.READ)
        self._save = register(scripts.SAVE_JSON)
        self._delete = register(scripts.DELETE)
        self._delete_messages = register(scripts.DELETE_MESSAGES)
        self._sweep = register(scripts.SWEEP)
        self._stats = register(scripts.STATS)
        self._charge = register(scripts.CHARGE)
        self._usage = register(scripts.USAGE)
        self._add_fault = register(scripts.ADD_FAULT)
        self._pending_faults = register(scripts.PENDING_FAULTS)
        self._clear_faults = register(scripts.CLEAR_FAULTS)
        self._take_fault = register(scripts.TAKE_FAULT)
        self._deliver_script = Script(scripts.DELIVER)
        self._take_fault_script = Script(scripts.TAKE_FAULT)
        self._save_script = Script(scripts.SAVE_JSON)
        self._read_script = Script(scripts.READ)
        self._closed = False
        self._faults_added = False
        self._secrets: dict[str, bytes] = {}
        self._waiters = Waiters()
        self._live = LiveInboxes()
        self._deletion_watchers: list[Callable[[str], None]] = []
        self._delivery_watchers: list[Callable[[list[StoredMessage]], None]] = []
        self._listener = Listener(
            url, self._waiters, self._live, self._fault_noticed, self._deletion_noticed
        )
        self._connection: RedisConnection | None = None  # once started, on the serving loop
        self.refusals = RedisRefusals(self._redis)
        """The recipients refused at ``RCPT TO`` lately, by any server on the Redis."""

    async def start(self) -> None:
        """Serve the SMTP side from the running loop, and subscribe to the notices now.

        A server calls it at start: from then on the SMTP side's members,
        awaited on this loop, overlap their round trips on one pipelined
        connection, and faults added elsewhere strike at once. Without it (or
        awaited on another loop) they block on redis-py for their round trip,
        and the first wait subscribes.
        """
        if self._connection is None and not self._closed:
            self._connection = RedisConnection(self.url)
            self._connection.loop = asyncio.get_running_loop()
        await self._listener.ensure()

    def _pipelined(self) -> RedisConnection | None:
        """The pipelined connection if the running loop is the one it serves, else None."""
        connection, running = self._connection, running_loop()
        if connection is None or running is None or connection.loop is not running:
            return None
        return connection

    @property
    def closed(self) -> bool:
        """Tell whether :meth:`close` was called: the server is stopping."""
        return self._closed

    @property
    def keeps_delivered(self) -> bool:
        """Tell that the messages :meth:`deliver` returns are the ones kept: no, in Redis."""
        return False

    @property
    def faults_added(self) -> bool:
        """Tell whether a fault was added by this process or, as noticed, by another."""
        return self._faults_added

    def _fault_noticed(self) -> None:
        self._faults_added = True

    def _deletion_noticed(self, address: str) -> None:
        for watcher in self._deletion_watchers:
            watcher(address)

    def on_messages_deleted(self, callback: Callable[[str], None]) -> None:
        """Call ``callback(address)`` when any server of the store deletes messages (a notice)."""
        self._deletion_watchers.append(callback)

    def on_delivered(self, callback: Callable[[list[StoredMessage]], None]) -> None:
        """Call ``callback(copies)`` each time this server's :meth:`deliver` stores any copy."""
        self._delivery_watchers.append(callback)

    # --- create and look up ---------------------------------------------------------

    def generate(
        self,
        prefix: str | None = None,
        domain: str | None = None,
        ttl: float | None = None,
        *,
        address: str | None = None,
        owner: str | None = None,
    ) -> RedisInbox:
        """Create an inbox at a brand new address, or at the chosen ``address``, and return it.

        As :meth:`pytest_tempinbox.server.store.protocol.InboxStore.generate`; a generated
        address carries a number that Redis counts for every process, so none is handed out twice.
        """
        if ttl is not None and not 0 < ttl <= MAX_TTL:
            raise InvalidRequest(f"ttl must be a number of seconds above 0, up to {MAX_TTL}")
        if address is not None:
            if prefix is not None or domain is not None:
                raise InvalidRequest("address names the whole address: give no prefix or domain")
            inbox = self._make(chosen_address(address, self.domains), ttl, owner)
            if inbox is None:
                raise AddressTaken(f"{address!r} is a live inbox already; delete it first")
            return inbox
        check_prefix(prefix)
        domain = served_domain(domain, self.domains)
        token = random_token()
        while True:  # a chosen address could hold a generated one's place
            number: int = unavailable(lambda: self._redis.incr(scripts.GENERATED))
            made = self._make(f"{generated_local_part(prefix, token, number)}@{domain}", ttl, owner)
            if made is not None:
                return made

    def _make(self, address: str, ttl: float | None, owner: str | None) -> RedisInbox | None:
        ttl = ttl if ttl is not None else self.inbox_ttl
        created = datetime.now(timezone.utc).isoformat().encode()
        ttl_text = b"" if ttl is None else repr(float(ttl)).encode()
        args: list[bytes | str] = [address, created, ttl_text, owner or ""]
        args += quota_arguments(self.quotas, owner)
        reply: list[int] = unavailable(lambda: self._create(args=args))
        gen = reply[0]
        if gen < 0:
            raise over_quota(self.quotas, owner, reply)
        if not gen:
            return None
        if self._listener.listening:
            self._live.remember(address, ttl)
        return RedisInbox(address, created, ttl_text, str(gen).encode())

    async def admits(self, address: str) -> bool | QuotaExceeded:
        """Whether ``RCPT TO:<address>`` may pass: :meth:`accepts`, then :meth:`quota_room`."""
        if not await self.accepts(address):
            return False
        return await self.quota_room(address, None) or True

    async def quota_room(self, address: str, size: int | None) -> QuotaExceeded | None:
        """The ``messages`` or ``bytes`` quota mail to ``address`` would pass; None: room.

        One blocking round trip, made only on a server with quotas.
        """
        folded = recipient_inbox(address)[0]
        if self.quotas is None or not _sendable(folded):
            return None
        usage: list[Any] | None = unavailable(lambda: self._usage(args=[folded]))
        if usage is None:
            return None
        owner = usage[0].decode() or None
        quotas = self.quotas.of(owner)
        return storage_exceeded(quotas, int(usage[1]), int(usage[2]), size)

    def charge_check(self, owner: str | None) -> None:
        """Count one link or spam check for ``owner`` in Redis; :class:`QuotaExceeded` when over."""
        if self.quotas is None:
            return
        args = check_arguments(self.quotas, owner)
        if args is not None:
            left: int = unavailable(lambda: self._charge(args=args))
            if left >= 0:
                raise over_quota(self.quotas, owner, [-3, left])

    def owner(self, address: str) -> str | None:
        """The tenant that generated the live inbox at ``address``; raises as :meth:`get`."""
        folded = self.get(address).address
        return unavailable(lambda: tenancy.owner(self._redis, folded))

    def owned(self, owner: str) -> list[tuple[StoredInbox, int]]:
        """The live inboxes that ``owner`` generated, with their message counts, by address."""
        found: list[tuple[StoredInbox, int]] = []
        for address in unavailable(lambda: tenancy.addresses(self._redis, owner)):
            try:
                inbox = self.get(address)
            except InboxNotFound:
                unavailable(functools.partial(tenancy.disown, self._redis, address, owner))
                continue
            if self.owner(address) == owner:
                counted = functools.partial(tenancy.count, self._redis, address)
                found.append((inbox, unavailable(counted)))
        return found

    def get(self, address: str) -> RedisInbox:
        """Return the live inbox at ``address`` (any case); raises as the protocol says."""
        inbox, _, _ = self._snapshot(_live_form(address), "none", "", address)
        return inbox

    async def accepts(self, address: str) -> bool:
        """Tell whether mail to ``address`` (any case) has a live inbox.

        Answered without Redis for an inbox this process knows is live (it
        created it, or asked before, and no notice said it is gone since);
        else one round trip. Raises
        :class:`~pytest_tempinbox.errors.StoreUnavailable` when Redis is down:
        there is no telling then.
        """
        folded = recipient_inbox(address)[0]
        if not _sendable(folded):
            return False  # no inbox's address holds bytes that are not UTF-8
        key = scripts.inbox_key(folded, "inbox")
        if self._listener.listening:
            if self._live.vouches(folded):
                return True
            connection = self._pipelined()
            if connection is not None:
                left = await connection.call(b"PTTL", key)
            else:
                left = unavailable(lambda: self._redis.pttl(key))
            if left == -2:  # no such key
                return False
            self._live.remember(folded, None if left < 0 else left / 1000)
            return True
        # Notices do not reach this process (not yet, or Redis is down): set out to
        # receive them, and ask also whether another process added a fault.
        if not self._closed:
            self._listener.begin(asyncio.get_running_loop())
        connection = self._pipelined()
        if connection is not None:
            replies = await asyncio.gather(
                connection.call(b"EXISTS", key),
                connection.call(b"EXISTS", scripts.FAULTS_ADDED),
                return_exceptions=True,
            )
            for reply in replies:
                if isinstance(reply, BaseException):
                    raise reply
            live, faults = replies
        else:
            pipe = self._redis.pipeline(transaction=False)
            pipe.exists(key)
            pipe.exists(scripts.FAULTS_ADDED)
            live, faults = unavailable(pipe.execute)
        if faults:
            self._faults_added = True
        return bool(live)

    # --- deliver and read -----------------------------------------------------------

    async def deliver(
        self,
        mail_from: str,
        rcpt_to: Sequence[str],
        raw: bytes,
        provider: ProviderRecord | None = None,
        *,
        within_quotas: bool = False,
    ) -> list[StoredMessage]:
        """Store one copy of ``raw`` in each live inbox among ``rcpt_to``: one round trip.

        The copies are in Redis when it returns, and every process's waits on
        those inboxes are woken. A provider's record rides in the envelope's
        header, as its fourth item (SMTP mail's header has three).
        ``within_quotas`` asks :meth:`quota_room` first, a round trip a recipient.
        """
        if within_quotas and self.quotas is not None:
            for rcpt in dict.fromkeys(rcpt_to):
                over = await self.quota_room(rcpt, len(raw))
                if over is not None:
                    raise over
        envelope = Envelope(mail_from=mail_from, rcpt_to=tuple(rcpt_to))
        received_at = datetime.now(timezone.utc)
        items: list[Any] = [mail_from, list(rcpt_to), received_at.isoformat()]
        if provider is not None:
            items.append(provider.to_json())
        header = json.dumps(items)
        folded = (recipient_inbox(rcpt)[0] for rcpt in rcpt_to)
        addresses = list(dict.fromkeys(address for address in folded if _sendable(address)))
        if not addresses:
            return []
        args: list[bytes | str | int] = [
            raw,
            header,
            self.max_messages_per_inbox,
            self.max_stored_bytes,
            *addresses,
        ]
        connection = self._pipelined()
        if connection is not None:
            stored: list[bytes] = await connection.run(self._deliver_script, *args)
        else:
            stored = unavailable(lambda: self._deliver(args=args))
        if len(stored) < 3 * len(addresses):  # some were gone: RCPT need not accept them
            for gone in set(addresses).difference(a.decode() for a in stored[::3]):
                self._live.forget(gone)
        messages: list[StoredMessage] = []
        for n in range(0, len(stored), 3):
            address = stored[n].decode()
            id = stored[n + 1].decode()
            messages.append(
                RedisStoredMessage(
                    self._save_json,
                    id,
                    address,
                    envelope,
                    raw,
                    received_at,
                    dkim_keys=self.dkim_keys,
                    provider=provider,
                    uid=int(stored[n + 2]),
                )
            )
            self._waiters.wake(address)  # this process's own waits, before the notice comes
        if messages:
            for watcher in self._delivery_watchers:
                watcher(messages)
        return messages

    def messages(self, address: str, after: str | None = None) -> list[StoredMessage]:
        """Return the messages of the inbox at ``address`` received after message ``after``."""
        folded = _live_form(address)
        if after is None:
            return self._snapshot(folded, "all", "", address)[2]
        return self._snapshot(folded, "after", after, address)[2]

    def message(self, address: str, id: str) -> StoredMessage:
        """Return message ``id`` of the inbox at ``address``; :class:`MessageNotFound` if absent."""
        found = self._snapshot(_live_form(address), "one", id, address)[2]
        if not found:
            raise MessageNotFound(f"the inbox has no message with id {id[:80]!r}")
        return found[0]

    def cursor(self, address: str) -> str:
        """The id of the inbox's newest message, ``""`` if none: :meth:`follow` from now on."""
        reply = self._run_read(_live_form(address), "last", "", address)
        newest: bytes = reply[5]
        return newest.decode()

    def _run_read(
        self, folded: str, mode: str, cursor: str, given: str, watch: float | None = None
    ) -> list[Any]:
        args = _read_arguments(folded, mode, cursor, watch)
        reply: list[Any] = unavailable(lambda: self._read(args=args))
        return _checked(reply, given, cursor)

    def _snapshot(
        self, folded: str, mode: str, cursor: str, given: str, watch: float | None = None
    ) -> tuple[RedisInbox, int, list[StoredMessage]]:
        """The inbox, the milliseconds it has left (-1: forever), the messages ``mode`` picks.

        With ``watch`` (seconds), deliveries to the inbox are announced to every
        process for at least that long: a wait's read, made once it listens.
        """
        return self._read_reply(folded, self._run_read(folded, mode, cursor, given, watch))

    async def _stream_snapshot(
        self, folded: str, mode: str, cursor: str, given: str, watch: float
    ) -> tuple[RedisInbox, int, list[StoredMessage]]:
        """As :meth:`_snapshot` with ``watch``, for an event stream, without blocking the loop.

        On the serving loop the read goes through the pipelined connection, so
        that the loop serves SMTP and the other streams while Redis reads: at a
        thousand events a second, blocking reads held the senders back. A
        long-poll's read blocks, as the API's other reads do: through the
        pipelined connection, a burst of 10,000 long-polls left the server about
        1 KiB a waiter more memory (16.9 against 15.0-16.0 KiB, bench ``waiters``).
        """
        connection = self._pipelined()
        if connection is None:
            return self._snapshot(folded, mode, cursor, given, watch)
        args = _read_arguments(folded, mode, cursor, watch)
        reply: list[Any] = await connection.run(self._read_script, *args)
        return self._read_reply(folded, _checked(reply, given, cursor))

    def _read_reply(
        self, folded: str, reply: list[Any]
    ) -> tuple[RedisInbox, int, list[StoredMessage]]:
        inbox = RedisInbox(folded, reply[1], reply[2], reply[3])
        messages: list[StoredMessage] = []
        for n in range(5, len(reply), 5):
            mail_from, rcpt_to, received_at, *provider = json.loads(reply[n + 2])
            messages.append(
                RedisStoredMessage(
                    self._save_json,
                    reply[n].decode(),
                    folded,
                    Envelope(mail_from=mail_from, rcpt_to=tuple(rcpt_to)),
                    reply[n + 1],
                    datetime.fromisoformat(received_at),
                    reply[n + 3],
                    self.dkim_keys,
                    ProviderRecord.from_json(provider[0]) if provider else None,
                    int(reply[n + 4]),
                )
            )
        return inbox, int(reply[4]), messages

    def _save_json(self, address: str, id: str, parsed: bytes) -> None:
        """Keep a message's JSON form in Redis while the message is there; best effort.

        Once started, without waiting: sent on the pipelined connection from
        its loop (soon, from another thread), so that the reader's answer does
        not wait for it; a server reading the message in that instant parses it
        again. Otherwise, or with that connection not up, one blocking round trip.
        """
        connection = self._connection
        loop = None if connection is None else connection.loop
        if connection is not None and loop is not None and not loop.is_closed():
            send = functools.partial(connection.send, self._save_script, address, id, parsed)
            if loop is running_loop():
                if send():
                    return
            else:
                with contextlib.suppress(RuntimeError):  # RuntimeError: the loop just closed
                    loop.call_soon_threadsafe(send)
                    return
        with contextlib.suppress(*REDIS_DOWN):  # down: the next reader parses it again
            self._save(args=[address, id, parsed])

    # --- wait -----------------------------------------------------------------------

    def wait(
        self,
        address: str,
        *,
        after: str | None = None,
        timeout: float = 0.0,
        select: Select | None = None,
    ) -> Coroutine[Any, Any, list[StoredMessage]]:
        """Return :meth:`messages` ``(address, after)``, waiting up to ``timeout`` seconds for one.

        Woken by a notice from whichever process delivers; as the protocol says.
        Not a coroutine itself: a pending wait holds one coroutine the less.
        """
        if select is None:
            mode = "all" if after is None else "after"
            return self._wait(address, mode, after or "", timeout)
        return self._wait_selected(address, after, timeout, select)

    def follow(
        self, address: str, cursor: str, timeout: float
    ) -> Coroutine[Any, Any, list[StoredMessage]]:
        """Like :meth:`wait`, for an event stream: the messages whose id sorts after ``cursor``."""
        return self._wait(address, "since", cursor, timeout, stream=True)

    async def _wait(
        self, address: str, mode: str, cursor: str, timeout: float, *, stream: bool = False
    ) -> list[StoredMessage]:
        folded = _live_form(address)
        inbox: RedisInbox | None = None
        if not (stream and timeout > 0 and self._listener.listening):
            # An event stream's follow, which waits again after each event, goes
            # straight to the watched read: one read an event the less.
            inbox, _, found = self._snapshot(folded, mode, cursor, address)
            if found or timeout <= 0 or self._closed:
                return found
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        await self._listener.ensure()
        while True:
            waiter = loop.create_future()
            self._waiters.add(folded, waiter)
            try:
                # Read after listening: a delivery from now on wakes the waiter.
                watch = deadline - loop.time()
                if stream:
                    current, left, found = await self._stream_snapshot(
                        folded, mode, cursor, address, watch
                    )
                else:
                    current, left, found = self._snapshot(folded, mode, cursor, address, watch)
                if inbox is None:
                    inbox = current  # the inbox the wait began on
                self._same(inbox, current, address)
                remaining = deadline - loop.time()
                if found or remaining <= 0 or self._closed:
                    return found
                timer = alarm(waiter, _until_woken(remaining, left))
                try:
                    await waiter
                finally:
                    timer.cancel()
            finally:
                self._waiters.discard(folded, waiter)

    async def _wait_selected(
        self, address: str, after: str | None, timeout: float, select: Select
    ) -> list[StoredMessage]:
        folded = _live_form(address)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        inbox, _, found = self._snapshot(
            folded, "all" if after is None else "after", after or "", address
        )
        cursor = after or ""
        listening = False
        while True:
            kept = await select(found)
            remaining = deadline - loop.time()
            if kept or remaining <= 0 or self._closed:
                return kept
            cursor = found[-1].id if found else cursor
            if not listening:
                await self._listener.ensure()
                listening = True
            while True:
                waiter = loop.create_future()
                self._waiters.add(folded, waiter)
                try:
                    current, left, found = self._snapshot(
                        folded, "since", cursor, address, watch=deadline - loop.time()
                    )
                    self._same(inbox, current, address)
                    remaining = deadline - loop.time()
                    if found or remaining <= 0 or self._closed:
                        break
                    timer = alarm(waiter, _until_woken(remaining, left))
                    try:
                        await waiter
                    finally:
                        timer.cancel()
                finally:
                    self._waiters.discard(folded, waiter)

    @staticmethod
    def _same(inbox: RedisInbox, current: RedisInbox, address: str) -> None:
        # A wait that began on ``inbox`` ends with 404 once it is gone, also when
        # an inbox has been created at its address since.
        if current.gen != inbox.gen:
            raise InboxNotFound(f"no inbox at {address[:80]!r}: deleted or expired")

    # --- delete, expire, stats ------------------------------------------------------

    def delete(self, address: str) -> int:
        """Destroy the live inbox at ``address`` and its messages; return how many were purged.

        Waits on it end with :class:`InboxNotFound` in every process.
        """
        folded = _live_form(address)
        self._live.forget(folded)
        purged: int = unavailable(lambda: self._delete(args=[folded]))
        if purged < 0:
            raise InboxNotFound(not_found(address))
        self._waiters.wake(folded)
        return purged

    def uid_validity(self, address: str) -> int:
        """The inbox's UIDVALIDITY, kept in Redis: every server tells the same."""
        key = scripts.inbox_key(_live_form(address), "inbox")
        validity = unavailable(lambda: self._redis.hget(key, "validity"))
        if validity is None:
            raise InboxNotFound(not_found(address))
        return int(validity)

    def uid_next(self, address: str) -> int:
        """The UID the inbox's next message will get: the delivery script's counter, plus one."""
        key = scripts.inbox_key(_live_form(address), "inbox")
        validity, last = unavailable(lambda: self._redis.hmget(key, ["validity", "uid"]))
        if validity is None:
            raise InboxNotFound(not_found(address))
        return int(last or 0) + 1

    def delete_messages(self, address: str, ids: Iterable[str]) -> int:
        """Remove messages ``ids`` from the inbox at ``address``: one round trip."""
        folded = _live_form(address)
        args = [folded, *(id for id in ids if _sendable(id))]
        removed: int = unavailable(lambda: self._delete_messages(args=args))
        if removed < 0:
            raise InboxNotFound(not_found(address))
        return removed

    def secret(self, name: str) -> bytes:
        """A secret named ``name`` in Redis: the first server to ask makes it (``SET NX``)."""
        found = self._secrets.get(name)
        if found is None:
            key, made = scripts.secret_key(name), os.urandom(32)
            # SET NX GET: the secret already there, or None when this one is now.
            there = unavailable(lambda: self._redis.set(key, made, nx=True, get=True))
            kept = made if there is None else there
            assert isinstance(kept, bytes)
            found = self._secrets.setdefault(name, kept)
        return found

    def expire(self) -> int:
        """Purge what is left of every inbox whose time is up, return how many."""
        swept: int = unavailable(lambda: self._sweep(args=[]))
        return swept

    def check(self) -> None:
        """Return if Redis answers a ``PING``; raise ``StoreUnavailable`` if it does not."""
        unavailable(self._redis.ping)

    def stats(self) -> dict[str, int]:
        """Count live inboxes, stored messages, stored bytes and evictions, over every process."""
        inboxes, messages, stored_bytes, evictions = unavailable(lambda: self._stats(args=[]))
        return {
            "inboxes": inboxes,
            "messages": messages,
            "stored_bytes": stored_bytes,
            "evictions": evictions,
        }

    # --- faults ---------------------------------------------------------------------

    def add_fault(self, address: str, fault: Fault) -> None:
        """Queue ``fault`` for the next deliveries to the inbox at ``address``."""
        folded = _live_form(address)
        entry = fault_entry(fault)
        added: int = unavailable(
            lambda: self._add_fault(args=[folded, entry, MAX_FAULTS_PER_INBOX])
        )
        if added == -1:
            raise InboxNotFound(not_found(address))
        if added == -2:
            raise TooManyFaults(
                f"the inbox already holds {MAX_FAULTS_PER_INBOX} pending faults, the most allowed"
            )
        self._faults_added = True

    def pending_faults(self, address: str) -> list[Fault]:
        """The faults queued for the inbox at ``address``, first to apply first."""
        folded = _live_form(address)
        entries: list[bytes] | None = unavailable(lambda: self._pending_faults(args=[folded]))
        if entries is None:
            raise InboxNotFound(not_found(address))
        return [read_fault(entry) for entry in entries]

    def clear_faults(self, address: str) -> int:
        """Drop the faults queued for the inbox at ``address``; return how many."""
        folded = _live_form(address)
        cleared: int = unavailable(lambda: self._clear_faults(args=[folded]))
        if cleared < 0:
            raise InboxNotFound(not_found(address))
        return cleared

    async def take_fault(self, address: str, stage: Stage) -> Fault | None:
        """Consume the fault that the next delivery to ``address`` (any case) gets at ``stage``.

        Raises :class:`~pytest_tempinbox.errors.StoreUnavailable` when Redis is down.
        """
        folded = recipient_inbox(address)[0]
        if not _sendable(folded):
            return None
        connection = self._pipelined()
        if connection is not None:
            taken: bytes | None = await connection.run(self._take_fault_script, folded, stage)
        else:
            taken = unavailable(lambda: self._take_fault(args=[folded, stage]))
        return None if taken is None else read_fault(taken)

    # --- close ----------------------------------------------------------------------

    def close(self) -> None:
        """End every pending wait, stop listening to notices and release the connections."""
        self._closed = True
        self._listener.stop()
        self._waiters.wake_every()
        self._live.clear()
        connection, self._connection = self._connection, None
        if connection is not None and connection.loop is not None:
            _on_loop(connection.loop, connection.close)
        self._redis.connection_pool.disconnect()


def _until_woken(remaining: float, left_ms: int) -> float:
    """How long a wait sleeps: until its time is up or the inbox expires, whichever is first."""
    return min(remaining, left_ms / 1000 + 0.001) if left_ms >= 0 else remaining


def _on_loop(loop: asyncio.AbstractEventLoop, call: Callable[[], None]) -> None:
    """Run ``call`` on ``loop``: now if it is the running loop, else soon (unless it is closed)."""
    if loop is running_loop():
        call()
    elif not loop.is_closed():
        loop.call_soon_threadsafe(call)


def _read_arguments(folded: str, mode: str, cursor: str, watch: float | None) -> list[str | int]:
    """The READ script's arguments; ``watch`` in seconds (None: a read that does not wait)."""
    args: list[str | int] = [folded, mode, cursor]
    if watch is not None:
        # A wait past its deadline by now still reads: Redis refuses a PX of 0 or less.
        args.append(math.ceil(max(watch, 0.0) * 1000) + _WATCH_MARGIN_MS)
    return args


def _checked(reply: list[Any], given: str, cursor: str) -> list[Any]:
    """The READ script's ``reply``, or the error its first element stands for."""
    if reply[0] == 0:
        raise InboxNotFound(not_found(given))
    if reply[0] == 1:
        raise InvalidRequest(f"after={cursor[:80]!r} is not the id of a message in this inbox")
    return reply


def _live_form(address: str) -> str:
    """``address`` folded, checked as an address; :class:`InboxNotFound` if not UTF-8.

    Every inbox's address is UTF-8, and redis-py could not send the
    surrogates an SMTP client's bytes may leave.
    """
    folded = normalize_address(address)
    if not _sendable(folded):
        raise InboxNotFound(not_found(address))
    return folded


def _sendable(address: str) -> bool:
    """Tell whether ``address`` encodes as UTF-8 (it holds no surrogates) for Redis."""
    if address.isascii():
        return True
    try:
        address.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _satisfies_the_protocol(store: RedisStore) -> InboxStore:
    # mypy checks here that RedisStore has every member of InboxStore, typed alike.
    return store
