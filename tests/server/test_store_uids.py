"""UIDs, UIDVALIDITY and deleting single messages: what IMAP and POP3 readers need of a store.

Run against the memory store and the Redis store (a real ``redis-server``,
skipped where it is not installed), as ``test_store_contract.py`` runs the rest.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pytest_tempinbox.errors import InboxNotFound
from pytest_tempinbox.server.store.memory.store import Store
from pytest_tempinbox.server.store.protocol import InboxStore

from .store_support import ServingLoop, deliver

RAW = b"Subject: hi\r\n\r\nbody\r\n"


@pytest.fixture(params=["memory", "redis"])
def store(request: pytest.FixtureRequest) -> Iterator[InboxStore]:
    """An empty store of each backend, served on a loop of its own."""
    serving = ServingLoop()
    made: InboxStore
    if request.param == "memory":
        made = Store(["tempinbox.test"])
    else:
        from pytest_tempinbox.server.store.redis.store import RedisStore

        made = RedisStore(request.getfixturevalue("redis_url"), ["tempinbox.test"])
    yield serving.serve(made)
    serving.close()


def test_uids_count_from_one_in_each_inbox(store: InboxStore) -> None:
    one, other = store.generate(), store.generate()
    first = deliver(store, "", [one.address, other.address], RAW)
    second = deliver(store, "", [one.address], RAW)
    assert [message.uid for message in first] == [1, 1]
    assert [message.uid for message in second] == [2]
    assert [message.uid for message in store.messages(one.address)] == [1, 2]
    assert store.message(one.address, second[0].id).uid == 2


def test_uids_are_never_reused_after_a_delete_or_an_eviction(store: InboxStore) -> None:
    inbox = store.generate()
    delivered = [deliver(store, "", [inbox.address], RAW)[0] for _ in range(3)]
    assert store.delete_messages(inbox.address, [delivered[2].id]) == 1
    (fourth,) = deliver(store, "", [inbox.address], RAW)
    assert fourth.uid == 4
    assert [message.uid for message in store.messages(inbox.address)] == [1, 2, 4]


def test_delete_messages_removes_only_those_it_names(store: InboxStore) -> None:
    inbox = store.generate()
    a, b, c = (deliver(store, "", [inbox.address], RAW)[0] for _ in range(3))
    assert store.delete_messages(inbox.address, [a.id, c.id, "no-such-id", a.id + ":e"]) == 2
    assert [message.id for message in store.messages(inbox.address)] == [b.id]
    assert store.delete_messages(inbox.address, [a.id]) == 0


def test_deleted_messages_no_longer_count_in_the_stats(store: InboxStore) -> None:
    inbox = store.generate()
    a, _ = (deliver(store, "", [inbox.address], RAW)[0] for _ in range(2))
    store.delete_messages(inbox.address, [a.id])
    stats = store.stats()
    assert (stats["messages"], stats["stored_bytes"], stats["evictions"]) == (1, len(RAW), 0)


def test_delete_messages_of_no_inbox_is_not_found(store: InboxStore) -> None:
    with pytest.raises(InboxNotFound):
        store.delete_messages("nobody@tempinbox.test", ["x"])


def test_uid_validity_is_the_creation_second_or_later(store: InboxStore) -> None:
    inbox = store.generate()
    validity = store.uid_validity(inbox.address)
    assert int(inbox.created_at.timestamp()) - 1 <= validity < 2**32
    assert store.uid_validity(inbox.address.upper()) == validity


def test_an_inbox_made_again_at_its_address_has_a_new_uid_validity(store: InboxStore) -> None:
    address = "fixed@tempinbox.test"
    store.generate(address=address)
    before = store.uid_validity(address)
    store.delete(address)
    store.generate(address=address)
    assert store.uid_validity(address) > before
    (message,) = deliver(store, "", [address], RAW)
    assert message.uid == 1


def test_uid_validity_of_no_inbox_is_not_found(store: InboxStore) -> None:
    with pytest.raises(InboxNotFound):
        store.uid_validity("nobody@tempinbox.test")


def test_uid_next_is_one_when_the_inbox_is_new(store: InboxStore) -> None:
    assert store.uid_next(store.generate().address) == 1


def test_uid_next_does_not_go_down_when_the_newest_message_is_deleted(store: InboxStore) -> None:
    inbox = store.generate()
    delivered = [deliver(store, "", [inbox.address], RAW)[0] for _ in range(3)]
    store.delete_messages(inbox.address, [delivered[2].id])
    assert store.uid_next(inbox.address) == 4
    store.delete_messages(inbox.address, [message.id for message in delivered])
    assert store.uid_next(inbox.address.upper()) == 4


def test_uid_next_of_no_inbox_is_not_found(store: InboxStore) -> None:
    with pytest.raises(InboxNotFound):
        store.uid_next("nobody@tempinbox.test")
