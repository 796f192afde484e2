"""The event stream of an inbox (Server-Sent Events), read over real sockets."""

from __future__ import annotations

import asyncio
import json
import smtplib
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from pytest_tempinbox.client.inbox import Inbox
from pytest_tempinbox.errors import InboxNotFound, InvalidRequest, TooManyStreams
from pytest_tempinbox.server.api.events import EventStream, StreamSlots, stream_cursor
from pytest_tempinbox.server.inbox_server import InboxServer
from pytest_tempinbox.server.store.memory.store import Store

from ..helpers import CLIENT_NAME, TIMER_SLACK, make_message, record, send
from .events_support import Events
from .providers_support import send_through_sendgrid

TIMEOUT = 10.0
PROBLEM_KEYS = {"type", "title", "status", "detail", "code"}


@pytest.fixture
def open_stream(http: requests.Session, api: str) -> Iterator[Any]:
    """Opens event streams of the session's server; closes them all at teardown."""
    streams: list[Events] = []

    def opener(address: str, **options: Any) -> Events:
        events = Events(http, f"{api}/events/{address}", **options)
        streams.append(events)
        return events

    yield opener
    for events in streams:
        events.close()


@pytest.fixture(scope="module")
def quick() -> Iterator[InboxServer]:
    """A server of its own whose streams send a heartbeat after 0.2 s of silence."""
    with InboxServer(event_heartbeat=0.2) as server:
        yield server


def deliver(server: InboxServer, to: str, subject: str = "Hello", **headers: str) -> str:
    """Send one message to ``to``; return its id in that inbox."""
    message = make_message(to, subject=subject)
    for name, value in headers.items():
        del message[name]
        message[name] = value
    send(server, message)
    return server.store.messages(to)[-1].id


def streams_open(http: requests.Session, api: str) -> int:
    """How many event streams the server counts open."""
    count: int = http.get(f"{api}/info", timeout=TIMEOUT).json()["stats"]["streams"]
    return count


def wait_until(condition: Any, seconds: float = 5.0) -> bool:
    """Poll ``condition`` until it is true or the time is up; its last value."""
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.02)
    return bool(condition())


def assert_problem(response: requests.Response, status: int, code: str) -> None:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    assert set(response.json()) == PROBLEM_KEYS
    assert response.json()["code"] == code


# --- message events --------------------------------------------------------------------


def test_the_answer_is_an_event_stream(open_stream: Any, address: str) -> None:
    events = open_stream(address)
    assert events.response.status_code == 200
    headers = events.response.headers
    assert headers["content-type"] == "text/event-stream; charset=utf-8"
    assert headers["cache-control"] == "no-store"
    assert headers["x-accel-buffering"] == "no"
    assert "content-length" not in headers


def test_a_delivery_is_a_message_event_with_the_summary(
    server: InboxServer, http: requests.Session, api: str, open_stream: Any, address: str
) -> None:
    events = open_stream(address)
    sent = deliver(server, address, "Your code", From="Ann Example <ann@example.com>")

    id, summary = events.next_message()

    assert id == sent
    message = http.get(f"{api}/messages/{address}/{id}").json()
    assert summary == {
        "id": id,
        "from": {"name": "Ann Example", "email": "ann@example.com"},
        "subject": "Your code",
        "subaddress": None,
        "received_at": message["received_at"],
        "provider": None,
    }
    assert message["from"] == summary["from"]


def test_mail_sent_through_a_providers_api_is_an_event_naming_the_provider(
    provider_server: InboxServer, http: requests.Session, recipient: Inbox
) -> None:
    # With the memory store, then the Redis store.
    events = Events(http, f"{provider_server.api_url}/events/{recipient.address}")
    try:
        send_through_sendgrid(provider_server, recipient.address, "Through SendGrid")
        id, summary = events.next_message()
    finally:
        events.close()

    assert id == recipient.messages()[-1].id
    assert (summary["subject"], summary["provider"]) == ("Through SendGrid", "sendgrid")


def test_a_message_without_from_has_from_null(
    server: InboxServer, open_stream: Any, address: str
) -> None:
    events = open_stream(address)
    with smtplib.SMTP(server.smtp_host, server.smtp_port, local_hostname=CLIENT_NAME) as smtp:
        smtp.sendmail("app@example.com", [address], b"X-Note: no From, no Subject\r\n\r\nx\r\n")
    _, summary = events.next_message()
    assert summary["from"] is None
    assert summary["subject"] == ""


def test_each_delivery_is_one_event_in_order(
    server: InboxServer, open_stream: Any, address: str
) -> None:
    events = open_stream(address)
    sent = [deliver(server, address, f"m{number}") for number in range(5)]
    received = [events.next_message() for _ in sent]
    assert [id for id, _ in received] == sent
    assert [summary["subject"] for _, summary in received] == [f"m{n}" for n in range(5)]


def test_a_stream_starts_with_new_deliveries_only(
    server: InboxServer, open_stream: Any, address: str
) -> None:
    deliver(server, address, "before")
    events = open_stream(address)
    deliver(server, address, "after")
    assert events.next_message()[1]["subject"] == "after"


def test_each_inbox_of_a_transaction_streams_its_own_copy(
    server: InboxServer, open_stream: Any, address: str
) -> None:
    other = server.store.generate().address
    first, second = open_stream(address), open_stream(other)
    send(server, make_message(address), [address, other])
    first_id, _ = first.next_message()
    second_id, _ = second.next_message()
    assert first_id == server.store.messages(address)[0].id
    assert second_id == server.store.messages(other)[0].id
    assert first_id != second_id


def test_a_large_message_is_summarised(server: InboxServer, open_stream: Any, address: str) -> None:
    events = open_stream(address)
    message = make_message(address, subject="Big")
    message.add_attachment(b"x" * 400_000, maintype="application", subtype="octet-stream")
    send(server, message)
    assert events.next_message()[1]["subject"] == "Big"


# --- resuming ---------------------------------------------------------------------------


def test_after_replays_the_later_messages_first(
    server: InboxServer, open_stream: Any, address: str
) -> None:
    sent = [deliver(server, address, f"m{number}") for number in range(3)]
    events = open_stream(address, params={"after": sent[0]})
    assert [events.next_message()[0] for _ in range(2)] == sent[1:]
    later = deliver(server, address, "later")
    assert events.next_message()[0] == later


def test_last_event_id_resumes_and_wins_over_after(
    server: InboxServer, open_stream: Any, address: str
) -> None:
    sent = [deliver(server, address, f"m{number}") for number in range(3)]
    events = open_stream(address, params={"after": sent[0]}, headers={"Last-Event-ID": sent[1]})
    assert events.next_message()[0] == sent[2]


def test_an_empty_last_event_id_is_none(
    server: InboxServer, open_stream: Any, address: str
) -> None:
    sent = [deliver(server, address, f"m{number}") for number in range(2)]
    events = open_stream(address, params={"after": sent[0]}, headers={"Last-Event-ID": ""})
    assert events.next_message()[0] == sent[1]


def test_any_message_id_is_a_point_in_time(
    server: InboxServer, open_stream: Any, address: str
) -> None:
    """An id the inbox does not hold (evicted, say) resumes from its place in time."""
    sent = [deliver(server, address, f"m{number}") for number in range(2)]
    events = open_stream(address, params={"after": "0" * 20})
    assert [events.next_message()[0] for _ in range(2)] == sent


def test_the_viewer_contract_list_then_stream_misses_nothing(
    server: InboxServer, http: requests.Session, api: str, open_stream: Any, address: str
) -> None:
    deliver(server, address, "listed")
    listed = http.get(f"{api}/messages/{address}").json()
    deliver(server, address, "between")  # after the list, before the stream
    events = open_stream(address, params={"after": listed[-1]["id"]})
    deliver(server, address, "streamed")
    subjects = [events.next_message()[1]["subject"] for _ in range(2)]
    assert subjects == ["between", "streamed"]


@pytest.mark.parametrize(
    ("params", "headers"),
    [
        ({"after": "nope"}, {}),
        ({"after": ""}, {}),
        ({"after": "0" * 19}, {}),
        ({"after": "0" * 41}, {}),
        ({"after": "A" * 20}, {}),
        ({}, {"Last-Event-ID": "nope"}),
        ({"after": "0" * 20}, {"Last-Event-ID": "x" * 20}),
    ],
)
def test_a_bad_cursor_is_400(
    http: requests.Session,
    api: str,
    address: str,
    params: dict[str, str],
    headers: dict[str, str],
) -> None:
    response = http.get(f"{api}/events/{address}", params=params, headers=headers)
    assert_problem(response, 400, "invalid_request")


# --- the end of a stream ------------------------------------------------------------------


def test_an_unknown_inbox_is_404_before_the_stream(http: requests.Session, api: str) -> None:
    assert_problem(http.get(f"{api}/events/nobody@tempinbox.test"), 404, "inbox_not_found")
    assert_problem(http.get(f"{api}/events/not-an-address"), 400, "invalid_address")


def test_deleting_the_inbox_sends_deleted_and_ends_the_stream(
    server: InboxServer, http: requests.Session, api: str, open_stream: Any, address: str
) -> None:
    events = open_stream(address.upper())
    deliver(server, address)
    events.next_message()
    http.delete(f"{api}/delete/{address}")
    event = events.next()
    assert event is not None
    assert event["event"] == "deleted"
    assert json.loads(event["data"]) == {"email": address}
    assert events.next() is None  # the answer is complete


def test_an_expiring_inbox_sends_deleted(
    http: requests.Session, api: str, open_stream: Any
) -> None:
    address = http.post(f"{api}/generate", json={"ttl": 0.5}).json()["email"]
    events = open_stream(address)
    started = time.monotonic()
    event = events.next()
    assert event is not None
    assert (event["event"], json.loads(event["data"])) == ("deleted", {"email": address})
    assert time.monotonic() - started < 3  # the server drops expired inboxes every second
    assert events.next() is None


def test_heartbeats_keep_an_idle_stream_open(quick: InboxServer, http: requests.Session) -> None:
    address = quick.store.generate().address
    events = Events(http, f"{quick.api_url}/events/{address}", read_timeout=2.0)
    try:
        started = time.monotonic()
        threading.Timer(0.7, quick.store.delete, (address,)).start()
        assert events.next() is not None  # the deleted event
        assert time.monotonic() - started >= 0.7 - TIMER_SLACK
        assert len(events.comments) >= 2
        assert set(events.comments) == {": heartbeat"}
    finally:
        events.close()


def test_a_stream_with_mail_coming_sends_no_heartbeat(
    quick: InboxServer, http: requests.Session
) -> None:
    address = quick.store.generate().address
    events = Events(http, f"{quick.api_url}/events/{address}")
    try:
        deliver(quick, address)
        events.next_message()
        assert events.comments == []
    finally:
        events.close()


def test_a_stopping_server_ends_open_streams_at_once(http: requests.Session) -> None:
    server = InboxServer()
    server.start()
    address = server.store.generate().address
    streams = [Events(http, f"{server.api_url}/events/{address}") for _ in range(3)]
    started = time.monotonic()
    server.stop()
    # uvicorn's graceful shutdown would wait 2 s for a stream that does not end.
    assert time.monotonic() - started < 1.8
    assert not server.running
    for events in streams:
        assert events.next() is None  # ended cleanly, the answer complete
        events.close()


def test_a_client_that_leaves_gives_its_stream_back(
    server: InboxServer, http: requests.Session, api: str, address: str
) -> None:
    before = streams_open(http, api)
    events = Events(http, f"{api}/events/{address}")
    assert streams_open(http, api) == before + 1
    events.close()
    assert wait_until(lambda: streams_open(http, api) == before)
    assert wait_until(lambda: not record(server, address).waiters)


def test_head_answers_the_head_alone(http: requests.Session, api: str, address: str) -> None:
    before = streams_open(http, api)
    response = http.head(f"{api}/events/{address}", timeout=TIMEOUT)
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/event-stream; charset=utf-8"
    assert streams_open(http, api) == before


def test_an_inbox_has_at_most_10_streams(
    http: requests.Session, api: str, open_stream: Any, address: str
) -> None:
    streams = [open_stream(address) for _ in range(10)]
    assert all(events.response.status_code == 200 for events in streams)
    response = http.get(f"{api}/events/{address}")
    assert_problem(response, 429, "too_many_streams")
    streams[0].close()
    assert wait_until(lambda: http.get(f"{api}/info").json()["stats"]["streams"] < 10)
    assert open_stream(address).response.status_code == 200


def test_a_server_has_at_most_100_streams(http: requests.Session) -> None:
    with InboxServer() as server:
        host, port = server.smtp_host, server.api_port
        sockets = []
        try:
            addresses = [server.store.generate().address for _ in range(10)]
            for number in range(100):
                address = addresses[number // 10]
                sock = socket.create_connection((host, port), timeout=TIMEOUT)
                sockets.append(sock)
                sock.sendall(f"GET /api/events/{address} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
                assert sock.recv(64).startswith(b"HTTP/1.1 200 "), number
            other = server.store.generate().address
            assert_problem(http.get(f"{server.api_url}/events/{other}"), 429, "too_many_streams")
        finally:
            for sock in sockets:
                sock.close()
        assert wait_until(lambda: streams_open(http, server.api_url) == 0)


def test_the_stream_caps_are_the_servers_settings(http: requests.Session) -> None:
    with InboxServer(max_streams=3, max_streams_per_inbox=2) as server:
        host, port = server.smtp_host, server.api_port
        first, second = (server.store.generate().address for _ in range(2))
        sockets = []

        def open_stream(address: str) -> None:
            sock = socket.create_connection((host, port), timeout=TIMEOUT)
            sockets.append(sock)
            sock.sendall(f"GET /api/events/{address} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
            assert sock.recv(64).startswith(b"HTTP/1.1 200 "), address

        try:
            open_stream(first)
            open_stream(first)
            over_inbox = http.get(f"{server.api_url}/events/{first}")
            assert_problem(over_inbox, 429, "too_many_streams")
            assert "2 event streams of this inbox" in over_inbox.json()["detail"]
            open_stream(second)
            over_all = http.get(f"{server.api_url}/events/{server.store.generate().address}")
            assert_problem(over_all, 429, "too_many_streams")
            assert "3 event streams are open" in over_all.json()["detail"]
        finally:
            for sock in sockets:
                sock.close()


# --- the parts ---------------------------------------------------------------------------


def test_the_cursor_is_a_message_id_last_event_id_first() -> None:
    assert stream_cursor(None, None) is None
    assert stream_cursor("0" * 20, None) == "0" * 20
    assert stream_cursor("0" * 20, "1" * 20) == "1" * 20
    assert stream_cursor("0" * 20, "") == "0" * 20
    with pytest.raises(InvalidRequest, match="Last-Event-ID"):
        stream_cursor(None, "x")


def test_slots_count_per_inbox_and_in_all() -> None:
    slots = StreamSlots(limit=3, per_inbox=2)
    slots.acquire("a")
    slots.acquire("a")
    with pytest.raises(TooManyStreams, match="this inbox"):
        slots.acquire("a")
    slots.acquire("b")
    with pytest.raises(TooManyStreams, match="3 event streams"):
        slots.acquire("c")
    slots.release("a")
    slots.acquire("c")
    assert slots.total == 3


def test_a_stream_gives_its_slot_back_once() -> None:
    store, slots = Store(), StreamSlots()
    address = store.generate().address
    stream = EventStream(store, slots, address, None, 1.0)
    assert slots.total == 1
    stream.close()
    stream.close()
    assert slots.total == 0
    with pytest.raises(InboxNotFound):
        EventStream(store, slots, "nobody@tempinbox.test", None, 1.0)
    assert slots.total == 0


def test_a_stream_ends_when_the_store_closes() -> None:
    store = Store()
    address = store.generate().address
    stream = EventStream(store, StreamSlots(), address, None, 30.0)

    async def read() -> list[bytes]:
        loop = asyncio.get_running_loop()
        loop.call_later(0.1, store.close)
        return [chunk async for chunk in stream.events()]

    started = time.monotonic()
    assert asyncio.run(read()) == []
    assert time.monotonic() - started < 1


def test_smtp_delivery_wakes_the_stream_without_polling(
    server: InboxServer, open_stream: Any, address: str
) -> None:
    """The event comes right after the delivery, not when a 15 s heartbeat wait ends."""
    events = open_stream(address)
    with smtplib.SMTP(server.smtp_host, server.smtp_port, local_hostname=CLIENT_NAME) as smtp:
        sent = time.monotonic()
        smtp.sendmail("app@example.com", [address], b"Subject: now\r\n\r\nx\r\n")
    events.next_message()
    assert time.monotonic() - sent < 2
