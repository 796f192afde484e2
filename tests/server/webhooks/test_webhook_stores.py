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
