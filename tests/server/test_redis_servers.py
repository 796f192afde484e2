"""Several real server processes on one real Redis, and a real HAProxy in front of two.

Every server here is a ``python -m pytest_tempinbox --store redis://...``
process; Redis is Debian's ``redis-server``; the balancer is Debian's
``haproxy``. They cover what docs/deployment.md promises: any server answers for
any inbox, waits wake across servers, and neither a server's ``kill -9`` nor a
Redis restart loses a message that got its ``250``.
"""

from __future__ import annotations

import signal
import smtplib
import statistics
import threading
import time
from collections.abc import Iterator
from email.message import EmailMessage
from pathlib import Path

import pytest
import requests

from ..haproxy_support import HAProxy, free_port, require_haproxy
from ..helpers import CLIENT_NAME, Standalone
from ..redis_process import RedisProcess
from .events_support import Events


class Server:
    """One standalone server process on the shared Redis."""

    def __init__(self, store: str, *extra: str) -> None:
        self.process = Standalone("--smtp-port", "0", "--api-port", "0", "--store", store, *extra)
        self.smtp_host, self.smtp_port, self.api = self.process.read_addresses()
        self.api_port = int(self.api.rsplit(":", 1)[1].removesuffix("/api"))

    def send(self, to: str, subject: str) -> None:
        """Send one message over SMTP; smtplib raises on anything but 250."""
        message = EmailMessage()
        message["From"] = "app@example.test"
        message["To"] = to
        message["Subject"] = subject
        message.set_content(f"body of {subject}")
        with smtplib.SMTP(self.smtp_host, self.smtp_port, CLIENT_NAME, timeout=10) as smtp:
            smtp.send_message(message)

    def kill(self) -> None:
        """``kill -9``: no goodbye, no flush."""
        self.process.process.kill()
        self.process.process.communicate()

    def stop(self) -> None:
        """Stop it as an operator would."""
        if self.process.process.poll() is None:
            self.process.stop(signal.SIGTERM)


@pytest.fixture
def redis(tmp_path: Path) -> Iterator[RedisProcess]:
    """A fresh Redis with persistence on (append-only file, fsync at each write)."""
    process = RedisProcess(tmp_path / "redis", appendonly=True)
    try:
        yield process
    finally:
        process.stop()


@pytest.fixture
def servers(redis: RedisProcess) -> Iterator[list[Server]]:
    """Three servers on one Redis."""
    started = [Server(redis.url) for _ in range(3)]
    try:
        yield started
    finally:
        for server in started:
            server.stop()


def generate(server: Server) -> str:
    answer = requests.post(f"{server.api}/generate", timeout=10)
    assert answer.status_code == 201, answer.text
    return str(answer.json()["email"])


def subjects(server: Server, address: str) -> list[str]:
    answer = requests.get(f"{server.api}/messages/{address}", timeout=10)
    assert answer.status_code == 200, answer.text
    return [message["subject"] for message in answer.json()]


def test_any_server_answers_for_any_inbox(servers: list[Server]) -> None:
    one, two, three = servers
    address = generate(one)
    two.send(address, "hello through two")
    assert subjects(three, address) == ["hello through two"]
    assert requests.delete(f"{three.api}/delete/{address}", timeout=10).status_code == 200
    assert requests.get(f"{one.api}/messages/{address}", timeout=10).status_code == 404
    with pytest.raises(smtplib.SMTPRecipientsRefused):
        two.send(address, "too late")


def wait_for(server: Server, address: str, subject: str, woke: list[float]) -> None:
    """Long-poll ``server`` for a message with ``subject``; note when it answered."""
    url = f"{server.api}/messages/{address}?wait=10&subject={subject}"
    answer = requests.get(url, timeout=15)
    assert answer.status_code == 200
    assert answer.json()
    woke.append(time.perf_counter())


def test_a_wait_on_one_server_wakes_when_another_stores(servers: list[Server]) -> None:
    one, two, three = servers
    address = generate(one)
    latencies = []
    for index in range(20):
        woke: list[float] = []
        waiter = threading.Thread(target=wait_for, args=(three, address, f"n{index}", woke))
        waiter.start()
        time.sleep(0.05)  # the long-poll is waiting on server three
        sent = time.perf_counter()  # the SMTP transaction counts: the wake may beat its 250
        two.send(address, f"n{index}")
        waiter.join(15)
        assert woke, "the long-poll on server three did not wake"
        latencies.append(woke[0] - sent)
    # No polling loop: a wake takes milliseconds (the bench measures it; this
    # bound only shows that nothing waits for a poll interval or the timeout).
    assert statistics.median(latencies) < 0.5, latencies


def test_an_event_stream_on_one_server_sees_mail_stored_by_another(
    servers: list[Server],
) -> None:
    one, two, three = servers
    address = generate(one)
    with requests.Session() as http:
        stream = Events(http, f"{three.api}/events/{address}")
        try:
            two.send(address, "streamed")
            _, data = stream.next_message()
            assert data["subject"] == "streamed"
            requests.delete(f"{one.api}/delete/{address}", timeout=10)
            event = stream.next()
            assert event is not None
            assert event["event"] == "deleted", event
        finally:
            stream.close()


def test_a_delete_on_one_server_ends_a_wait_on_another(servers: list[Server]) -> None:
    one, _, three = servers
    address = generate(one)
    answers: list[requests.Response] = []
    waiter = threading.Thread(
        target=lambda: answers.append(
            requests.get(f"{three.api}/messages/{address}?wait=10", timeout=15)
        )
    )
    started = time.monotonic()
    waiter.start()
    time.sleep(0.1)
    assert requests.delete(f"{one.api}/delete/{address}", timeout=10).status_code == 200
    waiter.join(15)
    assert answers[0].status_code == 404
    assert answers[0].json()["code"] == "inbox_not_found"
    assert time.monotonic() - started < 5


def test_a_fault_injected_through_one_server_strikes_on_another(servers: list[Server]) -> None:
    one, two, _ = servers
    address = generate(one)
    fault = {"stage": "rcpt", "code": 451, "message": "try later", "times": 1}
    assert requests.post(f"{one.api}/faults/{address}", json=fault, timeout=10).status_code == 201
    with pytest.raises(smtplib.SMTPRecipientsRefused) as refused:
        two.send(address, "struck")
    assert next(iter(refused.value.recipients.values()))[0] == 451
    two.send(address, "then through")
    assert subjects(one, address) == ["then through"]


def send_all(server: Server, address: str, count: int, accepted: list[str]) -> None:
    """Send ``count`` messages one by one; keep the subjects that got their 250."""
    for index in range(count):
        subject = f"m{index}"
        try:
            server.send(address, subject)
        except (smtplib.SMTPException, OSError):
            continue
        accepted.append(subject)


def start_load(
    server: Server, address: str, count: int, under_way: int
) -> tuple[threading.Thread, list[str]]:
    """Send ``count`` messages in the background; return once ``under_way`` got their 250."""
    accepted: list[str] = []
    sender = threading.Thread(target=send_all, args=(server, address, count, accepted))
    sender.start()
    while len(accepted) < under_way and sender.is_alive():
        time.sleep(0.005)
    return sender, accepted


def test_a_server_killed_under_load_loses_nothing_that_got_250(
    redis: RedisProcess, servers: list[Server]
) -> None:
    one, two, _ = servers
    address = generate(two)
    sender, accepted = start_load(one, address, 400, under_way=50)
    one.kill()
    sender.join(60)
    assert 50 <= len(accepted) < 400  # the kill cut the load short
    stored = subjects(two, address)
    assert set(accepted) <= set(stored)
    again = Server(redis.url)  # a restarted server serves the same inbox
    try:
        assert set(subjects(again, address)) == set(stored)
    finally:
        again.stop()


def test_redis_restarted_under_load_loses_nothing_that_got_250(
    redis: RedisProcess, servers: list[Server]
) -> None:
    one, two, _ = servers
    address = generate(two)
    sender, accepted = start_load(one, address, 300, under_way=30)
    redis.stop()
    with smtplib.SMTP(one.smtp_host, one.smtp_port, CLIENT_NAME, timeout=10) as smtp:
        smtp.ehlo()
        smtp.mail("app@example.test")
        code, _ = smtp.rcpt(address)
    ready = requests.get(f"{two.api}/ready", timeout=10)
    read = requests.get(f"{two.api}/messages/{address}", timeout=10)
    redis.start()
    sender.join(60)
    assert code == 451
    assert ready.status_code == 503
    assert read.status_code == 503
    assert read.json()["code"] == "store_unavailable"
    deadline = time.monotonic() + 10
    while requests.get(f"{two.api}/ready", timeout=10).status_code != 200:
        assert time.monotonic() < deadline, "the server did not recover when Redis came back"
        time.sleep(0.1)
    assert set(accepted) <= set(subjects(two, address))
    one.send(address, "after the restart")
    assert "after the restart" in subjects(two, address)


def test_a_server_cannot_start_without_its_redis() -> None:
    port = free_port()  # nothing listens there
    store = f"redis://127.0.0.1:{port}/0"
    server = Standalone("--smtp-port", "0", "--api-port", "0", "--store", store)
    _, stderr = server.process.communicate(timeout=30)
    assert server.process.returncode == 1
    assert len(stderr.strip().splitlines()) == 1, stderr
    assert stderr.startswith("error: the store does not answer"), stderr


def accepted(server: Server) -> int:
    """The messages ``server`` answered 250, from its /metrics."""
    metrics = requests.get(server.api.removesuffix("/api") + "/metrics", timeout=10).text
    for line in metrics.splitlines():
        if line.startswith("tempinbox_messages_accepted_total "):
            return int(float(line.split()[1]))
    raise AssertionError(f"no tempinbox_messages_accepted_total in {metrics}")


SIGNUP_TESTS = """
import smtplib
from email.message import EmailMessage

import pytest


@pytest.mark.parametrize("user", range(6))
def test_signup(tempinbox, tempinbox_server, user):
    message = EmailMessage()
    message["From"] = "app@example.test"
    message["To"] = tempinbox.address
    message["Subject"] = f"Welcome, user {user}"
    message.set_content("Your code is 482913. Confirm: https://app.example.test/confirm?u=1")
    with smtplib.SMTP(tempinbox_server.smtp_host, tempinbox_server.smtp_port, "client") as smtp:
        smtp.send_message(message)
    received = tempinbox.wait_for_message(subject=f"user {user}", timeout=10)
    assert received.code() == "482913"
    assert received.link(contains="confirm") == "https://app.example.test/confirm?u=1"
"""


def test_a_signup_test_passes_through_haproxy_as_against_one_server(
    redis: RedisProcess, tmp_path: Path, pytester: pytest.Pytester
) -> None:
    require_haproxy()
    smtp_port, api_port = free_port(), free_port()
    public = ("--public-smtp", f"127.0.0.1:{smtp_port}")
    first, second = Server(redis.url, *public), Server(redis.url, *public)
    balancer = None
    try:
        balancer = HAProxy(
            tmp_path,
            [first.smtp_port, second.smtp_port],
            [first.api_port, second.api_port],
            smtp_port=smtp_port,
            api_port=api_port,
        )
        pytester.makepyfile(test_signup=SIGNUP_TESTS)
        result = pytester.runpytest_subprocess("--tempinbox-url", balancer.api_url)
        result.assert_outcomes(passed=6)
        # Round-robin: each server took some of the mail, and the balancer's SMTP
        # address is what the plugin learned from /api/info.
        counts = [accepted(first), accepted(second)]
        assert sum(counts) == 6
        assert min(counts) > 0, counts
        info = requests.get(f"{balancer.api_url}/info", timeout=10).json()
        assert info["smtp"]["port"] == smtp_port
    finally:
        if balancer is not None:
            balancer.stop()
        first.stop()
        second.stop()
