"""The behaviour every store holds to (``InboxStore``), run against each backend.

Each test takes a store from :func:`make_store`, parametrized by backend, and
uses only the members of :class:`pytest_tempinbox.server.store.protocol.InboxStore`:
a new backend adds one entry to ``BACKENDS`` and runs them all. Each store
is started on a loop of its own, as a server does, and its coroutines run
there (``store_support.py``). The Redis backend runs on a real
``redis-server`` (``tests/redis_support.py``), skipped where it is not
installed. What only the in-memory store does is tested in ``test_store.py``.
"""

from __future__ import annotations

import asyncio
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime, timedelta, timezone
from typing import Protocol

import pytest

from pytest_tempinbox.errors import (
    AddressTaken,
    InboxNotFound,
    InvalidAddress,
    InvalidRequest,
    MessageNotFound,
    TooManyFaults,
)
from pytest_tempinbox.limits import (
    DEFAULT_MAX_MESSAGES_PER_INBOX,
    DEFAULT_MAX_STORED_BYTES,
    MAX_FAULTS_PER_INBOX,
)
from pytest_tempinbox.models import Fault
from pytest_tempinbox.server.store.addresses import DEFAULT_DOMAIN
from pytest_tempinbox.server.store.memory.store import Store
from pytest_tempinbox.server.store.protocol import InboxStore, StoredMessage

from ..helpers import TIMER_SLACK
from .store_support import ServingLoop, accepts, deliver, run, take_fault

RAW = b"Subject: hi\r\n\r\nbody\r\n"


class MakeStore(Protocol):
    def __call__(
        self,
        domains: Iterable[str] = ("tempinbox.test",),
        *,
        max_messages_per_inbox: int = DEFAULT_MAX_MESSAGES_PER_INBOX,
        max_stored_bytes: int = DEFAULT_MAX_STORED_BYTES,
        inbox_ttl: float | None = None,
    ) -> InboxStore: ...


def memory_stores(request: pytest.FixtureRequest) -> MakeStore:
    """The in-memory store: each one is empty."""
    return Store


def redis_stores(request: pytest.FixtureRequest) -> MakeStore:
    """Redis stores on the session's Redis, emptied for the test; closed after it."""
    url = request.getfixturevalue("redis_url")
    from pytest_tempinbox.server.store.redis.store import RedisStore

    made: list[RedisStore] = []

    def make(
        domains: Iterable[str] = (DEFAULT_DOMAIN,),
        *,
        max_messages_per_inbox: int = DEFAULT_MAX_MESSAGES_PER_INBOX,
        max_stored_bytes: int = DEFAULT_MAX_STORED_BYTES,
        inbox_ttl: float | None = None,
    ) -> InboxStore:
        store = RedisStore(
            url,
            domains,
            max_messages_per_inbox=max_messages_per_inbox,
            max_stored_bytes=max_stored_bytes,
            inbox_ttl=inbox_ttl,
        )
        made.append(store)
        return store

    def close_them() -> None:
        for store in made:
            store.close()

    request.addfinalizer(close_them)
    return make


BACKENDS: dict[str, Callable[[pytest.FixtureRequest], MakeStore]] = {
    "memory": memory_stores,
    "redis": redis_stores,
}
"""Each backend: given the test's request, what makes its empty stores."""


@pytest.fixture
def serving() -> Iterator[ServingLoop]:
    """The loop that serves the test's stores, closed with them after the test."""
    loop = ServingLoop()
    yield loop
    loop.close()


@pytest.fixture(params=sorted(BACKENDS))
def make_store(request: pytest.FixtureRequest, serving: ServingLoop) -> MakeStore:
    """Makes empty stores of one backend (each test's stores are its own), served on a loop."""
    make = BACKENDS[request.param](request)

    def served(
        domains: Iterable[str] = ("tempinbox.test",),
        *,
        max_messages_per_inbox: int = DEFAULT_MAX_MESSAGES_PER_INBOX,
        max_stored_bytes: int = DEFAULT_MAX_STORED_BYTES,
        inbox_ttl: float | None = None,
    ) -> InboxStore:
        made = make(
            domains,
            max_messages_per_inbox=max_messages_per_inbox,
            max_stored_bytes=max_stored_bytes,
            inbox_ttl=inbox_ttl,
        )
        return serving.serve(made)

    return served


@pytest.fixture
def store(make_store: MakeStore) -> InboxStore:
    """An empty store at ``tempinbox.test``, with the default limits."""
    return make_store()


def ids(messages: list[StoredMessage]) -> list[str]:
    return [message.id for message in messages]


# --- create ---------------------------------------------------------------------------


def test_generated_addresses_are_lowercase_random_and_at_the_default_domain(
    make_store: MakeStore,
) -> None:
    store = make_store(["Example.Test", "other.test"])
    assert store.domains == ("example.test", "other.test")
    inbox = store.generate()
    local, _, domain = inbox.address.partition("@")
    assert domain == "example.test"
    assert re.fullmatch(r"[a-z0-9]{13,}", local)


def test_generated_addresses_never_repeat_even_after_delete(store: InboxStore) -> None:
    seen = set()
    for _ in range(2000):
        inbox = store.generate()
        assert inbox.address not in seen
        seen.add(inbox.address)
        store.delete(inbox.address)


def test_prefix_starts_the_local_part(store: InboxStore) -> None:
    assert store.generate(prefix="signup.flow_1").address.startswith("signup.flow_1-")


@pytest.mark.parametrize("prefix", ["", "Upper", "a" * 33, "sp ace", "plus+", ".lead", "a..b"])
def test_bad_prefix_is_refused(store: InboxStore, prefix: str) -> None:
    with pytest.raises(InvalidRequest, match="prefix"):
        store.generate(prefix=prefix)
    assert store.stats()["inboxes"] == 0


def test_domain_must_be_one_of_the_store_domains(make_store: MakeStore) -> None:
    store = make_store(["one.test", "two.test"])
    assert store.generate(domain="TWO.test").address.endswith("@two.test")
    with pytest.raises(InvalidRequest, match=r"one\.test, two\.test"):
        store.generate(domain="example.com")


def test_a_bad_prefix_is_named_before_a_bad_domain(store: InboxStore) -> None:
    with pytest.raises(InvalidRequest, match="prefix"):
        store.generate(prefix="Upper", domain="example.com")


def test_a_store_needs_a_domain(make_store: MakeStore) -> None:
    with pytest.raises(ValueError, match="domain"):
        make_store([])


@pytest.mark.parametrize("ttl", [0, -1, 8 * 24 * 3600])
def test_ttl_must_be_positive_and_at_most_a_week(store: InboxStore, ttl: float) -> None:
    with pytest.raises(InvalidRequest, match="ttl"):
        store.generate(ttl=ttl)


def test_a_new_inbox_tells_when_it_was_made_and_when_it_expires(make_store: MakeStore) -> None:
    before = datetime.now(timezone.utc)
    forever, own = make_store().generate(), make_store(inbox_ttl=60).generate(ttl=30)
    assert before <= forever.created_at <= datetime.now(timezone.utc)
    assert forever.created_at.tzinfo is not None
    assert forever.expires_at is None
    assert own.expires_at == own.created_at + timedelta(seconds=30)


def test_a_chosen_address_is_created_lowercased_and_once_while_live(store: InboxStore) -> None:
    inbox = store.generate(address="Seed.User@TempInbox.test")
    assert inbox.address == "seed.user@tempinbox.test"
    with pytest.raises(AddressTaken):
        store.generate(address="seed.user@tempinbox.test")
    store.delete(inbox.address)
    assert store.generate(address="seed.user@tempinbox.test").address == inbox.address


@pytest.mark.parametrize(
    ("address", "prefix", "domain", "error"),
    [
        ("a/b@tempinbox.test", None, None, InvalidAddress),
        ('"quoted"@tempinbox.test', None, None, InvalidAddress),
        ("someone@example.com", None, None, InvalidRequest),
        ("a@tempinbox.test", "p", None, InvalidRequest),
        ("a@tempinbox.test", None, "tempinbox.test", InvalidRequest),
    ],
)
def test_a_chosen_address_must_be_plain_and_served(
    store: InboxStore,
    address: str,
    prefix: str | None,
    domain: str | None,
    error: type[Exception],
) -> None:
    with pytest.raises(error):
        store.generate(prefix, domain, address=address)
    assert store.stats()["inboxes"] == 0


# --- look up --------------------------------------------------------------------------


def test_lookup_is_case_insensitive(store: InboxStore) -> None:
    inbox = store.generate()
    assert store.get(inbox.address.upper()).address == inbox.address
    assert accepts(store, inbox.address.upper())
    assert not accepts(store, "someone@example.com")


@pytest.mark.parametrize(
    "text", ["no-at-sign", "@example.test", "user@", "a" * 250 + "@x.test", "a b@x.test", "a\0@x"]
)
def test_strings_that_are_not_addresses_are_invalid(store: InboxStore, text: str) -> None:
    with pytest.raises(InvalidAddress):
        store.get(text)
    with pytest.raises(InvalidAddress):
        store.messages(text)
    assert not accepts(store, text)


def test_check_returns_while_the_store_answers(store: InboxStore) -> None:
    store.check()  # returns: it raises StoreUnavailable when the store does not answer


def test_unknown_inbox_is_not_found(store: InboxStore) -> None:
    for call in (store.get, store.messages, store.delete, store.cursor, store.pending_faults):
        with pytest.raises(InboxNotFound):
            call("nobody@tempinbox.test")


# --- deliver and read with a cursor ---------------------------------------------------


def test_delivery_stores_one_copy_per_live_recipient(store: InboxStore) -> None:
    first, second = store.generate(), store.generate()
    stored = deliver(
        store,
        "app@example.com",
        [first.address, "nobody@tempinbox.test", second.address.upper(), first.address],
        RAW,
    )
    assert [message.inbox for message in stored] == [first.address, second.address]
    (in_first,) = store.messages(first.address)
    (in_second,) = store.messages(second.address)
    assert in_first.id != in_second.id
    assert in_first.raw == RAW
    assert in_first.envelope.mail_from == "app@example.com"
    assert in_first.received_at == in_second.received_at


def test_delivery_to_nobody_stores_nothing(store: InboxStore) -> None:
    assert deliver(store, "", ["nobody@tempinbox.test", "not an address"], RAW) == []
    assert store.stats()["messages"] == 0


def test_each_delivery_that_stores_a_copy_is_told_to_the_watchers(store: InboxStore) -> None:
    told: list[list[str]] = []
    store.on_delivered(lambda copies: told.append([copy.id for copy in copies]))
    first, second = store.generate(), store.generate()
    both = deliver(store, "", [first.address, second.address], RAW)
    deliver(store, "", ["nobody@tempinbox.test"], RAW)  # stores nothing: not told
    one = deliver(store, "", [second.address], RAW)
    assert told == [[copy.id for copy in both], [copy.id for copy in one]]


def test_message_ids_sort_in_arrival_order_across_inboxes(store: InboxStore) -> None:
    one, other = store.generate(), store.generate()
    delivered = []
    for n in range(50):
        delivered += ids(deliver(store, "", [(one, other)[n % 2].address], RAW))
    assert delivered == sorted(delivered)
    assert ids(store.messages(one.address)) == delivered[0::2]
    assert ids(store.messages(other.address)) == delivered[1::2]
    assert len(set(delivered)) == 50
    assert all(re.fullmatch(r"[0-9a-f]+", id) for id in delivered)


def test_after_returns_only_later_messages(store: InboxStore) -> None:
    inbox = store.generate()
    for _ in range(3):
        deliver(store, "", [inbox.address], RAW)
    first, second, third = ids(store.messages(inbox.address))
    assert ids(store.messages(inbox.address, after=first)) == [second, third]
    assert ids(store.messages(inbox.address, after=third)) == []
    assert ids(store.messages(inbox.address, after=None)) == [first, second, third]


def test_after_an_id_from_another_inbox_is_invalid(store: InboxStore) -> None:
    one, other = store.generate(), store.generate()
    (elsewhere,) = deliver(store, "", [other.address], RAW)
    with pytest.raises(InvalidRequest, match="after"):
        store.messages(one.address, after=elsewhere.id)


def test_message_lookup_by_id(store: InboxStore) -> None:
    inbox = store.generate()
    (stored,) = deliver(store, "", [inbox.address], RAW)
    found = store.message(inbox.address.upper(), stored.id)
    assert (found.id, found.raw, found.inbox) == (stored.id, RAW, inbox.address)
    assert found.message().subject == "hi"
    with pytest.raises(MessageNotFound):
        store.message(inbox.address, "0" * 20)


def test_the_cursor_is_the_newest_message(store: InboxStore) -> None:
    inbox = store.generate()
    assert store.cursor(inbox.address) == ""
    deliver(store, "", [inbox.address], RAW)
    (newest,) = deliver(store, "", [inbox.address], RAW)
    assert store.cursor(inbox.address) == newest.id


# --- wait and follow ------------------------------------------------------------------


def test_wait_returns_at_once_when_a_message_is_there(store: InboxStore) -> None:
    inbox = store.generate()
    deliver(store, "", [inbox.address], RAW)
    found = run(store, asyncio.wait_for(store.wait(inbox.address, timeout=30), 1))
    assert len(found) == 1


def test_wait_is_woken_by_a_delivery(store: InboxStore) -> None:
    inbox = store.generate()

    async def scenario() -> int:
        waiting = asyncio.create_task(store.wait(inbox.address, timeout=30))
        await asyncio.sleep(0.01)
        assert not waiting.done()
        await store.deliver("", [inbox.address], RAW)
        return len(await asyncio.wait_for(waiting, 1))

    assert run(store, scenario()) == 1


def test_wait_is_woken_by_a_delivery_on_another_loop(store: InboxStore) -> None:
    inbox = store.generate()

    async def scenario() -> int:
        waiting = asyncio.create_task(store.wait(inbox.address, timeout=30))
        await asyncio.sleep(0.01)
        delivery = store.deliver("", [inbox.address], RAW)
        await asyncio.to_thread(asyncio.run, delivery)  # as a store nobody started serves it
        return len(await asyncio.wait_for(waiting, 1))

    assert run(store, scenario()) == 1


def test_wait_with_a_cursor_ignores_older_messages(store: InboxStore) -> None:
    inbox = store.generate()
    (old,) = deliver(store, "", [inbox.address], RAW)

    async def scenario() -> list[str]:
        waiting = asyncio.create_task(store.wait(inbox.address, after=old.id, timeout=30))
        await asyncio.sleep(0.01)
        assert not waiting.done()
        await store.deliver("", [inbox.address], RAW)
        return ids(await asyncio.wait_for(waiting, 1))

    found = run(store, scenario())
    assert len(found) == 1
    assert found[0] != old.id


def test_wait_times_out_with_nothing(store: InboxStore) -> None:
    inbox = store.generate()
    started = time.monotonic()
    assert run(store, store.wait(inbox.address, timeout=0.05)) == []
    assert time.monotonic() - started >= 0.04 - TIMER_SLACK


def test_wait_without_a_timeout_answers_at_once(store: InboxStore) -> None:
    inbox = store.generate()
    assert run(store, asyncio.wait_for(store.wait(inbox.address), 1)) == []


def test_wait_raises_as_messages_does(store: InboxStore) -> None:
    one, other = store.generate(), store.generate()
    (elsewhere,) = deliver(store, "", [other.address], RAW)
    with pytest.raises(InboxNotFound):
        run(store, store.wait("nobody@tempinbox.test", timeout=1))
    with pytest.raises(InvalidRequest, match="after"):
        run(store, store.wait(one.address, after=elsewhere.id, timeout=1))


def test_wait_with_select_goes_on_past_what_it_drops(store: InboxStore) -> None:
    inbox = store.generate()
    looked_at: list[str] = []

    async def wanted(found: list[StoredMessage]) -> list[StoredMessage]:
        looked_at.extend(ids(found))
        return [message for message in found if message.message().subject == "yes"]

    async def scenario() -> list[str]:
        waiting = asyncio.create_task(store.wait(inbox.address, timeout=30, select=wanted))
        await asyncio.sleep(0.01)
        await store.deliver("", [inbox.address], b"Subject: no\r\n\r\n.\r\n")
        await asyncio.sleep(0.01)
        assert not waiting.done()
        await store.deliver("", [inbox.address], b"Subject: yes\r\n\r\n.\r\n")
        return ids(await asyncio.wait_for(waiting, 1))

    (kept,) = run(store, scenario())
    assert looked_at == ids(store.messages(inbox.address))
    assert kept == looked_at[-1]


def test_delete_ends_a_pending_wait_with_not_found(store: InboxStore) -> None:
    inbox = store.generate()

    async def scenario() -> None:
        waiting = asyncio.create_task(store.wait(inbox.address, timeout=30))
        await asyncio.sleep(0.01)
        store.delete(inbox.address)
        await asyncio.wait_for(waiting, 1)

    with pytest.raises(InboxNotFound):
        run(store, scenario())


def test_delete_from_another_thread_ends_a_wait_even_if_the_address_is_made_again(
    store: InboxStore,
) -> None:
    address = store.generate(address="again@tempinbox.test").address

    def delete_and_make_again() -> None:
        store.delete(address)
        store.generate(address=address)

    async def scenario() -> None:
        waiting = asyncio.create_task(store.wait(address, timeout=30))
        await asyncio.sleep(0.01)
        await asyncio.to_thread(delete_and_make_again)
        await asyncio.wait_for(waiting, 1)

    with pytest.raises(InboxNotFound):
        run(store, scenario())


def test_close_ends_pending_waits_with_what_they_have(store: InboxStore) -> None:
    inbox = store.generate()

    async def scenario() -> int:
        waiting = asyncio.create_task(store.wait(inbox.address, timeout=30))
        await asyncio.sleep(0.01)
        store.close()
        return len(await asyncio.wait_for(waiting, 1))

    assert not store.closed
    assert run(store, scenario()) == 0
    assert store.closed
    assert run(store, asyncio.wait_for(store.wait(inbox.address, timeout=30), 1)) == []


def test_follow_returns_what_came_after_any_cursor(store: InboxStore) -> None:
    inbox = store.generate()
    (first,) = deliver(store, "", [inbox.address], RAW)
    assert ids(run(store, store.follow(inbox.address, "", 0))) == [first.id]
    cursor = store.cursor(inbox.address)

    async def scenario() -> list[str]:
        following = asyncio.create_task(store.follow(inbox.address, cursor, 30))
        await asyncio.sleep(0.01)
        assert not following.done()
        await store.deliver("", [inbox.address], RAW)
        return ids(await asyncio.wait_for(following, 1))

    (second,) = run(store, scenario())
    assert second > first.id
    assert run(store, store.follow(inbox.address, second, 0.01)) == []


def test_follow_survives_the_eviction_of_its_cursor(make_store: MakeStore) -> None:
    store = make_store(max_messages_per_inbox=1)
    inbox = store.generate()
    (evicted,) = deliver(store, "", [inbox.address], RAW)
    (kept,) = deliver(store, "", [inbox.address], RAW)
    assert ids(run(store, store.follow(inbox.address, evicted.id, 0))) == [kept.id]


# --- delete and expire ----------------------------------------------------------------


def test_delete_purges_and_refuses_later_mail(store: InboxStore) -> None:
    inbox = store.generate()
    deliver(store, "", [inbox.address], RAW)
    deliver(store, "", [inbox.address], RAW)
    assert store.delete(inbox.address.upper()) == 2
    assert not accepts(store, inbox.address)
    assert deliver(store, "", [inbox.address], RAW) == []
    with pytest.raises(InboxNotFound):
        store.delete(inbox.address)
    with pytest.raises(InboxNotFound):
        store.get(inbox.address)


def test_an_expired_inbox_is_gone_like_a_deleted_one(make_store: MakeStore) -> None:
    store = make_store(inbox_ttl=0.05)
    assert store.inbox_ttl == 0.05
    inbox = store.generate()
    deliver(store, "", [inbox.address], RAW)
    assert inbox.expires_at is not None
    assert 0 < (inbox.expires_at - inbox.created_at).total_seconds() <= 0.06
    time.sleep(0.06)
    assert not accepts(store, inbox.address)
    with pytest.raises(InboxNotFound, match="expired"):
        store.get(inbox.address)
    assert store.stats()["stored_bytes"] == 0


def test_expire_drops_untouched_inboxes_and_ends_their_waits(store: InboxStore) -> None:
    short, long = store.generate(ttl=0.05), store.generate(ttl=60)

    async def scenario() -> None:
        waiting = asyncio.create_task(store.wait(short.address, timeout=30))
        await asyncio.sleep(0.06)
        assert store.expire() == 1
        await asyncio.wait_for(waiting, 1)

    with pytest.raises(InboxNotFound):
        run(store, scenario())
    assert store.stats()["inboxes"] == 1
    assert accepts(store, long.address)
    assert store.expire() == 0


def test_an_expired_chosen_address_may_be_chosen_again(store: InboxStore) -> None:
    store.generate(address="brief@tempinbox.test", ttl=0.02)
    time.sleep(0.03)
    assert store.generate(address="brief@tempinbox.test").expires_at is None


# --- limits and stats -----------------------------------------------------------------


def test_the_limits_are_those_given(make_store: MakeStore) -> None:
    store = make_store(max_messages_per_inbox=7, max_stored_bytes=1234, inbox_ttl=None)
    assert (store.max_messages_per_inbox, store.max_stored_bytes, store.inbox_ttl) == (
        7,
        1234,
        None,
    )


def test_an_inbox_keeps_at_most_its_cap_evicting_the_oldest(make_store: MakeStore) -> None:
    store = make_store(max_messages_per_inbox=3)
    inbox = store.generate()
    for n in range(5):
        deliver(store, "", [inbox.address], f"Subject: {n}\r\n\r\n".encode())
    assert [message.raw[9:10] for message in store.messages(inbox.address)] == [b"2", b"3", b"4"]
    assert store.stats()["evictions"] == 2
    assert store.stats()["messages"] == 3


def test_stored_bytes_are_capped_evicting_the_oldest_overall(make_store: MakeStore) -> None:
    store = make_store(max_stored_bytes=250)
    first, second = store.generate(), store.generate()
    deliver(store, "", [first.address], b"a" * 100)
    deliver(store, "", [second.address], b"b" * 100)
    deliver(store, "", [second.address], b"c" * 100)
    assert store.messages(first.address) == []
    assert [message.raw[:1] for message in store.messages(second.address)] == [b"b", b"c"]
    assert store.stats() == {"inboxes": 2, "messages": 2, "stored_bytes": 200, "evictions": 1}


def test_each_copy_counts_towards_the_stored_bytes(store: InboxStore) -> None:
    first, second = store.generate(), store.generate()
    deliver(store, "", [first.address, second.address], b"x" * 10)
    assert store.stats() == {"inboxes": 2, "messages": 2, "stored_bytes": 20, "evictions": 0}


def test_delete_and_expiry_release_stored_bytes(store: InboxStore) -> None:
    inbox, brief = store.generate(), store.generate(ttl=0.02)
    deliver(store, "", [inbox.address, brief.address], b"x" * 1000)
    assert store.stats()["stored_bytes"] == 2000
    store.delete(inbox.address)
    time.sleep(0.03)
    assert store.stats() == {"inboxes": 0, "messages": 0, "stored_bytes": 0, "evictions": 0}


# --- faults ---------------------------------------------------------------------------


def test_faults_are_queued_listed_taken_in_order_and_cleared(store: InboxStore) -> None:
    inbox = store.generate()
    assert not store.faults_added
    assert store.pending_faults(inbox.address) == []
    rcpt = Fault(stage="rcpt", code=451, message="4.0.0 x", times=2)
    data = Fault(stage="data", disconnect=True)
    store.add_fault(inbox.address.upper(), rcpt)
    store.add_fault(inbox.address, data)
    assert store.faults_added
    assert store.pending_faults(inbox.address) == [rcpt, data]
    assert take_fault(store, inbox.address, "data") is None  # the rcpt one is first in line
    assert take_fault(store, inbox.address.upper(), "rcpt") == Fault(
        stage="rcpt", code=451, message="4.0.0 x", times=1
    )
    assert store.pending_faults(inbox.address)[0].times == 1
    assert take_fault(store, inbox.address, "rcpt") is not None
    assert store.pending_faults(inbox.address) == [data]
    assert store.clear_faults(inbox.address) == 1
    assert store.pending_faults(inbox.address) == []
    assert take_fault(store, inbox.address, "data") is None
    assert store.faults_added  # for good


def test_a_fault_queue_is_bounded(store: InboxStore) -> None:
    inbox = store.generate()
    fault = Fault(stage="rcpt", code=450, message="4.2.1 busy")
    for _ in range(MAX_FAULTS_PER_INBOX):
        store.add_fault(inbox.address, fault)
    with pytest.raises(TooManyFaults):
        store.add_fault(inbox.address, fault)


def test_faults_belong_to_live_inboxes_only(store: InboxStore) -> None:
    inbox = store.generate()
    fault = Fault(stage="rcpt", code=451, message="4.0.0 x", times=5)
    with pytest.raises(InboxNotFound):
        store.add_fault("nobody@tempinbox.test", fault)
    store.add_fault(inbox.address, fault)
    assert take_fault(store, "nobody@tempinbox.test", "rcpt") is None
    store.delete(inbox.address)
    assert take_fault(store, inbox.address, "rcpt") is None
    with pytest.raises(InboxNotFound):
        store.clear_faults(inbox.address)


# --- refusals -------------------------------------------------------------------------


def test_refusals_are_recorded_and_found_newest_first(store: InboxStore) -> None:
    assert store.refusals.find() == []
    store.refusals.record("alice@tempinbox.test", "550 no", "127.0.0.1", "client")
    store.refusals.record("bob@tempinbox.test", "550 no", None, None)
    assert [r.address for r in store.refusals.find()] == [
        "bob@tempinbox.test",
        "alice@tempinbox.test",
    ]
    assert [r.address for r in store.refusals.find(limit=1)] == ["bob@tempinbox.test"]
    (like,) = store.refusals.find(similar_to="alice@tempinbox.tst")
    assert like.address == "alice@tempinbox.test"


# --- threads --------------------------------------------------------------------------


def test_concurrent_deliveries_from_threads_lose_nothing(store: InboxStore) -> None:
    inbox = store.generate()

    def send() -> None:
        for _ in range(200):
            deliver(store, "", [inbox.address], RAW)

    threads = [threading.Thread(target=send) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    found = ids(store.messages(inbox.address))
    assert len(set(found)) == 800
    assert found == sorted(found)
