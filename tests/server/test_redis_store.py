"""What only the Redis store does: several processes on one Redis, and Redis going away.

Two :class:`RedisStore` objects on one real ``redis-server`` stand for two
server processes: they share nothing but Redis. Both are served on one loop
(``store_support.py``), as a server serves its store: the SMTP side's members
go through their pipelined connections. The behaviour every store holds
to is in ``test_store_contract.py``, which runs against Redis too.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from pytest_tempinbox.errors import InboxNotFound, StoreUnavailable
from pytest_tempinbox.models import Fault

from ..redis_process import RedisProcess
from .store_support import ServingLoop, accepts, deliver, run, take_fault

redis = pytest.importorskip("redis", reason="the redis extra is not installed")

from pytest_tempinbox.server.store.redis.store import RedisStore  # noqa: E402

if TYPE_CHECKING:
    from redis import Redis

RAW = b"Subject: hi\r\nFrom: App <app@example.test>\r\n\r\nyour code is 424242\r\n"


@pytest.fixture
def stores(redis_url: str) -> Iterator[tuple[RedisStore, RedisStore]]:
    """Two stores on one Redis, as two server processes would have."""
    serving = ServingLoop()
    one = serving.serve(RedisStore(redis_url, ["tempinbox.test"]))
    other = serving.serve(RedisStore(redis_url, ["tempinbox.test"]))
    try:
        yield one, other
    finally:
        serving.close()


def test_an_inbox_made_by_one_process_gets_mail_through_another(
    stores: tuple[RedisStore, RedisStore],
) -> None:
    one, other = stores
    inbox = one.generate()
    assert other.get(inbox.address).created_at == inbox.created_at
    assert accepts(other, inbox.address.upper())
    (stored,) = deliver(other, "app@example.test", [inbox.address], RAW)
    (read,) = one.messages(inbox.address)
    assert (read.id, read.raw, read.envelope, read.received_at) == (
        stored.id,
        RAW,
        stored.envelope,
        stored.received_at,
    )
    assert (
        one.stats()
        == other.stats()
        == {
            "inboxes": 1,
            "messages": 1,
            "stored_bytes": len(RAW),
            "evictions": 0,
        }
    )


def test_generated_addresses_and_ids_are_unique_and_sorted_across_processes(
    stores: tuple[RedisStore, RedisStore],
) -> None:
    one, other = stores
    addresses = {store.generate().address for store in stores for _ in range(100)}
    assert len(addresses) == 200
    inbox = one.generate()
    delivered = [m.id for n in range(40) for m in deliver(stores[n % 2], "", [inbox.address], RAW)]
    assert delivered == sorted(delivered)
    assert [m.id for m in other.messages(inbox.address)] == delivered


def test_a_message_is_parsed_once_for_every_process(
    stores: tuple[RedisStore, RedisStore],
) -> None:
    one, other = stores
    inbox = one.generate()
    deliver(one, "", [inbox.address], RAW)
    (first,) = one.messages(inbox.address)
    assert not first.is_parsed
    parsed = first.json  # saved to Redis without waiting: there a moment later
    deadline = time.monotonic() + 5
    while not (again := other.messages(inbox.address)[0]).is_parsed:
        assert time.monotonic() < deadline, "the parse never reached Redis"
        time.sleep(0.001)
    assert again.json == parsed
    assert other.message(inbox.address, again.id).json == parsed


def test_a_wait_wakes_within_milliseconds_of_another_process_delivering(
    stores: tuple[RedisStore, RedisStore], capsys: pytest.CaptureFixture[str]
) -> None:
    one, other = stores
    inbox = one.generate()

    async def scenario() -> list[float]:
        await one.start()
        latencies = []
        for _ in range(50):
            cursor = one.cursor(inbox.address)
            following = asyncio.create_task(one.follow(inbox.address, cursor, 10))
            await asyncio.sleep(0.002)
            assert not following.done()
            started = time.perf_counter()
            await other.deliver("", [inbox.address], RAW)
            assert len(await asyncio.wait_for(following, 5)) == 1
            latencies.append(time.perf_counter() - started)
        return latencies

    median = statistics.median(run(one, scenario()))
    with capsys.disabled():
        print(f"\nmedian wake latency across processes: {median * 1000:.2f} ms")
    assert median < 0.05


def _publishes(client: Redis) -> int:
    """How many notices Redis has published (its scripts' ``PUBLISH`` calls)."""
    return int(client.info("commandstats").get("cmdstat_publish", {}).get("calls", 0))


def test_a_delivery_is_announced_only_while_a_process_waits_on_the_inbox(
    stores: tuple[RedisStore, RedisStore], redis_url: str
) -> None:
    one, other = stores
    inbox = one.generate()
    watched = f"tempinbox:{{{inbox.address}}}:watched"

    async def scenario() -> int:
        await one.start()
        following = asyncio.create_task(one.follow(inbox.address, one.cursor(inbox.address), 10))
        await asyncio.sleep(0.01)
        assert not following.done()
        await other.deliver("", [inbox.address], RAW)
        return len(await asyncio.wait_for(following, 5))

    with redis.Redis.from_url(redis_url) as client:
        before = _publishes(client)
        for _ in range(3):
            deliver(other, "", [inbox.address], RAW)
        assert _publishes(client) == before  # nobody waits: no process hears of them
        assert not client.exists(watched)
        assert run(one, scenario()) == 1  # woken by the notice from the other process
        assert _publishes(client) == before + 1
        assert 10_000 < client.pttl(watched) <= 11_000  # the wait's 10 s and a margin
        one.delete(inbox.address)
        assert not client.exists(watched)


def _scripts_run(client: Redis) -> int:
    """How many scripts Redis has run (``EVALSHA`` and ``EVAL`` calls)."""
    stats = client.info("commandstats")
    return sum(
        int(stats.get(f"cmdstat_{name}", {}).get("calls", 0)) for name in ("evalsha", "eval")
    )


def test_an_event_stream_costs_redis_two_reads_an_event(
    stores: tuple[RedisStore, RedisStore], redis_url: str
) -> None:
    one, _ = stores
    inbox = one.generate()

    async def stream(cursor: str, events: int) -> str:
        loop = asyncio.get_running_loop()
        for _ in range(events):
            # The delivery comes while the stream waits, as a sender's would.
            loop.call_later(0.05, lambda: loop.create_task(one.deliver("", [inbox.address], RAW)))
            found = await one.follow(inbox.address, cursor, 5.0)
            assert len(found) == 1
            cursor = found[-1].id
        return cursor

    cursor = run(one, stream(one.cursor(inbox.address), 1))  # Redis has the scripts now
    with redis.Redis.from_url(redis_url) as client:
        before = _scripts_run(client)
        run(one, stream(cursor, 5))
        # Each event: its delivery, the watched read the stream waits on, and the
        # read that finds it; a stream's follow read three times an event before
        # (20 scripts). A delivery's notice that comes in after the next wait began
        # wakes it for one more read, seldom.
        assert 3 * 5 <= _scripts_run(client) - before <= 3 * 5 + 2


def test_a_wait_read_past_its_deadline_still_reads(
    stores: tuple[RedisStore, RedisStore], redis_url: str
) -> None:
    one, _ = stores
    inbox = one.generate()
    # A wait woken late reads once more with its time already up (a negative watch).
    _, _, found = one._snapshot(inbox.address, "all", "", inbox.address, watch=-1.0)
    assert found == []
    with redis.Redis.from_url(redis_url) as client:
        assert 0 < client.pttl(f"tempinbox:{{{inbox.address}}}:watched") <= 1_000


def test_a_delete_in_one_process_ends_a_wait_in_another(
    stores: tuple[RedisStore, RedisStore],
) -> None:
    one, other = stores
    inbox = one.generate()

    async def scenario() -> None:
        waiting = asyncio.create_task(one.wait(inbox.address, timeout=30))
        await asyncio.sleep(0.05)
        assert not waiting.done()
        other.delete(inbox.address)
        await asyncio.wait_for(waiting, 1)

    with pytest.raises(InboxNotFound):
        run(one, scenario())


def test_an_expiry_in_redis_ends_a_wait_without_a_sweep(
    stores: tuple[RedisStore, RedisStore],
) -> None:
    one, other = stores
    inbox = other.generate(ttl=0.3)
    client = redis.Redis.from_url(one.url)
    assert 0 < client.pttl(f"tempinbox:{{{inbox.address}}}:inbox") <= 300

    async def scenario() -> None:
        await asyncio.wait_for(one.wait(inbox.address, timeout=30), 2)

    started = time.monotonic()
    with pytest.raises(InboxNotFound):
        run(one, scenario())
    assert time.monotonic() - started < 1
    assert not accepts(other, inbox.address)
    assert client.exists(f"tempinbox:{{{inbox.address}}}:inbox") == 0
    client.close()


def test_a_fault_added_through_one_process_strikes_in_another(
    stores: tuple[RedisStore, RedisStore],
) -> None:
    one, other = stores
    inbox = one.generate()

    async def scenario() -> None:
        await other.start()
        assert not other.faults_added
        one.add_fault(inbox.address, Fault(stage="rcpt", code=451, message="4.0.0 x", times=2))
        for _ in range(100):
            if other.faults_added:
                return
            await asyncio.sleep(0.01)

    run(one, scenario())
    assert other.faults_added
    assert take_fault(other, inbox.address, "rcpt") == Fault(
        stage="rcpt", code=451, message="4.0.0 x", times=1
    )
    assert one.pending_faults(inbox.address)[0].times == 1
    # A process started after the fault learns of it at its first RCPT, or at start().
    late, later = RedisStore(one.url), RedisStore(one.url)
    assert accepts(late, inbox.address)
    assert late.faults_added
    asyncio.run(later.start())
    assert later.faults_added
    late.close()
    later.close()


def test_refusals_are_shared(stores: tuple[RedisStore, RedisStore]) -> None:
    one, other = stores
    one.refusals.record("alice@tempinbox.test", "550 no", "127.0.0.1", "client")
    (refusal,) = other.refusals.find(similar_to="alice@tempinbox.tst")
    assert (refusal.address, refusal.client_ip, refusal.helo) == (
        "alice@tempinbox.test",
        "127.0.0.1",
        "client",
    )


def test_an_inbox_keys_share_one_cluster_slot(stores: tuple[RedisStore, RedisStore]) -> None:
    from redis.crc import key_slot

    one, _ = stores
    inbox = one.generate(ttl=60)
    deliver(one, "", [inbox.address], RAW)
    one.add_fault(inbox.address, Fault(stage="data", disconnect=True))
    client = redis.Redis.from_url(one.url)
    keys = client.keys(f"tempinbox:{{{inbox.address}}}:*")
    assert len(keys) == 5
    assert len({key_slot(key) for key in keys}) == 1
    client.close()


def test_close_ends_waits_and_stops_listening(stores: tuple[RedisStore, RedisStore]) -> None:
    one, _ = stores
    inbox = one.generate()

    async def scenario() -> list[object]:
        waiting = asyncio.create_task(one.wait(inbox.address, timeout=30))
        await asyncio.sleep(0.05)
        subscriptions = asyncio.all_tasks() - {asyncio.current_task(), waiting}
        assert len(subscriptions) == 2  # one's and the other's
        one.close()
        found = await asyncio.wait_for(waiting, 1)
        await asyncio.sleep(0.01)
        left = asyncio.all_tasks() - {asyncio.current_task()}
        assert len(left) == 1
        assert left < subscriptions  # the other store listens on
        return list(found)

    assert run(one, scenario()) == []


def test_redis_down_raises_store_unavailable_and_recovers(
    redis_process: RedisProcess, stores: tuple[RedisStore, RedisStore]
) -> None:
    one, other = stores
    inbox = one.generate()

    async def scenario() -> None:
        waiting = asyncio.create_task(one.wait(inbox.address, timeout=30))
        await asyncio.sleep(0.05)
        redis_process.stop()
        with pytest.raises(StoreUnavailable):
            await asyncio.wait_for(waiting, 5)
        for call in (
            lambda: one.get(inbox.address),
            lambda: other.generate(),
            lambda: other.stats(),
            lambda: other.check(),
            lambda: other.refusals.find(),
        ):
            with pytest.raises(StoreUnavailable):
                call()
        for round_trip in (
            one.accepts(inbox.address),
            one.take_fault(inbox.address, "rcpt"),
            other.deliver("", [inbox.address], RAW),
        ):
            with pytest.raises(StoreUnavailable):
                await round_trip
        redis_process.start()  # empty again: no persistence here
        again = other.generate(address=inbox.address)
        waiting = asyncio.create_task(one.wait(again.address, timeout=30))
        await asyncio.sleep(0.3)  # the listener subscribes again after its backoff
        assert not waiting.done()
        await other.deliver("", [again.address], RAW)
        assert len(await asyncio.wait_for(waiting, 2)) == 1

    run(one, scenario())


def test_an_address_no_inbox_can_have_is_refused_without_asking_redis(
    stores: tuple[RedisStore, RedisStore],
) -> None:
    one, _ = stores
    undecodable = "\udcff@tempinbox.test"  # what an SMTP client's stray byte becomes
    assert not accepts(one, undecodable)
    assert take_fault(one, undecodable, "rcpt") is None
    assert deliver(one, "", [undecodable], RAW) == []
    with pytest.raises(InboxNotFound):
        one.messages("d\u00e9j\u00e0@tempinbox.test")


def test_a_full_redis_is_a_store_unavailable_not_a_lost_message(
    stores: tuple[RedisStore, RedisStore], redis_url: str
) -> None:
    one, _ = stores
    inbox = one.generate()
    with redis.Redis.from_url(redis_url) as client:
        client.config_set("maxmemory-policy", "noeviction")
        client.config_set("maxmemory", 1)  # every write is refused: Redis is "full"
        try:
            with pytest.raises(StoreUnavailable, match="Redis does not answer"):
                deliver(one, "app@example.test", [inbox.address], RAW)
        finally:
            client.config_set("maxmemory", 0)
    (stored,) = deliver(one, "app@example.test", [inbox.address], RAW)
    assert [message.id for message in one.messages(inbox.address)] == [stored.id]


def _rcpt_lookups(client: Redis) -> int:
    """How many times Redis was asked whether an inbox is live (``PTTL``, ``EXISTS``)."""
    stats = client.info("commandstats")
    return sum(int(stats.get(f"cmdstat_{name}", {}).get("calls", 0)) for name in ("pttl", "exists"))


def test_rcpt_asks_redis_once_about_an_inbox_and_never_about_its_own(
    stores: tuple[RedisStore, RedisStore], redis_url: str
) -> None:
    one, other = stores
    mine, theirs = one.generate(), other.generate()
    with redis.Redis.from_url(redis_url) as client:
        before = _rcpt_lookups(client)
        assert all(accepts(one, mine.address) for _ in range(20))
        assert _rcpt_lookups(client) == before
        assert all(accepts(one, theirs.address.upper()) for _ in range(20))
        assert _rcpt_lookups(client) == before + 1


def test_a_delete_through_another_process_is_refused_at_rcpt_here(
    stores: tuple[RedisStore, RedisStore],
) -> None:
    one, other = stores
    inbox = one.generate()
    assert accepts(one, inbox.address)
    other.delete(inbox.address)
    deadline = time.monotonic() + 5
    while accepts(one, inbox.address):  # until the notice arrives: a millisecond or so
        assert time.monotonic() < deadline, "the delete never reached the other process"
        time.sleep(0.001)
    assert deliver(one, "", [inbox.address], RAW) == []


def test_an_inbox_gone_without_a_notice_is_refused_at_data_then_at_rcpt(
    stores: tuple[RedisStore, RedisStore], redis_url: str
) -> None:
    one, _ = stores
    inbox = one.generate()
    with redis.Redis.from_url(redis_url) as client:  # as FLUSHALL would: nobody is told
        client.delete(f"tempinbox:{{{inbox.address}}}:inbox")
    assert accepts(one, inbox.address)  # still vouched for
    assert deliver(one, "", [inbox.address], RAW) == []  # nothing stored for it
    assert not accepts(one, inbox.address)  # and no longer vouched for


def test_an_inbox_about_to_expire_is_asked_about_again(
    stores: tuple[RedisStore, RedisStore],
) -> None:
    one, _ = stores
    inbox = one.generate(ttl=0.05)  # within the margin: never vouched for
    assert accepts(one, inbox.address)
    time.sleep(0.06)
    assert not accepts(one, inbox.address)
