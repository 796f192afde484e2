"""The MCP endpoint with tenants: the token required, each tenant's inboxes its own."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from mcp import MCPError

from pytest_tempinbox.rate_limits import RateLimits
from pytest_tempinbox.server.inbox_server import InboxServer

from ...helpers import make_message
from ..tenants_support import TOKEN_A, TOKEN_B, bearer, generate, tenants_file
from .mcp_support import agent, failure, mcp_url, result, send

_INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "curl", "version": "1"},
    },
}
_HEADERS = {"Accept": "application/json, text/event-stream"}


@pytest.fixture(params=["memory", "redis"])
def tenant_mcp(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[InboxServer]:
    """A running server with two tenants and the MCP endpoint, on each store."""
    store = "memory" if request.param == "memory" else request.getfixturevalue("redis_url")
    tenants = tenants_file(tmp_path)
    with InboxServer(
        mcp=True, tenants=tenants, store=store, rate_limits=RateLimits.off()
    ) as server:
        yield server


@pytest.mark.parametrize("token", [None, "tit_not-a-token-of-anyone"])
def test_a_request_without_a_tenants_token_is_refused_as_the_api_refuses_it(
    tenant_mcp: InboxServer, token: str | None
) -> None:
    headers = {**_HEADERS, **({} if token is None else bearer(token))}
    response = requests.post(mcp_url(tenant_mcp), json=_INITIALIZE, headers=headers, timeout=10)
    api = requests.get(tenant_mcp.api_url + "/inboxes", headers=headers, timeout=10)
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == api.headers["www-authenticate"]
    assert response.json() == api.json()


@pytest.mark.asyncio
async def test_the_sdks_client_without_a_token_cannot_start(tenant_mcp: InboxServer) -> None:
    # The SDK's task group raises an exception group around the SDK's own error.
    with pytest.raises(BaseException) as raised:  # noqa: PT011
        async with agent(mcp_url(tenant_mcp)):
            pass
    (refused,) = _leaves(raised.value)
    assert isinstance(refused, MCPError)  # the SDK's words for the 401 it got


def _leaves(error: BaseException) -> list[BaseException]:
    inner = getattr(error, "exceptions", None)
    return [error] if inner is None else [leaf for each in inner for leaf in _leaves(each)]


@pytest.mark.asyncio
async def test_a_tenant_reads_the_mail_of_its_own_inbox(tenant_mcp: InboxServer) -> None:
    async with agent(mcp_url(tenant_mcp), TOKEN_A) as session:
        email = (await result(session, "generate_inbox"))["email"]
        send(tenant_mcp, make_message(email, "for team a"))
        found = await result(session, "wait_for_message", email=email, timeout=10)
    assert found["subject"] == "for team a"
    owned = requests.get(tenant_mcp.api_url + "/inboxes", headers=bearer(TOKEN_A), timeout=10)
    assert [item["email"] for item in owned.json()["inboxes"]] == [email]


@pytest.mark.asyncio
async def test_another_tenants_inbox_answers_as_one_that_does_not_exist(
    tenant_mcp: InboxServer,
) -> None:
    theirs = generate(tenant_mcp.api_url, TOKEN_B)
    send(tenant_mcp, make_message(theirs, "for team b only"))
    nobody = theirs.replace("@", "x@")
    async with agent(mcp_url(tenant_mcp), TOKEN_A) as session:
        for tool in ("list_messages", "wait_for_message", "delete_inbox"):
            stranger = await failure(session, tool, email=theirs)
            missing = await failure(session, tool, email=nobody)
            assert stranger == missing.replace(nobody, theirs)
    kept = requests.get(
        f"{tenant_mcp.api_url}/messages/{theirs}", headers=bearer(TOKEN_B), timeout=10
    )
    assert [item["subject"] for item in kept.json()] == ["for team b only"]
