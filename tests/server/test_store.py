"""Unit tests of what only the in-memory store does: its records, its waiters, without sockets.

The behaviour every store shares is in ``test_store_contract.py``.
"""

from __future__ import annotations

import asyncio
import threading

import pytest

from pytest_tempinbox.errors import InboxNotFound, InvalidAddress, InvalidRequest
from pytest_tempinbox.server.store.addresses import normalize_address
from pytest_tempinbox.server.store.memory.inbox_record import InboxRecord
from pytest_tempinbox.server.store.memory.store import Store

from .store_support import deliver

RAW = b"Subject: hi\r\n\r\nbody\r\n"


@pytest.mark.parametrize(
    "text", ["no-at-sign", "@example.test", "user@", "a" * 250 + "@x.test", "a b@x.test", "a\0@x"]
)
def test_strings_that_are_not_addresses_are_invalid(text: str) -> None:
    with pytest.raises(InvalidAddress):
        normalize_address(text)


def test_a_timed_out_wait_leaves_no_waiter_behind() -> None:
    store = Store()
    inbox = store.generate()
    asyncio.run(store.wait(inbox.address, timeout=0.01))
    assert inbox.waiters == set()


def test_lookups_hand_out_the_stores_own_records() -> None:
    store = Store()
    inbox = store.generate()
    assert isinstance(inbox, InboxRecord)
    assert store.get(inbox.address.upper()) is inbox
    (stored,) = deliver(store, "", [inbox.address], RAW)
    assert store.message(inbox.address, stored.id) is stored
    assert inbox.messages == [stored]
    assert inbox.by_id == {stored.id: stored}
    assert repr(inbox) == f"InboxRecord(address={inbox.address!r}, messages=1)"


def test_a_record_reads_after_a_message_or_since_any_id() -> None:
    store = Store()
    inbox, other = store.generate(), store.generate()
    for _ in range(3):
        deliver(store, "", [inbox.address], RAW)
    (elsewhere,) = deliver(store, "", [other.address], RAW)
    first, second, third = inbox.messages
    assert inbox.messages_after(first.id) == [second, third]
    assert inbox.messages_after(third.id) == []
    assert inbox.messages_after(None) == [first, second, third]
    with pytest.raises(InvalidRequest, match="after"):
        inbox.messages_after(elsewhere.id)
    assert inbox.messages_since("") == [first, second, third]
    assert inbox.messages_since(second.id) == [third]
    assert inbox.messages_since(elsewhere.id) == []


def test_stored_bytes_and_the_length_follow_the_inboxes() -> None:
    store = Store()
    inbox = store.generate()
    deliver(store, "", [inbox.address], b"x" * 1000)
    assert (store.stored_bytes, len(store)) == (1000, 1)
    store.delete(inbox.address)
    assert (store.stored_bytes, len(store)) == (0, 0)


def test_a_delete_in_another_thread_wakes_a_wait_on_the_loop() -> None:
    store = Store()
    inbox = store.generate()

    async def scenario() -> None:
        waiting = asyncio.create_task(store.wait(inbox.address, timeout=30))
        await asyncio.sleep(0.01)
        assert len(inbox.waiters) == 1
        deleting = threading.Thread(target=store.delete, args=(inbox.address,))
        deleting.start()
        deleting.join()
        assert inbox.waiters == set()
        with pytest.raises(InboxNotFound, match="deleted or expired"):
            await asyncio.wait_for(waiting, 1)

    asyncio.run(scenario())


def test_waking_the_waiter_of_a_closed_loop_is_harmless() -> None:
    store = Store()
    inbox = store.generate()
    loop = asyncio.new_event_loop()
    inbox.waiters.add(loop.create_future())
    loop.close()
    store.close()  # wakes every inbox: the closed loop's waiter is skipped
    assert inbox.waiters == set()
