"""Every route of the API, tried as an attacker would on a server with two tenants.

No token, a wrong token, another tenant's token, another tenant's address in
odd case, percent-encoded or with a sub-address: each meets a 401, or the very
answer an inbox that does not exist gets, and never the data.
"""

from __future__ import annotations

import pytest
import requests

from pytest_tempinbox.server.api.routes import ROUTES, Route
from pytest_tempinbox.server.api.tenancy import OPEN_ROUTES
from pytest_tempinbox.server.inbox_server import InboxServer

from ..helpers import make_message, send
from .tenants_support import TOKEN_A, TOKEN_B, bearer, generate, tenant_server

__all__ = ["tenant_server"]  # the fixture, imported for these tests

GUARDED = [
    (route, method)
    for route in ROUTES
    if route.name not in OPEN_ROUTES
    for method in sorted(route.endpoints)
]
NAMING_AN_INBOX = [(route, method) for route, method in GUARDED if "{email}" in route.template]


def _url(server: InboxServer, route: Route, email: str, message_id: str) -> str:
    root = server.api_url.removesuffix("/api")
    path = route.path.replace("{email}", email).replace("{id}", message_id)
    return root + path.replace("{index:int}", "0").replace("{name}", "viewer.js")


def _ask(
    server: InboxServer, route: Route, method: str, url: str, token: str | None
) -> requests.Response:
    headers = bearer(token) if token is not None else {}
    body = b"{}" if method == "POST" else None
    return requests.request(method, url, headers=headers, data=body, timeout=10)


def _victim(server: InboxServer) -> tuple[str, str]:
    """An inbox of team-a with one message: its address and the message's id."""
    address = generate(server.api_url, TOKEN_A)
    send(server, make_message(address, subject="Secret 4321", body="the data\n"))
    found = requests.get(
        f"{server.api_url}/messages/{address}?wait=5", headers=bearer(TOKEN_A), timeout=10
    ).json()
    return address, found[0]["id"]


def _variants(address: str) -> dict[str, str]:
    local, _, domain = address.partition("@")
    return {
        "exact": address,
        "upper": address.upper(),
        "percent-encoded": "".join(f"%{ord(c):02X}" for c in local) + "%40" + domain,
        "sub-address": f"{local}+tag@{domain}",
    }


@pytest.mark.parametrize("token", [None, "tit_wrong"], ids=["no token", "wrong token"])
def test_every_guarded_route_answers_401_without_a_tenants_token(
    tenant_server: InboxServer, token: str | None
) -> None:
    address, message_id = _victim(tenant_server)
    for route, method in GUARDED:
        response = _ask(
            tenant_server, route, method, _url(tenant_server, route, address, message_id), token
        )
        where = f"{method} {route.path}"
        assert response.status_code == 401, f"{where} answered {response.status_code}"
        assert response.headers["www-authenticate"].startswith("Bearer"), where
        assert "4321" not in response.text, where
        assert address not in response.text, where


@pytest.mark.parametrize("variant", ["exact", "upper", "percent-encoded", "sub-address"])
def test_another_tenants_inbox_answers_as_one_that_does_not_exist_on_every_route(
    tenant_server: InboxServer, variant: str
) -> None:
    address, message_id = _victim(tenant_server)
    local = address.partition("@")[0]
    ghost_local = ("y" if local[0] == "z" else "z") + local[1:]
    ghost = ghost_local + address[len(local) :]
    for route, method in NAMING_AN_INBOX:
        where = f"{method} {route.path} ({variant})"
        theirs = _ask(
            tenant_server,
            route,
            method,
            _url(tenant_server, route, _variants(address)[variant], message_id),
            TOKEN_B,
        )
        nobodys = _ask(
            tenant_server,
            route,
            method,
            _url(tenant_server, route, _variants(ghost)[variant], message_id),
            TOKEN_B,
        )
        assert theirs.status_code == 404, f"{where} answered {theirs.status_code}: {theirs.text}"
        assert theirs.json()["code"] == "inbox_not_found", where
        expected = nobodys.content.replace(ghost_local.encode(), local.encode())
        expected = expected.replace(ghost_local.upper().encode(), local.upper().encode())
        assert theirs.content == expected, where
        assert theirs.headers["content-type"] == nobodys.headers["content-type"], where
    mine = requests.get(
        f"{tenant_server.api_url}/messages/{address}", headers=bearer(TOKEN_A), timeout=10
    )
    assert [message["subject"] for message in mine.json()] == ["Secret 4321"]


def test_the_owners_token_reaches_every_route_naming_its_inbox(
    tenant_server: InboxServer,
) -> None:
    address, message_id = _victim(tenant_server)
    # The deletion last: it takes the inbox away from the routes after it.
    ordered = sorted(NAMING_AN_INBOX, key=lambda pair: pair[0].name == "delete")
    for route, method in ordered:
        url = _url(tenant_server, route, address, message_id)
        body = b"{}" if method == "POST" else None
        with requests.request(
            method, url, headers=bearer(TOKEN_A), data=body, timeout=10, stream=True
        ) as response:
            where = f"{method} {route.path} answered {response.status_code}"
            assert response.status_code != 401, where
            if response.status_code == 404:  # no attachment, no HTML: but the inbox is found
                assert response.json()["code"] != "inbox_not_found", where
