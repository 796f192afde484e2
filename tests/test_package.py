"""The package's public surface, and that importing it stays cheap."""

from __future__ import annotations

import inspect
import subprocess
import sys

import pytest_tempinbox


def test_all_lists_exactly_the_public_names() -> None:
    public = {
        name
        for name, value in vars(pytest_tempinbox).items()
        if not name.startswith("_") and not inspect.ismodule(value)
    }
    public -= {"annotations", "TYPE_CHECKING", "Any"}  # the module's own imports
    public |= set(pytest_tempinbox._LAZY) | {"__version__"}  # loaded lazily
    assert pytest_tempinbox.__all__ == sorted(public)
    for name in pytest_tempinbox.__all__:
        assert getattr(pytest_tempinbox, name) is not None


def test_importing_the_package_does_not_import_the_server_stack() -> None:
    code = (
        "import sys, pytest_tempinbox;"
        "heavy = [m for m in ('aiosmtpd', 'starlette', 'uvicorn', 'requests') if m in sys.modules];"
        "print(','.join(heavy))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == ""


def test_the_server_and_client_load_on_first_use() -> None:
    from pytest_tempinbox.client.http import TempInboxClient
    from pytest_tempinbox.client.inbox import Inbox
    from pytest_tempinbox.server.inbox_server import InboxServer

    assert pytest_tempinbox.InboxServer is InboxServer
    assert pytest_tempinbox.TempInboxClient is TempInboxClient
    assert pytest_tempinbox.Inbox is Inbox
