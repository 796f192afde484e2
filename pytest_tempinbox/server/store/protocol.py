"""What the server asks of a store: :class:`InboxStore`, and the types it hands out.

The SMTP side (:mod:`pytest_tempinbox.server.smtp`) routes mail in, the API
(:mod:`pytest_tempinbox.server.api`, served over HTTP and by the in-process
transport) creates, reads, waits on and deletes inboxes, and the server
(:mod:`pytest_tempinbox.server.inbox_server`) expires and closes the store.
That is all of it: any class with these members, holding to the contracts
written on them, can keep the inboxes. :class:`~.memory.store.Store` (in memory)
is the first; ``tests/server/test_store_contract.py``
holds every one to the same behaviour. The module is long because each
member's contract is written on it, here only.

Threads: the server's loop calls the store (SMTP deliveries, HTTP requests,
expiry), and so does the in-process path, from the test's own thread, while the
loop runs. Every member may therefore be called from any thread at any time,
except the coroutines, which run on the loop that serves the store (the one
:meth:`InboxStore.start` was awaited on; a store may also serve them on
another loop, more slowly): the waits (:meth:`InboxStore.wait`,
:meth:`InboxStore.follow`) and the SMTP side's members
(:meth:`InboxStore.accepts`, :meth:`InboxStore.deliver`,
:meth:`InboxStore.take_fault`), so that a store that talks to a server of its
own lets the loop serve other sessions while it waits for an answer. Nothing
here does I/O on the loop for long: such a store keeps every other call short.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from ...models import Fault, Refusal, Stage
from .stored_message import Facets, StoredMessage

if TYPE_CHECKING:
    from ...errors import QuotaExceeded
    from ...quotas import QuotaPolicy
    from ...side_values import ProviderRecord

__all__ = ["Facets", "InboxStore", "Refusals", "Select", "StoredInbox", "StoredMessage"]

Select = Callable[[list[StoredMessage]], Awaitable[list[StoredMessage]]]
"""Keeps the messages a filter wants; :meth:`InboxStore.wait` awaits it outside any lock."""


class StoredInbox(Protocol):
    """One live inbox as a store reports it: what ``POST /api/generate`` answers with."""

    @property
    def address(self) -> str:
        """The inbox's address, folded (:func:`~.addresses.fold_address`): its key."""
        ...

    @property
    def created_at(self) -> datetime:
        """When the inbox was created, an aware datetime in UTC."""
        ...

    @property
    def expires_at(self) -> datetime | None:
        """When the inbox expires (created_at plus its time to live); None: never."""
        ...


class Refusals(Protocol):
    """The recipients refused at ``RCPT TO`` lately (:class:`~.refusals.RefusalLog`)."""

    def record(
        self,
        address: str,
        reply: str,
        client_ip: str | None,
        helo: str | None,
        tenant: str | None = None,
        transcript: dict[str, Any] | None = None,
        stage: Stage = "rcpt",
    ) -> None:
        """Remember that ``address`` was refused with SMTP reply ``reply``; from any thread.

        ``tenant``: the tenant whose SMTP credentials the session logged in with;
        ``transcript``: the JSON of the session's transcript up to the refusal;
        ``stage``: ``"rcpt"``, or ``"data"`` for a message refused at the end of DATA.
        """
        ...

    def find(
        self,
        *,
        since: datetime | None = None,
        similar_to: str | None = None,
        limit: int = ...,
        tenant: str | None = None,
    ) -> list[Refusal]:
        """The refusals remembered, at or after ``since``, newest first, at most ``limit``.

        With ``similar_to``, only those whose address is like it, the most
        similar first, each with its ``similarity``; with ``tenant``, only
        those of sessions logged in as that tenant.
        """
        ...


class InboxStore(Protocol):
    """The inboxes of one server and the messages routed to them.

    Addresses are compared as :func:`~.addresses.fold_address` folds them (ASCII
    letters lowercased, an IDN domain as A-labels), and mail to a sub-address
    ``name+detail@domain`` is the inbox ``name@domain``'s
    (:func:`~.addresses.recipient_inbox`); a method that is given one checks it with
    :func:`~.addresses.normalize_address` (:class:`~pytest_tempinbox.errors.InvalidAddress`)
    unless it says otherwise. "Live" means created and neither deleted nor
    expired: an expired inbox is gone exactly as if deleted, whether or not
    :meth:`expire` has run since. Every member may be called from any thread
    (see the module's docstring); each one is atomic. A member that reaches a
    store that does not answer (Redis down) raises
    :class:`~pytest_tempinbox.errors.StoreUnavailable`.
    """

    @property
    def domains(self) -> tuple[str, ...]:
        """The domains served, lowercased, the first being the default for generated addresses."""
        ...

    @property
    def max_messages_per_inbox(self) -> int:
        """How many messages an inbox keeps at most; a delivery past it evicts its oldest."""
        ...

    @property
    def max_stored_bytes(self) -> int:
        """How many raw bytes all inboxes keep together at most (each copy counted)."""
        ...

    @property
    def inbox_ttl(self) -> float | None:
        """The seconds an inbox lives unless created with a ``ttl`` of its own; None: forever."""
        ...

    @property
    def refusals(self) -> Refusals:
        """The recipients the SMTP side refused lately, to explain a wait that saw no mail."""
        ...

    @property
    def closed(self) -> bool:
        """Tell whether :meth:`close` was called: the server is stopping."""
        ...

    @property
    def keeps_delivered(self) -> bool:
        """Tell whether the messages :meth:`deliver` returns are the very objects it keeps.

        Then what the server keeps of a message (its SMTP transcript) can be
        kept on it, and goes with it; else it is kept beside the store.
        """
        ...

    @property
    def faults_added(self) -> bool:
        """Tell whether a fault was ever queued; while False, deliveries need not look for one.

        Read on every SMTP transaction: it must be as cheap as an attribute.
        """
        ...

    def generate(
        self,
        prefix: str | None = None,
        domain: str | None = None,
        ttl: float | None = None,
        *,
        address: str | None = None,
        owner: str | None = None,
    ) -> StoredInbox:
        """Create an inbox at a brand new address, or at the chosen ``address``, and return it.

        ``owner`` is the tenant that asks (None on a server without tenants):
        :meth:`owner` tells it again, :meth:`owned` lists its inboxes.

        A generated address is never handed out twice in the store's life.
        ``ttl`` (seconds above 0, up to :data:`~pytest_tempinbox.limits.MAX_TTL`)
        overrides :attr:`inbox_ttl`; ``prefix`` starts the local part
        (:func:`~.addresses.check_prefix`); ``domain`` (any case) must be
        served. A bad one raises :class:`~pytest_tempinbox.errors.InvalidRequest`,
        checked in that order. ``address`` goes without ``prefix`` and
        ``domain`` (:class:`~pytest_tempinbox.errors.InvalidRequest`) and must
        pass :func:`~.addresses.chosen_address`; a live inbox there raises
        :class:`~pytest_tempinbox.errors.AddressTaken`. With quotas, an
        ``owner`` over its ``inboxes`` or ``inboxes_per_hour`` raises
        :class:`~pytest_tempinbox.errors.QuotaExceeded`, checked and counted
        in one atomic step. Nothing is created (nor counted) when it raises.
        """
        ...

    def get(self, address: str) -> StoredInbox:
        """Return the live inbox at ``address`` (any case).

        :class:`~pytest_tempinbox.errors.InboxNotFound` when there is none, its
        message saying "expired" among the causes.
        """
        ...

    def owner(self, address: str) -> str | None:
        """The tenant that generated the live inbox at ``address``; None: no tenant did.

        Raises as :meth:`get` when there is no live inbox there.
        """
        ...

    def owned(self, owner: str) -> list[tuple[StoredInbox, int]]:
        """The live inboxes that ``owner`` generated, each with its number of messages."""
        ...

    @property
    def quotas(self) -> QuotaPolicy | None:
        """Which quotas hold for whom; None (no quota) costs the SMTP side nothing."""
        ...

    async def quota_room(self, address: str, size: int | None) -> QuotaExceeded | None:
        """The ``messages`` or ``bytes`` quota that mail to ``address`` would pass; None: room.

        The quota is the one of the tenant that owns the inbox (any case, or a
        sub-address); ``size`` None asks at ``RCPT`` (one more message), a
        number at the end of ``DATA`` (one more of that many bytes). None too
        when there is no live inbox there or no quota. Raises nothing but
        :class:`~pytest_tempinbox.errors.StoreUnavailable`.
        """
        ...

    def charge_check(self, owner: str | None) -> None:
        """Count one link or spam check for ``owner`` (None: no tenant) against its quota.

        Raises :class:`~pytest_tempinbox.errors.QuotaExceeded` (counting
        nothing) when ``checks_per_minute`` is used up; a store without
        quotas returns at once.
        """
        ...

    async def accepts(self, address: str) -> bool:
        """Tell whether mail to ``address`` (any case, or a sub-address of it) has a live inbox.

        Called for each ``RCPT TO``: it must be cheap and must not check the
        address's form. It raises nothing but
        :class:`~pytest_tempinbox.errors.StoreUnavailable` (the SMTP side
        answers ``451 4.3.0``).
        """
        ...

    async def admits(self, address: str) -> bool | QuotaExceeded:
        """Whether ``RCPT TO:<address>`` may pass, on a server with quotas: one look-up.

        False when :meth:`accepts` would say False; the ``messages`` quota the
        inbox's tenant holds, as :meth:`quota_room` with ``size`` None gives
        it, when one more message would pass it; else True. Raises nothing but
        :class:`~pytest_tempinbox.errors.StoreUnavailable`.
        """
        ...

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

        ``provider`` is the record of a send through a provider's API, kept
        with each copy and read back with it (None, for SMTP mail, costs nothing).
        With ``within_quotas`` on a server with quotas, a live recipient whose
        tenant this message would take over its ``messages`` or ``bytes``
        quota (:meth:`quota_room`) raises
        :class:`~pytest_tempinbox.errors.QuotaExceeded`, and nothing is stored.

        Recipients without a live inbox, and repeats of one (any case, or
        another of its sub-addresses), get nothing; no recipient raises.
        Returns the copies, in the order of ``rcpt_to``, all with one
        ``received_at``; empty when nobody was there.
        Each copy gets an id that sorts, as a string, after every id the store
        gave before (also across inboxes, and if the wall clock steps back),
        and a ``uid``: its inbox's next number, from 1, never given twice in
        the inbox's life (the UIDs of IMAP and POP3).
        Then the caps hold again: an inbox over ``max_messages_per_inbox``
        loses its oldest message, and while all kept bytes exceed
        ``max_stored_bytes`` the oldest message overall goes; each such
        eviction counts in :meth:`stats`. Called on every SMTP DATA: no
        parsing here, and no cost that grows with the number of inboxes.
        """
        ...

    def messages(self, address: str, after: str | None = None) -> list[StoredMessage]:
        """Return the messages of the inbox at ``address`` received after message ``after``.

        All of them for None, oldest first. Raises as :meth:`get`, and
        :class:`~pytest_tempinbox.errors.InvalidRequest` when ``after`` is not
        the id of a message the inbox still keeps.
        """
        ...

    def message(self, address: str, id: str) -> StoredMessage:
        """Return message ``id`` of the inbox at ``address``.

        Raises as :meth:`get`, and :class:`~pytest_tempinbox.errors.MessageNotFound`
        when the inbox does not keep it.
        """
        ...

    def cursor(self, address: str) -> str:
        """The id of the inbox's newest message, ``""`` if none: :meth:`follow` from now on.

        Raises as :meth:`get`.
        """
        ...

    async def wait(
        self,
        address: str,
        *,
        after: str | None = None,
        timeout: float = 0.0,
        select: Select | None = None,
    ) -> list[StoredMessage]:
        """Return :meth:`messages` ``(address, after)``, waiting up to ``timeout`` seconds for one.

        Returns at once when there already is one, or when ``timeout`` is 0 or
        less; otherwise as soon as a delivery wakes it (no polling), or with
        ``[]`` when the time is up or the store closes. Raises as
        :meth:`messages` at the start, and
        :class:`~pytest_tempinbox.errors.InboxNotFound` when the inbox is
        deleted or expires meanwhile, even if an inbox is created again at its
        address. With ``select``, only the messages it keeps count: it is
        awaited outside any lock, once for the messages there are, then once
        for each delivery's new ones (never twice for one message), and the wait
        goes on until it keeps one or the time is up. Runs on the store's loop;
        a delivery from another thread wakes it all the same.
        """
        ...

    async def follow(self, address: str, cursor: str, timeout: float) -> list[StoredMessage]:
        """Like :meth:`wait`, for an event stream: the messages whose id sorts after ``cursor``.

        ``cursor`` need not be a message of the inbox (any id or ``""`` is a
        point in time), so a message evicted meanwhile cannot break a stream.
        """
        ...

    def delete(self, address: str) -> int:
        """Destroy the live inbox at ``address`` and its messages; return how many were purged.

        Raises as :meth:`get`. From then on mail to the address is refused,
        its faults are gone, pending waits end with
        :class:`~pytest_tempinbox.errors.InboxNotFound`, and its bytes no
        longer count; a chosen address may be created again.
        """
        ...

    def uid_validity(self, address: str) -> int:
        """The inbox's UIDVALIDITY: a number from 1 to 2**32 - 1, fixed for the inbox's life.

        Its creation time in seconds, made larger than any the store gave
        before when two creations share a second: an inbox created again at
        an address (its UIDs starting at 1 again) never has its former
        number. Every server on one Redis tells the same. Raises as :meth:`get`.
        """
        ...

    def uid_next(self, address: str) -> int:
        """The UID the inbox's next message will get (IMAP's UIDNEXT): its last UID plus one.

        Never goes down while the inbox lives, not even when the newest messages
        are deleted or evicted, since UIDs are never given twice. Every server
        on one Redis tells the same. Raises as :meth:`get`.
        """
        ...

    def on_delivered(self, callback: Callable[[list[StoredMessage]], None]) -> None:
        """Call ``callback(copies)`` each time :meth:`deliver` stores any copy, before it returns.

        For the webhooks. ``copies`` is the list :meth:`deliver` returns, on
        the thread and loop that delivered; a callback must not block or raise.
        Only this store's own deliveries are told, not other servers' on Redis.
        """
        ...

    def on_messages_deleted(self, callback: Callable[[str], None]) -> None:
        """Call ``callback(address)`` (folded) after :meth:`delete_messages` removes any message.

        For IMAP's IDLE. On Redis, a deletion by any server of the store is
        told, on the loop that serves the store's waits, once the store listens
        to its notices (its first wait); the memory store calls it at once, in
        the deleting thread. Delivery waits are not woken by a deletion.
        """
        ...

    def delete_messages(self, address: str, ids: Iterable[str]) -> int:
        """Remove messages ``ids`` from the inbox at ``address``; return how many were there.

        Ids the inbox does not keep (any more) are skipped. The bytes they held
        no longer count (the caps, the quotas); every reader (HTTP, IMAP,
        POP3, on every server of the store) sees them gone. Raises as :meth:`get`.
        """
        ...

    def secret(self, name: str) -> bytes:
        """A random secret of 32 bytes named ``name``, made at the first call, then the same.

        The same for every server of the store (on Redis: for every server on
        that Redis), so that what one server signs with it another accepts:
        the readers' passwords (:mod:`pytest_tempinbox.server.readers.passwords`).
        """
        ...

    def expire(self) -> int:
        """Drop every inbox whose time is up, as :meth:`delete` would; return how many.

        The server calls it regularly; reads see an expired inbox as gone
        without it.
        """
        ...

    def stats(self) -> dict[str, int]:
        """Count ``inboxes`` (live), ``messages``, ``stored_bytes`` and ``evictions`` so far."""
        ...

    def check(self) -> None:
        """Return if the store answers; raise ``StoreUnavailable`` if it does not.

        Raises :class:`~pytest_tempinbox.errors.StoreUnavailable`. What
        ``GET /api/ready`` asks, as often as a load balancer probes: it must be
        cheap and change nothing.
        """
        ...

    def add_fault(self, address: str, fault: Fault) -> None:
        """Queue ``fault`` for the next deliveries to the inbox at ``address``.

        Raises as :meth:`get`, and :class:`~pytest_tempinbox.errors.TooManyFaults`
        when the inbox's queue is full. Sets :attr:`faults_added` for good.
        """
        ...

    def pending_faults(self, address: str) -> list[Fault]:
        """The faults queued for the inbox at ``address``, first to apply first.

        Raises as :meth:`get`.
        """
        ...

    def clear_faults(self, address: str) -> int:
        """Drop the faults queued for the inbox at ``address``; return how many.

        Raises as :meth:`get`.
        """
        ...

    async def take_fault(self, address: str, stage: Stage) -> Fault | None:
        """Consume the fault that the next delivery to ``address`` (any case) gets at ``stage``.

        None when the address has no live inbox, no pending fault, or a first
        fault for the other stage (see :meth:`~.faults.FaultQueue.take`). It
        raises nothing but :class:`~pytest_tempinbox.errors.StoreUnavailable`.
        """
        ...

    async def start(self) -> None:
        """Get ready to serve on the running loop (a Redis store subscribes to its notices).

        The server awaits it once, before it accepts connections. It raises
        nothing but :class:`~pytest_tempinbox.errors.StoreUnavailable`, which the
        server logs and goes on: the store recovers by itself.
        """
        ...

    def close(self) -> None:
        """End every pending wait (they answer with what they have) and refuse new waits.

        Waits begun after it return at once with what there is.
        """
        ...
