"""The MCP endpoint's tools with the SDK's own client, on the memory store and on Redis."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import requests

from pytest_tempinbox.limits import MAX_WAIT
from pytest_tempinbox.server.inbox_server import InboxServer

from ...helpers import make_message
from .mcp_support import agent, failure, mcp_url, result, send, sign_up_mail

pytestmark = pytest.mark.asyncio


@pytest.fixture(params=["memory", "redis"])
def mcp_server(request: pytest.FixtureRequest) -> Iterator[InboxServer]:
    """A running server with the MCP endpoint, on each store."""
    store = "memory" if request.param == "memory" else request.getfixturevalue("redis_url")
    with InboxServer(mcp=True, store=store) as server:
        yield server


async def test_the_five_tools_are_listed_with_their_arguments(mcp_server: InboxServer) -> None:
    async with agent(mcp_url(mcp_server)) as session:
        listed = {tool.name: tool for tool in (await session.list_tools()).tools}
    assert list(listed) == [
        "generate_inbox",
        "wait_for_message",
        "read_message",
        "list_messages",
        "delete_inbox",
    ]
    waiting = listed["wait_for_message"].input_schema
    assert waiting["required"] == ["email"]
    assert {"timeout", "subject", "from", "text", "subaddress", "after"} < set(
        waiting["properties"]
    )
    assert all(tool.description for tool in listed.values())


async def test_generate_inbox_gives_a_new_address_with_the_prefix(mcp_server: InboxServer) -> None:
    async with agent(mcp_url(mcp_server)) as session:
        created = await result(session, "generate_inbox", prefix="signup", ttl=600)
    assert created["email"].startswith("signup")
    assert created["email"].endswith("@tempinbox.test")
    assert created["expires_at"] is not None
    assert created["messages_url"].startswith(mcp_server.api_url + "/messages/")


async def test_wait_for_message_returns_the_mail_read_with_its_link_and_code(
    mcp_server: InboxServer,
) -> None:
    async with agent(mcp_url(mcp_server)) as session:
        email = (await result(session, "generate_inbox"))["email"]
        send(mcp_server, sign_up_mail(email))
        found = await result(session, "wait_for_message", email=email, timeout=10)
    assert found["subject"] == "Confirm your account"
    assert found["from"] == {"name": None, "email": "app@example.com"}
    assert found["to"] == [{"name": None, "email": email}]
    assert found["code"] == "482913"
    assert "Your code is 482913." in found["text"]
    assert found["links"] == [
        {"url": "https://app.example/confirm?t=abc", "text": "Confirm my account"},
        {"url": "https://app.example/help", "text": "Help"},
    ]


async def test_wait_for_message_keeps_only_the_mail_its_filters_want(
    mcp_server: InboxServer,
) -> None:
    async with agent(mcp_url(mcp_server)) as session:
        email = (await result(session, "generate_inbox"))["email"]
        send(mcp_server, make_message(email, "Welcome", sender="news@example.com"))
        send(mcp_server, sign_up_mail(email, "Reset your password"))
        found = await result(
            session, "wait_for_message", email=email, subject="Reset", **{"from": "app@"}
        )
    assert found["subject"] == "Reset your password"


async def test_wait_for_message_after_an_id_waits_for_a_newer_one(
    mcp_server: InboxServer,
) -> None:
    async with agent(mcp_url(mcp_server)) as session:
        email = (await result(session, "generate_inbox"))["email"]
        send(mcp_server, make_message(email, "first"))
        first = await result(session, "wait_for_message", email=email)
        send(mcp_server, make_message(email, "second"))
        second = await result(session, "wait_for_message", email=email, after=first["id"])
    assert (first["subject"], second["subject"]) == ("first", "second")


async def test_wait_for_message_without_mail_is_a_tool_error_after_the_timeout(
    mcp_server: InboxServer,
) -> None:
    async with agent(mcp_url(mcp_server)) as session:
        email = (await result(session, "generate_inbox"))["email"]
        error = await failure(session, "wait_for_message", email=email, timeout=0.3, subject="x")
    assert error == f"no message with subject='x' arrived in {email} within 0.3 s"


async def test_read_message_picks_the_link_of_a_text(mcp_server: InboxServer) -> None:
    async with agent(mcp_url(mcp_server)) as session:
        email = (await result(session, "generate_inbox"))["email"]
        send(mcp_server, sign_up_mail(email))
        (listed,) = (await result(session, "list_messages", email=email))["messages"]
        read = await result(
            session, "read_message", email=email, id=listed["id"], link_text="confirm my account"
        )
        missing = await failure(
            session, "read_message", email=email, id=listed["id"], link_text="Unsubscribe"
        )
    assert read["link"] == "https://app.example/confirm?t=abc"
    assert read["code"] == "482913"
    assert "Unsubscribe" in missing
    assert "Confirm my account" in missing  # the links the message has, as link(text=) says


async def test_read_message_says_why_there_is_no_one_code(mcp_server: InboxServer) -> None:
    async with agent(mcp_url(mcp_server)) as session:
        email = (await result(session, "generate_inbox"))["email"]
        send(mcp_server, make_message(email, "Hello", "No code here.\n"))
        found = await result(session, "wait_for_message", email=email)
    assert found["code"] is None
    assert found["code_problem"]


async def test_list_messages_lists_the_inbox_oldest_first(mcp_server: InboxServer) -> None:
    async with agent(mcp_url(mcp_server)) as session:
        email = (await result(session, "generate_inbox"))["email"]
        assert await result(session, "list_messages", email=email) == {"messages": []}
        send(mcp_server, make_message(email, "one"))
        send(mcp_server, make_message(email, "two"))
        listed = (await result(session, "list_messages", email=email))["messages"]
    assert [item["subject"] for item in listed] == ["one", "two"]
    assert set(listed[0]) == {"id", "inbox", "subject", "from", "to", "received_at"}


async def test_delete_inbox_deletes_it_and_its_mail(mcp_server: InboxServer) -> None:
    async with agent(mcp_url(mcp_server)) as session:
        email = (await result(session, "generate_inbox"))["email"]
        send(mcp_server, make_message(email))
        deleted = await result(session, "delete_inbox", email=email)
        after = await failure(session, "list_messages", email=email)
    problem = requests.get(f"{mcp_server.api_url}/messages/{email}", timeout=10).json()
    assert deleted == {"email": email, "deleted": True, "purged": 1}
    assert after == problem["detail"]


async def test_an_unknown_inbox_fails_with_the_apis_own_words(mcp_server: InboxServer) -> None:
    email = "nobody@tempinbox.test"
    problem = requests.get(f"{mcp_server.api_url}/messages/{email}", timeout=10).json()
    async with agent(mcp_url(mcp_server)) as session:
        for tool in ("list_messages", "wait_for_message", "delete_inbox"):
            assert await failure(session, tool, email=email) == problem["detail"]


async def test_bad_arguments_are_tool_errors_saying_what_is_wrong(
    mcp_server: InboxServer,
) -> None:
    async with agent(mcp_url(mcp_server)) as session:
        email = (await result(session, "generate_inbox"))["email"]
        assert await failure(session, "list_messages") == "email is required"
        assert await failure(session, "list_messages", email=3) == "email must be a string"
        assert await failure(session, "generate_inbox", ttl=True) == "ttl must be a number"
        assert await failure(session, "generate_inbox", size=3) == (
            "unknown argument(s): 'size'; known: prefix, domain, ttl"
        )
        too_long = await failure(session, "wait_for_message", email=email, timeout=MAX_WAIT + 1)
        bad_domain = await failure(session, "generate_inbox", domain="elsewhere.example")
        unknown = await failure(session, "send_mail")
    assert too_long == f"wait must be a number of seconds from 0 to {MAX_WAIT:g}"
    assert "elsewhere.example" in bad_domain
    assert unknown.startswith("no such tool: 'send_mail'; known: generate_inbox")
