"""SMTP credentials per tenant, over real sockets, as an attacker would try them.

Two tenants, one with SMTP credentials, on the memory store and on Redis, with
AUTH open to the tenants' logins (the fast lane serving until AUTH) and with a
server login too (aiosmtpd serving every connection from its start).
"""

from __future__ import annotations

import smtplib
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from pytest_tempinbox.server.inbox_server import InboxServer
from pytest_tempinbox.tenants import hash_line

from ..helpers import CLIENT_NAME, make_message
from .tenants_support import (
    PASSWORD_A,
    PASSWORD_B,
    TOKEN_A,
    TOKEN_B,
    USER_A,
    USER_B,
    bearer,
    generate,
    smtp_tenants_file,
)

SERVER_LOGIN = "ops:ops-password"
REFUSED_TO_TENANT = (
    "550 5.7.1 Recipient address rejected: not a live inbox of the authenticated tenant"
)


@pytest.fixture(
    params=[("memory", "any"), ("memory", SERVER_LOGIN), ("redis", "any"), ("redis", SERVER_LOGIN)],
    ids=["memory-fast-lane", "memory-aiosmtpd", "redis-fast-lane", "redis-aiosmtpd"],
)
def server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[InboxServer]:
    """A server whose two tenants have SMTP credentials."""
    store, smtp_auth = request.param
    if store == "redis":
        store = request.getfixturevalue("redis_url")
    with InboxServer(
        tenants=smtp_tenants_file(tmp_path), store=store, smtp_auth=smtp_auth
    ) as running:
        yield running


def _client(server: InboxServer, login: tuple[str, str] | None) -> smtplib.SMTP:
    client = smtplib.SMTP(
        server.smtp_host, server.smtp_port, local_hostname=CLIENT_NAME, timeout=10
    )
    client.ehlo()
    if login is not None:
        client.login(*login)
    return client


def _rcpt(server: InboxServer, login: tuple[str, str] | None, address: str) -> tuple[int, str]:
    with _client(server, login) as client:
        client.mail("app@shop.test")
        code, text = client.rcpt(address)
    return code, text.decode()


def _messages(server: InboxServer, address: str, token: str) -> list[dict[str, object]]:
    response = requests.get(
        f"{server.api_url}/messages/{address}", headers=bearer(token), timeout=10
    )
    assert response.status_code == 200, response.text
    found: list[dict[str, object]] = response.json()
    return found


def test_mail_logged_in_as_a_tenant_reaches_that_tenants_inbox(server: InboxServer) -> None:
    address = generate(server.api_url, TOKEN_A)
    with _client(server, (USER_A, PASSWORD_A)) as client:
        client.send_message(make_message(address, subject="Welcome"))
    found = requests.get(
        f"{server.api_url}/messages/{address}?wait=5", headers=bearer(TOKEN_A), timeout=10
    ).json()
    assert [message["subject"] for message in found] == ["Welcome"]


@pytest.mark.parametrize("form", ["exact", "upper", "sub-address"])
def test_a_tenants_login_cannot_mail_another_tenants_inbox(server: InboxServer, form: str) -> None:
    address = generate(server.api_url, TOKEN_B)
    local, _, domain = address.partition("@")
    written = {"exact": address, "upper": address.upper(), "sub-address": f"{local}+x@{domain}"}
    code, text = _rcpt(server, (USER_A, PASSWORD_A), written[form])
    assert f"{code} {text}" == REFUSED_TO_TENANT
    assert _messages(server, address, TOKEN_B) == []


def test_another_tenants_inbox_is_refused_as_an_address_that_does_not_exist(
    server: InboxServer,
) -> None:
    live = generate(server.api_url, TOKEN_B)
    absent = "nobody0000000@" + live.partition("@")[2]
    login = (USER_A, PASSWORD_A)
    assert _rcpt(server, login, live) == _rcpt(server, login, absent)


def test_a_tenants_login_reaches_its_own_sub_addresses(server: InboxServer) -> None:
    local, _, domain = generate(server.api_url, TOKEN_A).partition("@")
    assert _rcpt(server, (USER_A, PASSWORD_A), f"{local.upper()}+tag@{domain}")[0] == 250


@pytest.mark.parametrize(
    "login",
    [
        (USER_A, "wrong"),
        ("nobody", PASSWORD_A),
        (USER_B, PASSWORD_A),
        (USER_A, hash_line(PASSWORD_A)),
    ],
    ids=["wrong password", "unknown user", "another tenant's user", "the stored hash"],
)
def test_wrong_credentials_get_535(server: InboxServer, login: tuple[str, str]) -> None:
    with _client(server, None) as client, pytest.raises(smtplib.SMTPAuthenticationError) as failed:
        client.login(*login)
    assert failed.value.smtp_code == 535
    error = failed.value.smtp_error
    assert (error if isinstance(error, bytes) else error.encode()).startswith(b"5.7.8")


@pytest.fixture(params=["memory", "redis"])
def open_smtp_server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[InboxServer]:
    """A server with the two tenants' SMTP credentials and SMTP otherwise open (AUTH optional)."""
    store = "memory" if request.param == "memory" else request.getfixturevalue("redis_url")
    with InboxServer(tenants=smtp_tenants_file(tmp_path), store=store) as running:
        yield running


def test_unauthenticated_mail_reaches_any_live_inbox(open_smtp_server: InboxServer) -> None:
    server = open_smtp_server
    inbox_a, inbox_b = generate(server.api_url, TOKEN_A), generate(server.api_url, TOKEN_B)
    with _client(server, None) as client:
        client.send_message(make_message(inbox_a, subject="To A"))
        client.send_message(make_message(inbox_b, subject="To B"))
    for address, token in ((inbox_a, TOKEN_A), (inbox_b, TOKEN_B)):
        found = requests.get(
            f"{server.api_url}/messages/{address}?wait=5", headers=bearer(token), timeout=10
        ).json()
        assert len(found) == 1


def test_the_server_login_reaches_every_tenants_inbox(tmp_path: Path) -> None:
    with InboxServer(tenants=smtp_tenants_file(tmp_path), smtp_auth=SERVER_LOGIN) as server:
        address = generate(server.api_url, TOKEN_B)
        user, _, password = SERVER_LOGIN.partition(":")
        assert _rcpt(server, (user, password), address)[0] == 250


def _refused(server: InboxServer, token: str) -> list[str]:
    response = requests.get(f"{server.api_url}/refused", headers=bearer(token), timeout=10)
    assert response.status_code == 200, response.text
    return [refusal["address"] for refusal in response.json()]


def test_refused_lists_only_the_refusals_of_the_callers_smtp_login(
    open_smtp_server: InboxServer,
) -> None:
    server = open_smtp_server
    domain = generate(server.api_url, TOKEN_B).partition("@")[2]
    _rcpt(server, (USER_A, PASSWORD_A), f"typo-of-a@{domain}")
    _rcpt(server, (USER_B, PASSWORD_B), f"typo-of-b@{domain}")
    _rcpt(server, None, f"anonymous@{domain}")
    assert _refused(server, TOKEN_A) == [f"typo-of-a@{domain}"]
    assert _refused(server, TOKEN_B) == [f"typo-of-b@{domain}"]


def test_refused_shows_no_tenant_another_tenants_refusal_metadata(
    open_smtp_server: InboxServer,
) -> None:
    server = open_smtp_server
    inbox_b = generate(server.api_url, TOKEN_B)
    _rcpt(server, (USER_A, PASSWORD_A), inbox_b)
    response = requests.get(f"{server.api_url}/refused", headers=bearer(TOKEN_B), timeout=10)
    assert response.json() == []
    assert CLIENT_NAME not in response.text
