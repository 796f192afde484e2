"""A webhook that fails: retried on 5xx, 429 and timeouts, not on 4xx or 3xx; never slowing SMTP."""

from __future__ import annotations

import contextlib
import socket
import threading
import time

import pytest
import requests

from pytest_tempinbox import TempInboxClient
from pytest_tempinbox.server.inbox_server import InboxServer
from pytest_tempinbox.server.webhooks.sender import SENDERS

from .webhooks_support import Receiver, closed_port_url, send

QUICK_RETRY = 0.05


def _server(url: str, *, queue_length: int | None = None) -> InboxServer:
    server = InboxServer(webhooks=[url])
    assert server.webhooks is not None
    server.webhooks.first_retry = QUICK_RETRY
    if queue_length is not None:
        server.webhooks.queue_length = queue_length
    return server


def _counts(server: InboxServer) -> dict[str, int]:
    assert server.webhooks is not None
    return server.webhooks.metrics()


def _settled(server: InboxServer, timeout: float = 10.0) -> dict[str, int]:
    """The counters once nothing waits any more (every event sent, failed or dropped)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        counts = _counts(server)
        if counts["queued"] == 0 and counts["sent"] + counts["failed"] > 0:
            return counts
        time.sleep(0.02)
    raise AssertionError(f"the webhooks did not settle within {timeout} s: {_counts(server)}")


def test_a_5xx_is_retried_with_the_same_delivery_id_until_it_succeeds() -> None:
    with (
        Receiver([500, 503]) as receiver,
        _server(receiver.url) as server,
        TempInboxClient(server.api_url) as client,
    ):
        send(server, client.generate().address)
        hits = receiver.wait_for(3)
        counts = _settled(server)
    assert len({hit.headers["x-tempinbox-delivery"] for hit in hits}) == 1
    assert (counts["sent"], counts["retried"], counts["failed"]) == (1, 2, 0)


def test_a_429_is_retried() -> None:
    with (
        Receiver([429]) as receiver,
        _server(receiver.url) as server,
        TempInboxClient(server.api_url) as client,
    ):
        send(server, client.generate().address)
        receiver.wait_for(2)
        counts = _settled(server)
    assert (counts["sent"], counts["retried"]) == (1, 1)


def test_a_400_is_not_retried() -> None:
    with (
        Receiver([400]) as receiver,
        _server(receiver.url) as server,
        TempInboxClient(server.api_url) as client,
    ):
        send(server, client.generate().address)
        receiver.wait_for(1)
        counts = _settled(server)
        hits = receiver.quiet_for(QUICK_RETRY * 10)
    assert len(hits) == 1
    assert (counts["failed"], counts["retried"], counts["sent"]) == (1, 0, 0)


def test_a_redirect_is_not_followed_and_counts_as_failed() -> None:
    with (
        Receiver() as elsewhere,
        Receiver([307], location=elsewhere.url) as receiver,
        _server(receiver.url) as server,
        TempInboxClient(server.api_url) as client,
    ):
        send(server, client.generate().address)
        receiver.wait_for(1)
        counts = _settled(server)
        followed = elsewhere.quiet_for(QUICK_RETRY * 10)
    assert followed == []
    assert (counts["failed"], counts["retried"]) == (1, 0)


def test_an_endpoint_that_never_answers_times_out_and_is_retried() -> None:
    with socket.create_server(("127.0.0.1", 0)) as silent:  # connects, never answers
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/hook"
        with _server(url) as server, TempInboxClient(server.api_url) as client:
            assert server.webhooks is not None
            server.webhooks.attempt_timeout = 0.2
            send(server, client.generate().address)
            deadline = time.monotonic() + 10
            while _counts(server)["retried"] < 1 and time.monotonic() < deadline:
                time.sleep(0.02)
    assert _counts(server)["retried"] >= 1


def test_a_dead_endpoint_does_not_hold_up_delivery() -> None:
    with (
        _server(closed_port_url()) as server,
        TempInboxClient(server.api_url) as client,
    ):
        inbox = client.generate()
        started = time.monotonic()
        for number in range(20):
            send(server, inbox.address, subject=f"Mail {number}")
        sending = time.monotonic() - started
        assert len(inbox.wait_for_messages(20, timeout=10)) == 20
        counts = _settled(server, timeout=20)
    assert sending < 5
    assert counts["failed"] == 20
    assert counts["sent"] == 0


def test_a_dead_endpoint_is_tried_once_per_backoff_not_once_per_event() -> None:
    with (
        _server(closed_port_url()) as server,
        TempInboxClient(server.api_url) as client,
    ):
        assert server.webhooks is not None
        server.webhooks.first_retry = 60  # the first failure marks it down for a minute
        inbox = client.generate()
        for number in range(20):
            send(server, inbox.address, subject=f"Mail {number}")
        assert len(inbox.wait_for_messages(20, timeout=10)) == 20
        time.sleep(0.2)
        counts = _counts(server)
    # The first burst's attempts (one per sender at most); the later events wait untried.
    assert 1 <= counts["retried"] <= SENDERS
    assert counts["queued"] == 20


def test_beyond_the_queue_s_length_events_are_dropped_and_counted_in_metrics() -> None:
    with (
        _server(closed_port_url(), queue_length=2) as server,
        TempInboxClient(server.api_url) as client,
    ):
        assert server.webhooks is not None
        server.webhooks.first_retry = 60  # failed attempts wait: the queue stays full
        inbox = client.generate()
        for number in range(10):
            send(server, inbox.address, subject=f"Mail {number}")
        assert len(inbox.wait_for_messages(10, timeout=10)) == 10
        # An attempt in flight is out of the queue until it fails: on a loaded machine
        # the read can come first, so it is read again until the attempts are back.
        url = server.api_url.removesuffix("/api") + "/metrics"
        deadline = time.monotonic() + 10
        metrics = requests.get(url, timeout=10).text
        while _metric(metrics, "tempinbox_webhook_queue") < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
            metrics = requests.get(url, timeout=10).text
    dropped = _metric(metrics, "tempinbox_webhooks_dropped_total")
    assert dropped >= 8 - 1  # two waiting, at most one more in flight when the queue filled
    # Two waiting; the attempts in flight when it filled come back to it as they fail.
    assert 2 <= _metric(metrics, "tempinbox_webhook_queue") <= 2 + SENDERS
    assert _metric(metrics, "tempinbox_webhooks_sent_total") == 0


def _metric(text: str, name: str) -> float:
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError(f"no {name} in the metrics:\n{text}")


def _answering(reply: bytes) -> tuple[socket.socket, threading.Thread]:
    """A loopback endpoint that reads a request and answers ``reply``, whatever it was."""
    listener = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        with contextlib.suppress(OSError):
            while True:
                connection, _ = listener.accept()
                with connection:
                    connection.recv(65536)
                    connection.sendall(reply)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return listener, thread


@pytest.mark.parametrize(
    "reply",
    [b"SMTP/1.0 200 OK\r\n\r\n", b"HTTP/1.1 2OO OK\r\n\r\n", b"x" * 20000 + b"\r\n"],
    ids=["not-http", "bad-status", "long-line"],
)
def test_an_answer_that_is_not_http_fails_without_a_retry(reply: bytes) -> None:
    listener, _ = _answering(reply)
    with listener:
        url = f"http://127.0.0.1:{listener.getsockname()[1]}/hook"
        with _server(url) as server, TempInboxClient(server.api_url) as client:
            inbox = client.generate()
            send(server, inbox.address)
            counts = _settled(server)
            assert inbox.wait_for_message().subject == "Welcome"
    assert (counts["sent"], counts["failed"], counts["retried"]) == (0, 1, 0)


def test_a_connection_closed_without_an_answer_is_retried() -> None:
    listener, _ = _answering(b"")
    with listener:
        url = f"http://127.0.0.1:{listener.getsockname()[1]}/hook"
        with _server(url) as server, TempInboxClient(server.api_url) as client:
            send(server, client.generate().address)
            counts = _settled(server)
    assert (counts["sent"], counts["failed"], counts["retried"]) == (0, 1, 5)


def test_a_burst_of_failures_counts_as_one_for_the_backoff() -> None:
    with (
        _server(closed_port_url()) as server,
        TempInboxClient(server.api_url) as client,
    ):
        assert server.webhooks is not None
        server.webhooks.first_retry = 0.2
        inbox = client.generate()
        for number in range(8):  # one burst: several attempts fail at once
            send(server, inbox.address, subject=f"Mail {number}")
        time.sleep(0.05)  # the burst's attempts have failed; its backoff (0.1 s at least) runs
        started = time.monotonic()
        first = _counts(server)["retried"]
        while _counts(server)["retried"] == first and time.monotonic() - started < 10:
            time.sleep(0.01)
        waited = time.monotonic() - started
    assert waited < 0.2 * 1.5 + 1  # the first backoff's, not one doubled for each failure
