"""The MCP endpoint at ``/mcp``: the API's tools for agents, over MCP's streamable HTTP.

Served on the API's port when the server runs with ``mcp=True`` (``--mcp``),
with the official MCP SDK (the ``mcp`` extra, 2.x), imported only then: the HTTP
app builds :class:`McpEndpoint` when it is built, and the SDK's session
manager runs on the server's loop from the first request to ``/mcp`` until
the server stops (its task is cancelled with the loop's others).

The tools are :mod:`pytest_tempinbox.server.api.mcp_tools`'; this module is the
SDK's side of them: the low-level ``Server`` lists and calls them, a tool's
:class:`~..api.mcp_tools.ToolError` is an MCP tool error (``isError``) worded
as the API's problem, and its result is both structured content and the same
JSON as text. The session manager is stateless and answers in JSON (no
session to keep, no event stream to hold open): any server of several sharing
a Redis store answers any request, and a stop never waits for a client's
stream. With tenants, a request without a tenant's token is answered ``401``
before the SDK reads it, as the API answers one (``docs/mcp.md``).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..._version import __version__
from ..api.mcp_tools import TOOLS, ToolError, Tools
from ..api.settings import ApiSettings
from ..api.tenancy import caller
from ..store.protocol import InboxStore

if TYPE_CHECKING:
    from mcp.server.context import ServerRequestContext
    from mcp_types import (
        CallToolRequestParams,
        CallToolResult,
        ListToolsResult,
        PaginatedRequestParams,
    )
    from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["MCP_PATH", "McpEndpoint"]

MCP_PATH = "/mcp"


class McpEndpoint:
    """The ASGI app of ``/mcp``: the tools of ``store`` through the SDK's streamable HTTP."""

    def __init__(
        self, store: InboxStore, settings: ApiSettings, refusal: Callable[[], ASGIApp]
    ) -> None:
        """``refusal`` makes the API's own ``401``, for a request without a tenant's token."""
        from mcp.server.lowlevel import Server
        from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

        self.tools = Tools(store, settings)
        self.tenants = settings.config.tenants
        self._refusal = refusal
        server: Server[Any] = Server(
            "pytest-tempinbox",
            version=__version__,
            instructions=(
                "Disposable email inboxes: generate_inbox gives an address to sign up with; "
                "wait_for_message returns the mail it receives, with its links and code."
            ),
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            get_tool_input_schema=lambda name: TOOLS[name][1] if name in TOOLS else None,
        )
        self.manager = StreamableHTTPSessionManager(server, json_response=True, stateless=True)
        self._ready: asyncio.Event | None = None
        self._running: asyncio.Task[None] | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer one request to ``/mcp``; with tenants, only one carrying a tenant's token."""
        if self.tenants is not None:
            authorization = next(
                (value for name, value in scope["headers"] if name == b"authorization"), None
            )
            token = None if authorization is None else authorization.decode("latin-1")
            if caller(token, self.tenants) is None:
                await self._refusal()(scope, receive, send)
                return
        await self._started()
        await self.manager.handle_request(scope, receive, send)

    async def _started(self) -> None:
        # The session manager's task group lives in a task of its own, on the server's
        # loop, from the first request on; the loop cancels it when the server stops.
        if self._ready is None:
            self._ready = asyncio.Event()
            self._running = asyncio.get_running_loop().create_task(self._run(self._ready))
        await self._ready.wait()

    async def _run(self, ready: asyncio.Event) -> None:
        async with self.manager.run():
            ready.set()
            await asyncio.Event().wait()

    async def _list_tools(
        self, context: ServerRequestContext[Any], params: PaginatedRequestParams | None
    ) -> ListToolsResult:
        from mcp_types import ListToolsResult, Tool

        listed = [
            Tool(name=name, description=description, input_schema=schema)
            for name, (description, schema) in TOOLS.items()
        ]
        return ListToolsResult(tools=listed)

    async def _call_tool(
        self, context: ServerRequestContext[Any], params: CallToolRequestParams
    ) -> CallToolResult:
        from mcp_types import CallToolResult, TextContent

        request = context.request
        headers = getattr(request, "headers", {})
        base_url = str(getattr(request, "base_url", ""))
        try:
            result = await self.tools.call(params.name, params.arguments, headers, base_url)
        except ToolError as exc:
            return CallToolResult(content=[TextContent(text=str(exc))], is_error=True)
        text = json.dumps(result, ensure_ascii=False)
        return CallToolResult(content=[TextContent(text=text)], structured_content=result)
