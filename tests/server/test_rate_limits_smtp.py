"""SMTP's rate limits over real sockets, on the fast lane and on aiosmtpd: 421 4.7.0 and closed."""

from __future__ import annotations

import smtplib
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

from pytest_tempinbox.rate_limits import DEFAULT_SMTP_CONNECTIONS_PER_CLIENT, RateLimits
from pytest_tempinbox.server.inbox_server import InboxServer

from .tenants_support import tenants_file

# The fast lane serves an open server; with a password required, aiosmtpd serves every connection.
PATHS = {"fast lane": "none", "aiosmtpd": "user:secret"}


@pytest.fixture(params=list(PATHS))
def limited(request: pytest.FixtureRequest) -> Iterator[InboxServer]:
    """A server allowing 2 SMTP connections per client address and 5 commands per connection."""
    limits = RateLimits(smtp_connections_per_client=2, smtp_commands_per_connection=5)
    with InboxServer(smtp_auth=PATHS[request.param], rate_limits=limits) as server:
        yield server


def connect(server: InboxServer) -> smtplib.SMTP:
    """An SMTP client connected to ``server``, greeted."""
    return smtplib.SMTP(server.smtp_host, server.smtp_port, timeout=10)


def test_a_client_over_its_connections_gets_421_and_is_closed(limited: InboxServer) -> None:
    with ExitStack() as stack:
        for _ in range(2):
            stack.enter_context(connect(limited))
        with pytest.raises(smtplib.SMTPConnectError) as refused:
            connect(limited)
        assert refused.value.smtp_code == 421
        # smtplib's typing says str; it holds the reply's bytes
        assert "4.7.0 Too many connections from your address" in str(refused.value.smtp_error)


def test_a_closed_connection_frees_its_place(limited: InboxServer) -> None:
    for _ in range(5):  # one at a time: never two open
        with connect(limited) as client:
            assert client.noop()[0] == 250


def test_a_connection_over_its_commands_gets_421_and_is_closed(limited: InboxServer) -> None:
    with connect(limited) as client:
        assert [client.noop()[0] for _ in range(5)] == [250] * 5
        code, text = client.noop()
        assert (code, text[:5]) == (421, b"4.7.0")
        with pytest.raises(smtplib.SMTPServerDisconnected):
            client.noop()


def test_the_commands_of_a_connection_handed_over_to_aiosmtpd_count_on() -> None:
    limits = RateLimits(smtp_commands_per_connection=4)
    with InboxServer(rate_limits=limits) as server, connect(server) as client:
        assert [client.noop()[0] for _ in range(2)] == [250, 250]  # the fast lane
        assert client.docmd("HELP")[0] == 250  # aiosmtpd's from here on
        assert client.noop()[0] == 250
        assert client.noop()[0] == 421
        client.close()


def test_with_tenants_the_connections_per_client_hold_by_default(tmp_path: Path) -> None:
    with InboxServer(tenants=tenants_file(tmp_path)) as server, ExitStack() as stack:
        for _ in range(DEFAULT_SMTP_CONNECTIONS_PER_CLIENT):
            stack.enter_context(connect(server))
        with pytest.raises(smtplib.SMTPConnectError) as refused:
            connect(server)
        assert refused.value.smtp_code == 421


def test_the_open_server_without_the_flags_has_no_limit_per_client() -> None:
    with InboxServer() as server, ExitStack() as stack:
        clients = [stack.enter_context(connect(server)) for _ in range(50)]
        assert {client.noop()[0] for client in clients} == {250}
        assert [clients[0].noop()[0] for _ in range(1100)][-1] == 250
