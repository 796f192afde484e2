"""Tickets for the viewer's message frames, on a server with tenants, tried as an attacker would."""

from __future__ import annotations

import time
from urllib.parse import quote

import pytest
import requests

from pytest_tempinbox.server.api.tickets import make_ticket
from pytest_tempinbox.server.inbox_server import InboxServer

from ..helpers import send
from .tenants_support import TOKEN_A, TOKEN_B, bearer, generate, tenant_server
from .viewer_support import html_mail

__all__ = ["tenant_server"]  # the fixture, imported for these tests


def _ticket(server: InboxServer, address: str, token: str = TOKEN_A) -> str:
    response = requests.get(f"{server.api_url}/ticket/{address}", headers=bearer(token), timeout=10)
    assert response.status_code == 200, response.text
    assert set(response.json()) == {"ticket", "expires_at"}
    text: str = response.json()["ticket"]
    return text


def _html_message(server: InboxServer, token: str = TOKEN_A) -> tuple[str, str]:
    address = generate(server.api_url, token)
    send(server, html_mail(address, "<p>Private <b>4321</b></p>"))
    listed = requests.get(
        f"{server.api_url}/messages/{address}?wait=5", headers=bearer(token), timeout=10
    ).json()
    return address, listed[0]["id"]


def _frame(server: InboxServer, address: str, id: str, ticket: str) -> requests.Response:
    url = f"{server.viewer_url}viewer/messages/{address}/{id}/html?ticket={quote(ticket)}"
    return requests.get(url, timeout=10)


def test_a_ticket_opens_its_inboxs_frames_without_a_token(tenant_server: InboxServer) -> None:
    address, id = _html_message(tenant_server)
    response = _frame(tenant_server, address, id, _ticket(tenant_server, address))
    assert response.status_code == 200
    assert "<b>4321</b>" in response.text


def test_a_ticket_does_not_hold_the_token(tenant_server: InboxServer) -> None:
    address = generate(tenant_server.api_url, TOKEN_A)
    assert TOKEN_A not in _ticket(tenant_server, address)


def test_a_ticket_opens_no_other_inbox_of_its_tenant(tenant_server: InboxServer) -> None:
    address, id = _html_message(tenant_server)
    other = generate(tenant_server.api_url, TOKEN_A)
    assert _frame(tenant_server, address, id, _ticket(tenant_server, other)).status_code == 401


def test_a_ticket_opens_no_api_route(tenant_server: InboxServer) -> None:
    address, id = _html_message(tenant_server)
    ticket = quote(_ticket(tenant_server, address))
    for path in (f"messages/{address}", f"messages/{address}/{id}/raw", "inboxes"):
        url = f"{tenant_server.api_url}/{path}?ticket={ticket}"
        assert requests.get(url, timeout=10).status_code == 401, path


def test_no_ticket_is_given_for_another_tenants_inbox(tenant_server: InboxServer) -> None:
    theirs = generate(tenant_server.api_url, TOKEN_B)
    response = requests.get(
        f"{tenant_server.api_url}/ticket/{theirs}", headers=bearer(TOKEN_A), timeout=10
    )
    assert response.status_code == 404
    assert response.json()["code"] == "inbox_not_found"


@pytest.mark.parametrize(
    "change",
    [
        lambda ticket: ticket[:-1] + ("0" if ticket[-1] != "0" else "1"),
        lambda ticket: ticket.replace("team-a", "team-b"),
        lambda ticket: str(int(ticket.split("~")[0]) + 3600) + ticket[ticket.index("~") :],
        lambda ticket: "",
        lambda ticket: "~~",
    ],
    ids=["signature", "tenant", "expiry", "empty", "no fields"],
)
def test_a_changed_ticket_opens_nothing(tenant_server: InboxServer, change: object) -> None:
    address, id = _html_message(tenant_server)
    changed = change(_ticket(tenant_server, address))  # type: ignore[operator]
    assert _frame(tenant_server, address, id, changed).status_code == 401


def test_an_expired_ticket_opens_nothing(tenant_server: InboxServer) -> None:
    address, id = _html_message(tenant_server)
    tenants = tenant_server.config.tenants
    assert tenants is not None
    expired, _ = make_ticket(tenants, "team-a", address, time.time() - 3600)
    assert _frame(tenant_server, address, id, expired).status_code == 401


def test_without_tenants_there_is_no_ticket(server: InboxServer, address: str) -> None:
    response = requests.get(f"{server.api_url}/ticket/{address}", timeout=10)
    assert response.status_code == 404
    assert response.json()["code"] == "not_found"
