"""IMAP and POP3 with tenants: another tenant's inbox reads like one that does not exist.

A tenant's password does not open another tenant's inbox, and the answer and
its delay are those of an address nobody made; over real sockets, both stores.
"""

from __future__ import annotations

import imaplib
import poplib
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import requests

from pytest_tempinbox.rate_limits import RateLimits
from pytest_tempinbox.server.inbox_server import InboxServer
from pytest_tempinbox.server.readers.imap.session import FAILED_LOGIN_DELAY

from ..tenants_support import TOKEN_A, TOKEN_B, bearer, tenants_file

NOBODY = "nobody-made-this@tempinbox.test"
# How far apart the two refusals' delays may be: far less than the delay itself.
_SAME_DELAY = 0.25


@pytest.fixture(params=["memory", "redis"])
def server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[InboxServer]:
    """Two tenants, IMAP and POP3 listeners, on each store."""
    store = "memory" if request.param == "memory" else request.getfixturevalue("redis_url")
    with InboxServer(
        tenants=tenants_file(tmp_path),
        store=store,
        rate_limits=RateLimits.off(),
        imap_port=0,
        pop3_port=0,
    ) as started:
        yield started


def created(server: InboxServer, token: str) -> dict[str, str]:
    """A new inbox of the tenant with ``token``: its address and password."""
    answer = requests.post(server.api_url + "/generate", headers=bearer(token), timeout=10)
    assert answer.status_code == 201, answer.text
    made: dict[str, str] = answer.json()
    return made


def imap_login(server: InboxServer, user: str, password: str) -> str:
    """The answer to an imaplib LOGIN: ``OK`` or the refusal's text."""
    assert server.imap_port is not None
    client = imaplib.IMAP4(server.smtp_host, server.imap_port, timeout=10)
    try:
        return str(client.login(user, password)[0])
    except imaplib.IMAP4.error as refused:
        return str(refused)
    finally:
        client.shutdown()


def pop3_login(server: InboxServer, user: str, password: str) -> str:
    """The answer to poplib's USER and PASS: ``+OK ...`` or the refusal."""
    assert server.pop3_port is not None
    client = poplib.POP3(server.smtp_host, server.pop3_port, timeout=10)
    try:
        client.user(user)
        return client.pass_(password).decode()
    except poplib.error_proto as refused:
        return str(refused.args[0].decode())
    finally:
        client.close()


Login = Callable[[InboxServer, str, str], str]
LOGINS = [pytest.param(imap_login, id="imap"), pytest.param(pop3_login, id="pop3")]


def timed(login: Login, server: InboxServer, user: str, password: str) -> tuple[str, float]:
    """The login's answer and how long it took."""
    started = time.monotonic()
    answer = login(server, user, password)
    return answer, time.monotonic() - started


@pytest.mark.parametrize("login", LOGINS)
def test_a_tenant_opens_its_own_inbox(server: InboxServer, login: Login) -> None:
    mine = created(server, TOKEN_A)
    assert login(server, mine["email"], mine["password"]).startswith(("OK", "+OK"))


@pytest.mark.parametrize("login", LOGINS)
def test_a_tenants_password_does_not_open_another_tenants_inbox(
    server: InboxServer, login: Login
) -> None:
    mine, theirs = created(server, TOKEN_A), created(server, TOKEN_B)
    answer = login(server, theirs["email"], mine["password"])
    assert not answer.startswith(("OK", "+OK")), answer


@pytest.mark.parametrize("login", LOGINS)
def test_another_tenants_inbox_is_answered_as_one_that_does_not_exist(
    server: InboxServer, login: Login
) -> None:
    mine, theirs = created(server, TOKEN_A), created(server, TOKEN_B)
    other, other_took = timed(login, server, theirs["email"], mine["password"])
    unknown, unknown_took = timed(login, server, NOBODY, mine["password"])
    assert other == unknown
    assert min(other_took, unknown_took) >= FAILED_LOGIN_DELAY
    assert abs(other_took - unknown_took) < _SAME_DELAY, (other_took, unknown_took)
