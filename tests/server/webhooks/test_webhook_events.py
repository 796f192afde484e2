"""What a webhook hears: a delivery over SMTP or a provider's API, a deletion, and the headers."""

from __future__ import annotations

import uuid

from pytest_tempinbox import TempInboxClient
from pytest_tempinbox.server.inbox_server import InboxServer

from ..providers_support import send_through_sendgrid
from .webhooks_support import Receiver, send


def test_a_delivery_over_smtp_is_posted_with_the_message_s_summary() -> None:
    with (
        Receiver() as receiver,
        InboxServer(webhooks=[receiver.url]) as server,
        TempInboxClient(server.api_url) as client,
    ):
        inbox = client.generate()
        send(server, inbox.address, subject="Confirm your account")
        (hit,) = receiver.wait_for(1)
        stored = inbox.wait_for_message()
    event = hit.json()
    assert event["event"] == "message.received"
    assert event["email"] == inbox.address
    assert event["message"]["id"] == stored.id
    assert event["message"]["subject"] == "Confirm your account"
    assert event["message_url"] == f"{server.api_url}/messages/{inbox.address}/{stored.id}"
    assert event["delivered_at"].endswith("Z")


def test_the_summary_is_there_when_the_inbox_is_deleted_before_the_event_is_sent() -> None:
    with (
        Receiver() as receiver,
        InboxServer(webhooks=[receiver.url]) as server,
        TempInboxClient(server.api_url) as client,
    ):
        inbox = client.generate()
        send(server, inbox.address, subject="Gone at once")
        inbox.delete()  # as a test's teardown does, before the event may have gone
        hits = receiver.wait_for(2)
    (received,) = [hit.json() for hit in hits if hit.json()["event"] == "message.received"]
    assert received["message"]["subject"] == "Gone at once"


def test_the_summary_leaves_the_bodies_out() -> None:
    with (
        Receiver() as receiver,
        InboxServer(webhooks=[receiver.url]) as server,
        TempInboxClient(server.api_url) as client,
    ):
        inbox = client.generate()
        send(server, inbox.address)
        (hit,) = receiver.wait_for(1)
    assert "text" not in hit.json()["message"]
    assert "html" not in hit.json()["message"]


def test_a_send_through_a_provider_s_api_is_posted_too() -> None:
    with (
        Receiver() as receiver,
        InboxServer(webhooks=[receiver.url]) as server,
        TempInboxClient(server.api_url) as client,
    ):
        inbox = client.generate()
        send_through_sendgrid(server, inbox.address, "Through SendGrid")
        (hit,) = receiver.wait_for(1)
    assert hit.json()["message"]["subject"] == "Through SendGrid"
    assert hit.json()["message"]["provider"]["name"] == "sendgrid"


def test_each_recipient_s_copy_is_one_event() -> None:
    with (
        Receiver() as receiver,
        InboxServer(webhooks=[receiver.url]) as server,
        TempInboxClient(server.api_url) as client,
    ):
        first, second = client.generate(), client.generate()
        send(server, first.address)
        send(server, second.address)
        hits = receiver.wait_for(2)
    assert sorted(hit.json()["email"] for hit in hits) == sorted([first.address, second.address])


def test_deleting_an_inbox_is_posted() -> None:
    with (
        Receiver() as receiver,
        InboxServer(webhooks=[receiver.url]) as server,
        TempInboxClient(server.api_url) as client,
    ):
        inbox = client.generate()
        send(server, inbox.address)
        receiver.wait_for(1)
        inbox.delete()
        hit = receiver.wait_for(2)[1]
    assert hit.headers["x-tempinbox-event"] == "inbox.deleted"
    assert hit.json()["event"] == "inbox.deleted"
    assert hit.json()["email"] == inbox.address
    assert hit.json()["purged"] == 1


def test_every_webhook_hears_every_event() -> None:
    with (
        Receiver() as first,
        Receiver() as second,
        InboxServer(webhooks=[first.url, second.url]) as server,
        TempInboxClient(server.api_url) as client,
    ):
        inbox = client.generate()
        send(server, inbox.address)
        (one,), (other,) = first.wait_for(1), second.wait_for(1)
    assert one.body == other.body
    assert one.headers["x-tempinbox-delivery"] != other.headers["x-tempinbox-delivery"]


def test_the_request_says_what_it_is_and_where_it_goes() -> None:
    with (
        Receiver() as receiver,
        InboxServer(webhooks=[receiver.url + "?source=tempinbox"]) as server,
        TempInboxClient(server.api_url) as client,
    ):
        send(server, client.generate().address)
        (hit,) = receiver.wait_for(1)
    assert hit.path == "/hooks/tempinbox?source=tempinbox"
    assert hit.headers["content-type"] == "application/json"
    assert hit.headers["user-agent"].startswith("pytest-tempinbox/")
    assert hit.headers["x-tempinbox-event"] == "message.received"
    assert uuid.UUID(hit.headers["x-tempinbox-delivery"])
    assert hit.headers["x-tempinbox-timestamp"].isdigit()


def test_without_a_secret_nothing_is_signed() -> None:
    with (
        Receiver() as receiver,
        InboxServer(webhooks=[receiver.url]) as server,
        TempInboxClient(server.api_url) as client,
    ):
        send(server, client.generate().address)
        (hit,) = receiver.wait_for(1)
    assert "x-tempinbox-signature" not in hit.headers


def test_the_secret_is_never_sent() -> None:
    secret = "whsec-never-on-the-wire"
    with (
        Receiver() as receiver,
        InboxServer(webhooks=[receiver.url], webhook_secret=secret) as server,
        TempInboxClient(server.api_url) as client,
    ):
        send(server, client.generate().address)
        (hit,) = receiver.wait_for(1)
    assert secret not in repr(hit.headers)
    assert secret.encode() not in hit.body
    assert secret not in repr(server.config)
