"""POP3 with tenants: a tenant's inbox opens with its password only; another's reads as wrong."""

from __future__ import annotations

import poplib
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from pytest_tempinbox.rate_limits import RateLimits
from pytest_tempinbox.server.inbox_server import InboxServer

from ..tenants_support import TOKEN_A, TOKEN_B, bearer, tenants_file

REFUSED = b"-ERR [AUTH] invalid user name or password"


@pytest.fixture(params=["memory", "redis"])
def server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[InboxServer]:
    """Two tenants, a POP3 listener, on each store."""
    store = "memory" if request.param == "memory" else request.getfixturevalue("redis_url")
    with InboxServer(
        tenants=tenants_file(tmp_path), store=store, rate_limits=RateLimits.off(), pop3_port=0
    ) as started:
        yield started


def created(server: InboxServer, token: str, address: str | None = None) -> dict[str, str]:
    body = {"address": address} if address else None
    answer = requests.post(
        server.api_url + "/generate", json=body, headers=bearer(token), timeout=10
    )
    assert answer.status_code == 201, answer.text
    made: dict[str, str] = answer.json()
    return made


def login(server: InboxServer, user: str, password: str) -> bytes:
    assert server.pop3_port
    client = poplib.POP3(server.smtp_host, server.pop3_port, timeout=10)
    try:
        client.user(user)
        return client.pass_(password)
    except poplib.error_proto as refused:
        answer: bytes = refused.args[0]
        return answer
    finally:
        client.close()


def test_a_tenant_reads_its_inbox_with_the_password_it_was_given(server: InboxServer) -> None:
    mine = created(server, TOKEN_A)
    assert login(server, mine["email"], mine["password"]).startswith(b"+OK")


def test_an_inbox_made_again_by_another_tenant_refuses_the_first_password(
    server: InboxServer,
) -> None:
    address = "fixed@tempinbox.test"
    first = created(server, TOKEN_A, address)
    requests.delete(f"{server.api_url}/delete/{address}", headers=bearer(TOKEN_A), timeout=10)
    created(server, TOKEN_B, address)
    assert login(server, address, first["password"]) == REFUSED
