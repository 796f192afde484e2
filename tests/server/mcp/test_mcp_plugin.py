"""The plugin's ``--tempinbox-mcp``: the session's server serves ``/mcp`` to the SDK's client."""

from __future__ import annotations

import pytest

_AGENT_TEST = """
import asyncio

import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client


async def tools(url):
    async with (
        httpx2.AsyncClient(timeout=60) as http,
        streamable_http_client(url, http_client=http) as streams,
        ClientSession(streams[0], streams[1]) as session,
    ):
        await session.initialize()
        listed = await session.list_tools()
        return sorted(tool.name for tool in listed.tools)


def test_agent(tempinbox_server):
    url = tempinbox_server.api_url.removesuffix("/api") + "/mcp"
    assert "wait_for_message" in asyncio.run(tools(url))
"""


def test_the_option_serves_mcp_on_the_session_s_server(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(_AGENT_TEST)
    pytester.runpytest_subprocess("--tempinbox-mcp").assert_outcomes(passed=1)


def test_the_ini_key_serves_it_too(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\ntempinbox_mcp = true\n")
    pytester.makepyfile(_AGENT_TEST)
    pytester.runpytest_subprocess().assert_outcomes(passed=1)


def test_without_the_option_there_is_no_mcp_route(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import requests

        def test_no_mcp(tempinbox_server):
            url = tempinbox_server.api_url.removesuffix("/api") + "/mcp"
            assert requests.post(url, json={}, timeout=10).status_code == 404
        """
    )
    pytester.runpytest_subprocess().assert_outcomes(passed=1)


def test_the_option_without_the_sdk_stops_the_run_with_one_line(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest('import sys\nsys.modules["mcp"] = None  # as if not installed\n')
    pytester.makepyfile("def test_one(tempinbox):\n    pass\n")
    result = pytester.runpytest_subprocess("--tempinbox-mcp")
    said = "\n".join(result.outlines + result.errlines)
    assert "needs the MCP SDK: pip install 'pytest-tempinbox[mcp]'" in said
    assert "passed" not in said
