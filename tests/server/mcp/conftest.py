"""The MCP endpoint's tests: skipped where the MCP SDK (the mcp extra) is not installed."""

from __future__ import annotations

import pytest

pytest.importorskip(
    "mcp", reason="the MCP SDK is not installed: pip install 'pytest-tempinbox[mcp]'"
)
