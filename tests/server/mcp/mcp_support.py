"""An agent's side of the MCP endpoint: the SDK's own client over real sockets, and mail to read."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from email.message import EmailMessage
from typing import Any

import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult, TextContent

from pytest_tempinbox.server.inbox_server import InboxServer

from ...helpers import make_message, send


def mcp_url(server: InboxServer) -> str:
    """The MCP endpoint of ``server``."""
    return server.api_url.removesuffix("/api") + "/mcp"


@asynccontextmanager
async def agent(url: str, token: str | None = None) -> AsyncIterator[ClientSession]:
    """An initialized MCP session with the endpoint at ``url``, sending ``token`` if given."""
    headers = {} if token is None else {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=90) as http,
        streamable_http_client(url, http_client=http) as streams,
        ClientSession(streams[0], streams[1]) as session,
    ):
        await session.initialize()
        yield session


async def result(session: ClientSession, tool: str, **arguments: Any) -> Any:
    """The structured result of a tool call that must succeed (its text is the same JSON)."""
    called = await session.call_tool(tool, arguments)
    assert not called.is_error, f"{tool} failed: {error_text(called)}"
    assert json.loads(error_text(called)) == called.structured_content
    return called.structured_content


async def failure(session: ClientSession, tool: str, **arguments: Any) -> str:
    """The error text of a tool call that must fail as a tool error."""
    called = await session.call_tool(tool, arguments)
    assert called.is_error, f"{tool} succeeded: {called.structured_content}"
    return error_text(called)


def error_text(called: CallToolResult) -> str:
    """The text of a tool call's one content block."""
    (block,) = called.content
    assert isinstance(block, TextContent)
    return block.text


def sign_up_mail(address: str, subject: str = "Confirm your account") -> EmailMessage:
    """A sign-up mail with a code and a button, in text and HTML."""
    message = make_message(
        address, subject, "Your code is 482913.\nConfirm: https://app.example/confirm?t=abc\n"
    )
    message.add_alternative(
        "<p>Your code is <b>482913</b>.</p>"
        '<p><a href="https://app.example/confirm?t=abc">Confirm my account</a>'
        ' <a href="https://app.example/help">Help</a></p>',
        subtype="html",
    )
    return message


__all__ = ["agent", "error_text", "failure", "mcp_url", "result", "send", "sign_up_mail"]
