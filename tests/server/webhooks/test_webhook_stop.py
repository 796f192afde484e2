"""A stopping server sends what is on its way to an endpoint that answers, for a grace at most."""

from __future__ import annotations

import logging
import time

import pytest

from pytest_tempinbox import TempInboxClient
from pytest_tempinbox.server.inbox_server import InboxServer

from .webhooks_support import Receiver, closed_port_url, send


def test_an_event_on_its_way_when_the_server_stops_is_still_sent() -> None:
    with Receiver(delay=0.5) as receiver:  # the POST is in flight when the server stops
        server = InboxServer(webhooks=[receiver.url])
        with server, TempInboxClient(server.api_url) as client:
            send(server, client.generate().address, subject="Last words")
        assert server.webhooks is not None
        assert server.webhooks.metrics()["sent"] == 1
        (hit,) = receiver.wait_for(1)
    assert hit.json()["message"]["subject"] == "Last words"


def test_an_endpoint_slower_than_the_grace_does_not_hold_the_stop() -> None:
    with Receiver(delay=30) as receiver:
        server = InboxServer(webhooks=[receiver.url])
        assert server.webhooks is not None
        server.webhooks.stop_grace = 0.5
        with server, TempInboxClient(server.api_url) as client:
            send(server, client.generate().address)
            time.sleep(0.1)  # the POST is on its way
            stopping = time.monotonic()
        stopped_in = time.monotonic() - stopping
    assert stopped_in < 5  # the grace and the attempt's cancel, not the attempt's 10 s timeout
    assert server.webhooks.metrics()["sent"] == 0


def test_an_endpoint_that_fails_as_the_server_stops_is_said_to_lose_its_events(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="pytest_tempinbox.server.webhooks.sender")
    with Receiver(statuses=[503, 503, 503], delay=0.3) as receiver:
        server = InboxServer(webhooks=[receiver.url])
        with server, TempInboxClient(server.api_url) as client:
            inbox = client.generate()
            for number in range(3):  # three POSTs in flight when the server stops
                send(server, inbox.address, subject=f"Mail {number}")
    said = [record.getMessage() for record in caplog.records if "fails" in record.getMessage()]
    assert len(said) == 1, said
    assert "its waiting events are dropped, the server stopping" in said[0]
    assert "tried again" not in said[0]


def test_an_endpoint_that_is_down_is_not_tried_again_when_the_server_stops() -> None:
    server = InboxServer(webhooks=[closed_port_url()])
    assert server.webhooks is not None
    server.webhooks.stop_grace = 30  # were its events waited for, the stop would take this
    server.webhooks.first_retry = 60  # the first failure marks it down for a minute
    with server, TempInboxClient(server.api_url) as client:
        inbox = client.generate()
        for number in range(3):
            send(server, inbox.address, subject=f"Mail {number}")
        deadline = time.monotonic() + 10
        while server.webhooks.metrics()["queued"] < 3 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert server.webhooks.metrics()["queued"] == 3  # waiting for the endpoint
        stopping = time.monotonic()
    assert time.monotonic() - stopping < 10
