"""What operators use, over real sockets: health, readiness, metrics, and a store that is down.

The store that goes down is the server's own in-memory store, made to raise
:class:`~pytest_tempinbox.errors.StoreUnavailable` on demand, as the Redis
store does while Redis is unreachable.
"""

from __future__ import annotations

import re
import smtplib
import sys
import threading
import time
from collections.abc import Iterator, Sequence

import pytest
import requests

from pytest_tempinbox.errors import QuotaExceeded, StoreUnavailable
from pytest_tempinbox.models import ProviderRecord
from pytest_tempinbox.server.inbox_server import InboxServer
from pytest_tempinbox.server.store.memory.store import Store
from pytest_tempinbox.server.store.protocol import Select
from pytest_tempinbox.server.store.stored_message import StoredMessage

from ..helpers import CLIENT_NAME, make_message
from .api_support import assert_problem
from .events_support import Events

METRICS_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class FlakyStore(Store):
    """The in-memory store, which stops answering while ``down`` is set."""

    down = False

    def _check(self) -> None:
        if self.down:
            raise StoreUnavailable("the store does not answer: connection refused")

    async def accepts(self, address: str) -> bool:
        """Tell whether ``address`` is live, unless the store is down."""
        self._check()
        return await super().accepts(address)

    async def admits(self, address: str) -> bool | QuotaExceeded:
        """Tell whether ``address`` may pass RCPT, unless the store is down."""
        self._check()
        return await super().admits(address)

    async def deliver(
        self,
        mail_from: str,
        rcpt_to: Sequence[str],
        raw: bytes,
        provider: ProviderRecord | None = None,
        *,
        within_quotas: bool = False,
    ) -> list[StoredMessage]:
        """Store the message, unless the store is down."""
        self._check()
        return await super().deliver(mail_from, rcpt_to, raw, provider, within_quotas=within_quotas)

    def messages(self, address: str, after: str | None = None) -> list[StoredMessage]:
        """The inbox's messages, unless the store is down."""
        self._check()
        return super().messages(address, after)

    async def wait(
        self,
        address: str,
        *,
        after: str | None = None,
        timeout: float = 0.0,
        select: Select | None = None,
    ) -> list[StoredMessage]:
        """The inbox's messages, waiting for one, unless the store is down."""
        self._check()
        return await super().wait(address, after=after, timeout=timeout, select=select)

    async def follow(self, address: str, cursor: str, timeout: float) -> list[StoredMessage]:
        """The messages after ``cursor``, waiting for one, unless the store is down."""
        self._check()
        return await super().follow(address, cursor, timeout)

    def check(self) -> None:
        """Return, unless the store is down."""
        self._check()

    def stats(self) -> dict[str, int]:
        """The counts, unless the store is down."""
        self._check()
        return super().stats()

    def expire(self) -> int:
        """Drop what expired, unless the store is down."""
        self._check()
        return super().expire()


@pytest.fixture
def flaky() -> Iterator[tuple[InboxServer, FlakyStore]]:
    server = InboxServer()
    store = FlakyStore(server.store.domains)
    server.store = store  # before start: SMTP and the API are made with it
    with server:
        yield server, store


def test_an_event_stream_holds_through_a_store_outage(http: requests.Session) -> None:
    server = InboxServer(event_heartbeat=0.1)
    store = FlakyStore(server.store.domains)
    server.store = store
    with server:
        email = http.post(server.api_url + "/generate", timeout=10).json()["email"]
        events = Events(http, f"{server.api_url}/events/{email}")
        try:
            store.down = True
            time.sleep(0.5)  # the stream meets the store down, and holds on
            store.down = False
            with smtplib.SMTP(
                server.smtp_host, server.smtp_port, local_hostname=CLIENT_NAME
            ) as smtp:
                smtp.sendmail("app@example.com", [email], make_message(email).as_bytes())
            id, summary = events.next_message()
            assert summary["id"] == id
            assert ": the store does not answer; trying again" in events.comments
        finally:
            events.close()


def _metrics(server: InboxServer, http: requests.Session) -> dict[str, float]:
    response = http.get(f"{server.viewer_url}metrics", timeout=10)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == METRICS_TYPE
    values = {}
    for line in response.text.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            values[name] = float(value)
    return values


# --- health and readiness ---------------------------------------------------------------


def test_health_answers_ok_without_the_store(
    flaky: tuple[InboxServer, FlakyStore], http: requests.Session
) -> None:
    server, store = flaky
    store.down = True
    response = http.get(server.api_url + "/health", timeout=10)
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


def test_ready_answers_ready_while_the_store_answers(
    server: InboxServer, http: requests.Session
) -> None:
    response = http.get(server.api_url + "/ready", timeout=10)
    assert response.status_code == 200
    assert response.json() == {"status": "ready"}


def test_ready_answers_shutting_down_once_the_smtp_listener_stops(
    private_server: InboxServer, http: requests.Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    # What the SMTP service reports from the moment it closes its listener.
    monkeypatch.setattr(private_server.counters, "smtp_listening", lambda: False)
    response = http.get(private_server.api_url + "/ready", timeout=10)
    assert_problem(response, 503, "shutting_down")
    assert "stopping" in response.json()["detail"]
    assert http.get(private_server.api_url + "/health", timeout=10).status_code == 200


def test_health_and_ready_answer_in_process(server: InboxServer) -> None:
    transport = server.local_transport()
    health = transport.request("GET", "/health", timeout=10)
    ready = transport.request("GET", "/ready", timeout=10)
    assert (health.status, health.content) == (200, b'{"status":"ok"}')
    assert (ready.status, ready.content) == (200, b'{"status":"ready"}')


# --- metrics ------------------------------------------------------------------------------


def test_metrics_count_what_the_server_does(http: requests.Session) -> None:
    with InboxServer() as server, InboxServer() as other:
        email = http.post(server.api_url + "/generate", timeout=10).json()["email"]
        with smtplib.SMTP(server.smtp_host, server.smtp_port, local_hostname=CLIENT_NAME) as smtp:
            smtp.send_message(make_message(email))
            assert smtp.mail("app@example.com")[0] == 250
            assert smtp.rcpt("nobody@tempinbox.test")[0] == 550
            assert smtp.rcpt("no-at-sign")[0] == 553
            smtp.rset()
            metrics = _metrics(server, http)
            assert metrics["tempinbox_smtp_sessions_open"] == 1
        assert metrics["tempinbox_messages_accepted_total"] == 1
        refused = 'tempinbox_recipients_refused_total{reason="%s"}'
        assert metrics[refused % "unknown_recipient"] == 1
        assert metrics[refused % "invalid_address"] == 1
        assert metrics[refused % "store_unavailable"] == 0
        assert metrics["tempinbox_inboxes"] == 1
        assert metrics["tempinbox_stored_messages"] == 1
        assert metrics["tempinbox_stored_bytes"] > 0
        assert metrics["tempinbox_evictions_total"] == 0
        assert metrics["tempinbox_store_up"] == 1
        assert metrics["tempinbox_store_errors_total"] == 0
        assert metrics["tempinbox_pending_long_polls"] == 0
        assert metrics["tempinbox_event_streams_open"] == 0

        # Another server in the same process counts on its own.
        elsewhere = _metrics(other, http)
        assert elsewhere["tempinbox_messages_accepted_total"] == 0
        assert elsewhere["tempinbox_inboxes"] == 0


def test_metrics_count_each_reason_to_refuse_a_recipient(http: requests.Session) -> None:
    with InboxServer(max_recipients=1, smtp_auth="user:secret") as server:
        email = http.post(server.api_url + "/generate", timeout=10).json()["email"]
        other = http.post(server.api_url + "/generate", timeout=10).json()["email"]
        fault = {"stage": "rcpt", "code": 550}
        assert http.post(f"{server.api_url}/faults/{email}", json=fault, timeout=10).ok
        with smtplib.SMTP(server.smtp_host, server.smtp_port, local_hostname=CLIENT_NAME) as smtp:
            smtp.ehlo()
            assert smtp.rcpt(email)[0] == 530  # before AUTH
            smtp.login("user", "secret")
            assert smtp.mail("app@example.com")[0] == 250
            assert smtp.rcpt(email)[0] == 550  # the injected fault
            assert smtp.rcpt(other)[0] == 250
            assert smtp.rcpt(email)[0] == 452  # one recipient at most
        metrics = _metrics(server, http)
    refused = 'tempinbox_recipients_refused_total{reason="%s"}'
    assert metrics[refused % "auth_required"] == 1
    assert metrics[refused % "injected_fault"] == 1
    assert metrics[refused % "too_many_recipients"] == 1
    assert metrics[refused % "unknown_recipient"] == 0


@pytest.mark.parametrize("through", ["http", "in-process"])
def test_metrics_see_a_pending_long_poll(
    server: InboxServer, http: requests.Session, through: str
) -> None:
    email = http.post(server.api_url + "/generate", timeout=10).json()["email"]
    with requests.Session() as waiting:
        waiting.trust_env = False
        transport = server.local_transport()

        def wait() -> None:
            if through == "http":
                url = f"{server.api_url}/messages/{email}"
                waiting.get(url, params={"wait": 2}, timeout=10)
            else:
                transport.request("GET", f"/messages/{email}", params={"wait": "2"}, timeout=10)

        thread = threading.Thread(target=wait)
        thread.start()
        try:
            deadline = time.monotonic() + 5
            while _metrics(server, http)["tempinbox_pending_long_polls"] < 1:
                assert time.monotonic() < deadline, f"the long-poll ({through}) was never counted"
                time.sleep(0.02)
        finally:
            http.delete(f"{server.api_url}/delete/{email}", timeout=10)  # ends the wait
            thread.join()
    assert _metrics(server, http)["tempinbox_pending_long_polls"] == 0


def test_metrics_without_prometheus_client_answer_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch, http: requests.Session
) -> None:
    monkeypatch.delitem(sys.modules, "pytest_tempinbox.server.api.prometheus", raising=False)
    for name in [name for name in sys.modules if name.partition(".")[0] == "prometheus_client"]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "prometheus_client", None)
    with InboxServer() as server:
        response = http.get(f"{server.viewer_url}metrics", timeout=10)
    body = assert_problem(response, 404, "not_found")
    assert "pip install 'pytest-tempinbox[metrics]'" in body["detail"]


# --- a store that does not answer ---------------------------------------------------------


def test_rcpt_answers_451_while_the_store_is_down(
    flaky: tuple[InboxServer, FlakyStore], http: requests.Session
) -> None:
    server, store = flaky
    email = http.post(server.api_url + "/generate", timeout=10).json()["email"]
    with smtplib.SMTP(server.smtp_host, server.smtp_port, local_hostname=CLIENT_NAME) as smtp:
        smtp.ehlo()
        assert smtp.mail("app@example.com")[0] == 250
        store.down = True
        code, text = smtp.rcpt(email)
        assert (code, text[:6]) == (451, b"4.3.0 ")
        assert b"\n" not in text
        store.down = False
        assert smtp.rcpt(email)[0] == 250  # the same session goes on
        smtp.rset()
    metrics = _metrics(server, http)
    assert metrics['tempinbox_recipients_refused_total{reason="store_unavailable"}'] == 1
    assert metrics["tempinbox_store_errors_total"] == 1


def test_data_answers_451_and_keeps_nothing_when_delivery_fails(
    flaky: tuple[InboxServer, FlakyStore], http: requests.Session
) -> None:
    server, store = flaky
    email = http.post(server.api_url + "/generate", timeout=10).json()["email"]
    message = make_message(email, subject="Retried").as_bytes()
    with smtplib.SMTP(server.smtp_host, server.smtp_port, local_hostname=CLIENT_NAME) as smtp:
        smtp.ehlo()
        assert smtp.mail("app@example.com")[0] == 250
        assert smtp.rcpt(email)[0] == 250
        store.down = True
        code, text = smtp.data(message)
        assert (code, text[:6]) == (451, b"4.3.0 ")
        store.down = False
        assert server.running
        assert store.messages(email) == []  # a 451 stored nothing
        # The client tries again later, and the message gets in.
        smtp.sendmail("app@example.com", [email], message)
    (stored,) = http.get(f"{server.api_url}/messages/{email}", timeout=10).json()
    assert stored["subject"] == "Retried"
    metrics = _metrics(server, http)
    assert metrics["tempinbox_messages_accepted_total"] == 1
    assert metrics["tempinbox_store_errors_total"] == 1


def test_the_api_answers_503_while_the_store_is_down_and_recovers(
    flaky: tuple[InboxServer, FlakyStore], http: requests.Session
) -> None:
    server, store = flaky
    email = http.post(server.api_url + "/generate", timeout=10).json()["email"]
    store.down = True
    assert_problem(
        http.get(f"{server.api_url}/messages/{email}", timeout=10), 503, "store_unavailable"
    )
    assert_problem(http.get(server.api_url + "/ready", timeout=10), 503, "store_unavailable")
    assert http.get(server.api_url + "/health", timeout=10).status_code == 200
    response = http.get(f"{server.viewer_url}metrics", timeout=10)
    assert response.status_code == 200
    assert re.search(r"^tempinbox_store_up 0\.0$", response.text, re.MULTILINE)
    assert "tempinbox_inboxes " not in response.text
    time.sleep(1.2)  # the server's expiry round meets the store down too, and goes on
    assert server.running
    store.down = False
    assert http.get(server.api_url + "/ready", timeout=10).json() == {"status": "ready"}
    assert http.get(f"{server.api_url}/messages/{email}", timeout=10).json() == []
    assert _metrics(server, http)["tempinbox_store_errors_total"] >= 4
