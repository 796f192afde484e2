"""Webhooks on each store; on Redis, the server that took a delivery alone tells of it."""

from __future__ import annotations

import pytest

from pytest_tempinbox import TempInboxClient
from pytest_tempinbox.server.inbox_server import InboxServer

from .webhooks_support import Receiver, send


@pytest.mark.parametrize("store", ["memory", "redis"])
def test_a_delivery_and_a_deletion_are_posted_on_each_store(
    request: pytest.FixtureRequest, store: str
) -> None:
    if store == "redis":
        store = request.getfixturevalue("redis_url")
    with (
        Receiver() as receiver,
        InboxServer(webhooks=[receiver.url], store=store) as server,
        TempInboxClient(server.api_url) as client,
    ):
        inbox = client.generate()
        send(server, inbox.address)
        receiver.wait_for(1)
        inbox.delete()
        hits = receiver.wait_for(2)
    assert [hit.json()["event"] for hit in hits] == ["message.received", "inbox.deleted"]
    assert {hit.json()["email"] for hit in hits} == {inbox.address}


def test_two_servers_on_one_redis_post_each_delivery_once(redis_url: str) -> None:
    with (
        Receiver() as receiver,
        InboxServer(webhooks=[receiver.url], store=redis_url) as first,
        InboxServer(webhooks=[receiver.url], store=redis_url) as second,
        TempInboxClient(first.api_url) as client,
    ):
        inbox = client.generate()
        send(first, inbox.address, subject="Through the first")
        send(second, inbox.address, subject="Through the second")
        receiver.wait_for(2)
        hits = receiver.quiet_for(0.5)
    subjects = sorted(hit.json()["message"]["subject"] for hit in hits)
    assert subjects == ["Through the first", "Through the second"]
    assert {hit.json()["message_url"].partition("/api")[0] for hit in hits} == {
        first.api_url.removesuffix("/api"),
        second.api_url.removesuffix("/api"),
    }


@pytest.mark.parametrize("store", ["memory", "redis"])
def test_the_deliveries_that_came_while_the_endpoint_was_down_are_posted_when_it_answers(
    request: pytest.FixtureRequest, store: str
) -> None:
    # While every endpoint is down, a delivery's copies wait as they are; their
    # events are made when the endpoint answers again, and each is posted once.
    if store == "redis":
        store = request.getfixturevalue("redis_url")
    with (
        Receiver([503]) as receiver,
        InboxServer(webhooks=[receiver.url], store=store) as server,
        TempInboxClient(server.api_url) as client,
    ):
        assert server.webhooks is not None
        server.webhooks.first_retry = 1.0  # down for 0.5 to 1.5 s after the 503
        inbox = client.generate()
        send(server, inbox.address, subject="Mail 0")
        receiver.wait_for(1)  # the 503: the endpoint is down
        for number in range(1, 6):
            send(server, inbox.address, subject=f"Mail {number}")
        hits = receiver.wait_for(7)[1:]
        stored = inbox.wait_for_messages(6)
        assert receiver.quiet_for(0.2)[7:] == []
    events = [hit.json() for hit in hits]
    assert events[0]["message"]["subject"] == "Mail 0"  # the one tried again, alone
    # The others go at once, several in flight: in any order.
    subjects = sorted(event["message"]["subject"] for event in events)
    assert subjects == [f"Mail {number}" for number in range(6)]
    assert sorted(event["message"]["id"] for event in events) == [message.id for message in stored]
    assert all(event["delivered_at"].endswith("Z") for event in events)
    assert len({hit.headers["x-tempinbox-delivery"] for hit in hits}) == 6
