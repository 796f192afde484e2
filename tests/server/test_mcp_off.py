"""Without ``--mcp``: no MCP endpoint and the SDK never imported; without the SDK, one line."""

from __future__ import annotations

import subprocess
import sys

import pytest
import requests

from pytest_tempinbox._cli import main
from pytest_tempinbox.server.inbox_server import InboxServer

from .api_support import assert_problem


def test_without_mcp_there_is_no_mcp_route(server: InboxServer) -> None:
    endpoint = server.api_url.removesuffix("/api") + "/mcp"
    assert_problem(requests.post(endpoint, json={}, timeout=10), 404, "not_found")


def test_a_server_without_mcp_never_imports_the_sdk() -> None:
    script = (
        "import sys, urllib.request\n"
        "from pytest_tempinbox.server.inbox_server import InboxServer\n"
        "with InboxServer() as server:\n"
        "    urllib.request.urlopen(server.api_url + '/info').read()\n"
        "print(sorted(name for name in sys.modules\n"
        "             if name.split('.')[0] in {'mcp', 'mcp_types'}))\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert run.stdout.strip() == "[]"


def test_mcp_without_the_sdk_is_a_one_line_error_naming_the_extra(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "mcp", None)  # what find_spec reads as not installed
    status = main(["--smtp-port", "0", "--api-port", "0", "--mcp"])
    captured = capsys.readouterr()
    assert status == 1
    assert captured.out == ""
    assert captured.err == (
        "error: the MCP endpoint (--mcp) needs the MCP SDK: pip install 'pytest-tempinbox[mcp]'\n"
    )


def test_an_in_process_server_with_mcp_without_the_sdk_fails_to_start(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from pytest_tempinbox.errors import ServerStartError

    monkeypatch.setitem(sys.modules, "mcp", None)
    server = InboxServer(mcp=True)
    with pytest.raises(ServerStartError, match=r"pip install 'pytest-tempinbox\[mcp\]'"):
        server.start()
    assert not server.running
