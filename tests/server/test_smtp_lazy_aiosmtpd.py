"""aiosmtpd is imported with the first connection the fast lane hands over, not before.

Importing aiosmtpd (and attrs with it) costs about 20 ms with bytecode cached,
a third of the first test's wait for the server, and a plain conversation never
needs it. Each check runs in a fresh interpreter, where nothing else has
imported aiosmtpd yet.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

_PROGRAM = """
import smtplib, sys
from pytest_tempinbox.server.inbox_server import InboxServer

with InboxServer(hostname="mx.lane.test", smtp_auth={auth!r}) as server:
    address = server.store.generate().address
    with smtplib.SMTP(server.smtp_host, server.smtp_port, local_hostname="client.test") as client:
        {login}
        client.sendmail("app@example.test", [address], b"Subject: hi\\r\\n\\r\\nHello.\\r\\n")
    assert len(server.store.messages(address)) == 1
    print("aiosmtpd.smtp" in sys.modules)
"""


@pytest.mark.parametrize(
    ("auth", "login", "imported"),
    [
        ("any", "pass", False),
        ("any", "client.login('user', 'password')", True),
        ("user:password", "client.login('user', 'password')", True),
    ],
    ids=["plain conversation", "AUTH, handed over", "AUTH required from the start"],
)
def test_aiosmtpd_is_imported_only_when_a_connection_needs_it(
    auth: str, login: str, imported: bool
) -> None:
    program = _PROGRAM.format(auth=auth, login=login)
    result = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(imported)
