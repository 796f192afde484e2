"""The IMAP and POP3 counters in ``GET /metrics``, over real sockets, on both stores."""

from __future__ import annotations

import poplib
from collections.abc import Iterator

import pytest
import requests

from pytest_tempinbox.server.inbox_server import InboxServer

from .imap_support import Account, Raw, account_of

pytest.importorskip("prometheus_client")


@pytest.fixture(params=["memory", "redis"])
def server(request: pytest.FixtureRequest) -> Iterator[InboxServer]:
    """A server with IMAP and POP3 listeners, on each store."""
    store = "memory" if request.param == "memory" else request.getfixturevalue("redis_url")
    with InboxServer(imap_port=0, pop3_port=0, store=store) as started:
        yield started


def reader_metrics(server: InboxServer) -> dict[str, float]:
    """The ``tempinbox_reader_*`` samples of the server's ``/metrics``, by name and labels."""
    with requests.get(f"{server.viewer_url}metrics", timeout=10) as response:
        assert response.status_code == 200, response.text
        lines = response.text.splitlines()
    values = {}
    for line in lines:
        if line.startswith("tempinbox_reader_"):
            name, value = line.rsplit(" ", 1)
            values[name] = float(value)
    return values


def count(metrics: dict[str, float], name: str, protocol: str) -> float:
    """One reader counter's value for ``protocol``."""
    return metrics[f'tempinbox_reader_{name}_total{{protocol="{protocol}"}}']


def imap_conversation(account: Account, *lines: bytes) -> None:
    """Send each tagged line (``a1 ...``) on one raw IMAP session and read its answer."""
    raw = Raw(account.server)
    raw.line()
    for line in lines:
        raw.send(line + b"\r\n")
        raw.until(line.split(b" ", 1)[0])
    raw.close()


def test_imap_sessions_commands_fetches_and_deletions_are_counted(server: InboxServer) -> None:
    account = account_of(server)
    account.send()
    account.send()
    imap_conversation(
        account,
        b"a1 LOGIN " + account.address.encode() + b" " + account.password.encode(),
        b"a2 SELECT INBOX",
        b"a3 FETCH 1:* (BODY.PEEK[])",
        b"a4 FETCH 1:* (FLAGS UID)",
        b"a5 STORE 1 +FLAGS (\\Deleted)",
        b"a6 EXPUNGE",
        b"a7 LOGOUT",
    )
    metrics = reader_metrics(server)
    assert count(metrics, "sessions", "imap") == 1
    assert count(metrics, "commands", "imap") == 7
    assert count(metrics, "messages_fetched", "imap") == 2  # the FLAGS UID fetch sends no text
    assert count(metrics, "messages_deleted", "imap") == 1
    assert count(metrics, "logins_failed", "imap") == 0
    assert count(metrics, "sessions", "pop3") == 0


def test_a_failed_imap_login_is_counted(server: InboxServer) -> None:
    account = account_of(server)
    imap_conversation(account, b"a1 LOGIN " + account.address.encode() + b" wrong")
    metrics = reader_metrics(server)
    assert count(metrics, "logins_failed", "imap") == 1
    assert count(metrics, "commands", "imap") == 1


def test_pop3_sessions_retrievals_and_deletions_are_counted(server: InboxServer) -> None:
    account = account_of(server)
    account.send()
    account.send()
    assert server.pop3_port is not None
    client = poplib.POP3(server.smtp_host, server.pop3_port, timeout=10)
    client.user(account.address)
    client.pass_(account.password)
    client.retr(1)
    client.top(2, 0)  # a header, not a retrieval
    client.dele(1)
    client.quit()
    metrics = reader_metrics(server)
    assert count(metrics, "sessions", "pop3") == 1
    assert count(metrics, "commands", "pop3") == 6
    assert count(metrics, "messages_fetched", "pop3") == 1
    assert count(metrics, "messages_deleted", "pop3") == 1
    assert count(metrics, "logins_failed", "pop3") == 0


def test_a_failed_pop3_login_is_counted(server: InboxServer) -> None:
    assert server.pop3_port is not None
    client = poplib.POP3(server.smtp_host, server.pop3_port, timeout=10)
    client.user("nobody@tempinbox.test")
    with pytest.raises(poplib.error_proto, match="AUTH"):
        client.pass_("wrong")
    client.quit()
    assert count(reader_metrics(server), "logins_failed", "pop3") == 1


def test_a_server_without_readers_reports_no_reader_metrics() -> None:
    with InboxServer() as server:
        assert reader_metrics(server) == {}
