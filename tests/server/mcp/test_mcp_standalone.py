"""The standalone server with ``--mcp``: the SDK's client over real sockets, on each store."""

from __future__ import annotations

import signal
import smtplib

import pytest

from ...helpers import CLIENT_NAME, Standalone, make_message
from .mcp_support import agent, result


@pytest.mark.asyncio
@pytest.mark.parametrize("store", ["memory", "redis"])
async def test_the_standalone_server_serves_the_tools_at_mcp(
    request: pytest.FixtureRequest, store: str
) -> None:
    if store == "redis":
        store = request.getfixturevalue("redis_url")
    process = Standalone("--smtp-port", "0", "--api-port", "0", "--store", store, "--mcp")
    try:
        host, port, api = process.read_addresses()
        async with agent(api.removesuffix("/api") + "/mcp") as session:
            tools = [tool.name for tool in (await session.list_tools()).tools]
            email = (await result(session, "generate_inbox"))["email"]
            with smtplib.SMTP(host, port, local_hostname=CLIENT_NAME) as client:
                client.send_message(make_message(email, "Your code: 771204"))
            found = await result(session, "wait_for_message", email=email, timeout=10)
        status, _, stderr = process.stop(signal.SIGTERM)
    finally:
        if process.process.poll() is None:
            process.process.kill()
            process.process.communicate()
    assert "wait_for_message" in tools
    assert (found["subject"], found["code"]) == ("Your code: 771204", "771204")
    assert status == 0, stderr
