"""Unit tests of the store: routing sessions, delivery, cursors and waiting, without sockets."""

from __future__ import annotations

import asyncio
import re
import time

import pytest

from pytest_tempinbox.errors import InboxNotFound, InvalidAddress, InvalidRequest, MessageNotFound
from pytest_tempinbox.server.store import Store, normalize_address

RAW = b"Subject: hi\r\n\r\nbody\r\n"


def test_generated_addresses_are_lowercase_random_and_at_the_default_domain() -> None:
    store = Store(["Example.Test", "other.test"])
    address = store.generate().address
    local, _, domain = address.partition("@")
    assert domain == "example.test"
    assert re.fullmatch(r"[a-z0-9]{13,}", local)


def test_generated_addresses_never_repeat_even_after_delete() -> None:
    store = Store()
    seen = set()
    for _ in range(2000):
        inbox = store.generate()
        assert inbox.address not in seen
        seen.add(inbox.address)
        store.delete(inbox.address)


def test_prefix_starts_the_local_part() -> None:
    address = Store().generate(prefix="signup.flow_1").address
    assert address.startswith("signup.flow_1-")


@pytest.mark.parametrize("prefix", ["", "Upper", "a" * 33, "sp ace", "plus+", ".lead", "a..b"])
def test_bad_prefix_is_refused(prefix: str) -> None:
    with pytest.raises(InvalidRequest, match="prefix"):
        Store().generate(prefix=prefix)


def test_domain_must_be_one_of_the_store_domains() -> None:
    store = Store(["one.test", "two.test"])
    assert store.generate(domain="TWO.test").address.endswith("@two.test")
    with pytest.raises(InvalidRequest, match=r"one\.test, two\.test"):
        store.generate(domain="example.com")


def test_a_store_needs_a_domain() -> None:
    with pytest.raises(ValueError, match="domain"):
        Store([])


@pytest.mark.parametrize(
    "text", ["no-at-sign", "@example.test", "user@", "a" * 250 + "@x.test", "a b@x.test", "a\0@x"]
)
def test_strings_that_are_not_addresses_are_invalid(text: str) -> None:
    with pytest.raises(InvalidAddress):
        normalize_address(text)


def test_lookup_is_case_insensitive() -> None:
    store = Store()
    inbox = store.generate()
    assert store.get(inbox.address.upper()) is inbox
    assert store.accepts(inbox.address.upper())
    assert not store.accepts("someone@example.com")


def test_unknown_inbox_is_not_found() -> None:
    with pytest.raises(InboxNotFound):
        Store().get("nobody@tempinbox.test")


def test_delivery_stores_one_copy_per_live_recipient() -> None:
    store = Store()
    first, second = store.generate(), store.generate()
    stored = store.deliver(
        "app@example.com",
        [first.address, "nobody@tempinbox.test", second.address.upper(), first.address],
        RAW,
    )
    assert [message.inbox for message in stored] == [first.address, second.address]
    assert len(first.messages) == 1
    assert len(second.messages) == 1
    assert first.messages[0].id != second.messages[0].id
    assert first.messages[0].raw == RAW


def test_message_ids_sort_in_arrival_order() -> None:
    store = Store()
    inbox = store.generate()
    for _ in range(50):
        store.deliver("", [inbox.address], RAW)
    ids = [message.id for message in inbox.messages]
    assert ids == sorted(ids)
    assert len(set(ids)) == 50
    assert all(re.fullmatch(r"[0-9a-f]+", id) for id in ids)


def test_after_returns_only_later_messages() -> None:
    store = Store()
    inbox = store.generate()
    for _ in range(3):
        store.deliver("", [inbox.address], RAW)
    first, second, third = inbox.messages
    assert inbox.messages_after(first.id) == [second, third]
    assert inbox.messages_after(third.id) == []
    assert inbox.messages_after(None) == [first, second, third]


def test_after_an_id_from_another_inbox_is_invalid() -> None:
    store = Store()
    one, other = store.generate(), store.generate()
    store.deliver("", [other.address], RAW)
    with pytest.raises(InvalidRequest, match="after"):
        one.messages_after(other.messages[0].id)


def test_message_lookup_by_id() -> None:
    store = Store()
    inbox = store.generate()
    (stored,) = store.deliver("", [inbox.address], RAW)
    assert store.message(inbox.address, stored.id) is stored
    with pytest.raises(MessageNotFound):
        store.message(inbox.address, "0" * 20)


def test_delete_purges_and_refuses_later_mail() -> None:
    store = Store()
    inbox = store.generate()
    store.deliver("", [inbox.address], RAW)
    store.deliver("", [inbox.address], RAW)
    assert store.delete(inbox.address) == 2
    assert not store.accepts(inbox.address)
    assert store.deliver("", [inbox.address], RAW) == []
    with pytest.raises(InboxNotFound):
        store.delete(inbox.address)


def test_wait_returns_at_once_when_a_message_is_there() -> None:
    store = Store()
    inbox = store.generate()
    store.deliver("", [inbox.address], RAW)
    found = asyncio.run(asyncio.wait_for(store.wait(inbox.address, timeout=30), 1))
    assert len(found) == 1


def test_wait_is_woken_by_a_delivery() -> None:
    store = Store()
    inbox = store.generate()

    async def scenario() -> int:
        waiting = asyncio.create_task(store.wait(inbox.address, timeout=30))
        await asyncio.sleep(0.01)
        assert not waiting.done()
        store.deliver("", [inbox.address], RAW)
        return len(await asyncio.wait_for(waiting, 1))

    assert asyncio.run(scenario()) == 1


def test_wait_with_a_cursor_ignores_older_messages() -> None:
    store = Store()
    inbox = store.generate()
    (old,) = store.deliver("", [inbox.address], RAW)

    async def scenario() -> list[str]:
        waiting = asyncio.create_task(store.wait(inbox.address, after=old.id, timeout=30))
        await asyncio.sleep(0.01)
        assert not waiting.done()
        store.deliver("", [inbox.address], RAW)
        return [message.id for message in await asyncio.wait_for(waiting, 1)]

    found = asyncio.run(scenario())
    assert len(found) == 1
    assert found[0] != old.id


def test_wait_times_out_with_nothing() -> None:
    store = Store()
    inbox = store.generate()
    assert asyncio.run(store.wait(inbox.address, timeout=0.05)) == []


def test_delete_ends_a_pending_wait_with_not_found() -> None:
    store = Store()
    inbox = store.generate()

    async def scenario() -> None:
        waiting = asyncio.create_task(store.wait(inbox.address, timeout=30))
        await asyncio.sleep(0.01)
        store.delete(inbox.address)
        await asyncio.wait_for(waiting, 1)

    with pytest.raises(InboxNotFound):
        asyncio.run(scenario())


def test_close_ends_pending_waits_with_what_they_have() -> None:
    store = Store()
    inbox = store.generate()

    async def scenario() -> int:
        waiting = asyncio.create_task(store.wait(inbox.address, timeout=30))
        await asyncio.sleep(0.01)
        store.close()
        return len(await asyncio.wait_for(waiting, 1))

    assert asyncio.run(scenario()) == 0


def test_a_timed_out_wait_leaves_no_waiter_behind() -> None:
    store = Store()
    inbox = store.generate()
    asyncio.run(store.wait(inbox.address, timeout=0.01))
    assert inbox.waiters == set()


def test_an_inbox_keeps_at_most_its_cap_evicting_the_oldest() -> None:
    store = Store(max_messages_per_inbox=3)
    inbox = store.generate()
    for n in range(5):
        store.deliver("", [inbox.address], f"Subject: {n}\r\n\r\n".encode())
    assert [message.raw[9:10] for message in inbox.messages] == [b"2", b"3", b"4"]
    assert store.stats()["evictions"] == 2
    assert store.stats()["messages"] == 3


def test_stored_bytes_are_capped_evicting_the_oldest_overall() -> None:
    store = Store(max_stored_bytes=250)
    first, second = store.generate(), store.generate()
    store.deliver("", [first.address], b"a" * 100)
    store.deliver("", [second.address], b"b" * 100)
    store.deliver("", [second.address], b"c" * 100)
    assert first.messages == []
    assert [message.raw[:1] for message in second.messages] == [b"b", b"c"]
    assert store.stats() == {"inboxes": 2, "messages": 2, "stored_bytes": 200, "evictions": 1}


def test_delete_and_expiry_release_stored_bytes() -> None:
    store = Store()
    inbox = store.generate()
    store.deliver("", [inbox.address], b"x" * 1000)
    assert store.stored_bytes == 1000
    store.delete(inbox.address)
    assert store.stats() == {"inboxes": 0, "messages": 0, "stored_bytes": 0, "evictions": 0}


def test_an_expired_inbox_is_gone_like_a_deleted_one() -> None:
    store = Store(inbox_ttl=0.05)
    inbox = store.generate()
    store.deliver("", [inbox.address], RAW)
    assert inbox.expires_at is not None
    assert 0 < (inbox.expires_at - inbox.created_at).total_seconds() <= 0.06
    time.sleep(0.06)
    assert not store.accepts(inbox.address)
    with pytest.raises(InboxNotFound, match="expired"):
        store.get(inbox.address)
    assert store.stats()["stored_bytes"] == 0


def test_expire_drops_untouched_inboxes_and_ends_their_waits() -> None:
    store = Store()
    short, long = store.generate(ttl=0.05), store.generate(ttl=60)

    async def scenario() -> None:
        waiting = asyncio.create_task(store.wait(short.address, timeout=30))
        await asyncio.sleep(0.06)
        assert store.expire() == 1
        await asyncio.wait_for(waiting, 1)

    with pytest.raises(InboxNotFound):
        asyncio.run(scenario())
    assert store.stats()["inboxes"] == 1
    assert store.accepts(long.address)


@pytest.mark.parametrize("ttl", [0, -1, 8 * 24 * 3600])
def test_ttl_must_be_positive_and_at_most_a_week(ttl: float) -> None:
    with pytest.raises(InvalidRequest, match="ttl"):
        Store().generate(ttl=ttl)
