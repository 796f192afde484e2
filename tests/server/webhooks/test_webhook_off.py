"""Without a webhook nothing of them is loaded; an in-process deletion is announced too."""

from __future__ import annotations

import subprocess
import sys

from pytest_tempinbox import TempInboxClient
from pytest_tempinbox.server.inbox_server import InboxServer
from pytest_tempinbox.server.store.memory.store import Store

from .webhooks_support import Receiver, send


def test_a_server_without_a_webhook_never_imports_them() -> None:
    script = (
        "import smtplib, sys, urllib.request\n"
        "from pytest_tempinbox.server.inbox_server import InboxServer\n"
        "with InboxServer() as server:\n"
        "    request = urllib.request.Request(server.api_url + '/generate', method='POST')\n"
        "    urllib.request.urlopen(request).read()\n"
        "print(sorted(name for name in sys.modules if 'webhook' in name))\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert run.stdout.strip() == "[]"


def test_a_server_without_a_webhook_keeps_its_store_as_it_is() -> None:
    server = InboxServer()
    assert type(server.store) is Store
    assert server.webhooks is None
    assert server.counters.webhooks is None


def test_a_deletion_through_the_in_process_transport_is_posted() -> None:
    with Receiver() as receiver, InboxServer(webhooks=[receiver.url]) as server:
        client = TempInboxClient(server.api_url, transport=server.local_transport())
        with client:
            inbox = client.generate()
            send(server, inbox.address)
            receiver.wait_for(1)
            inbox.delete()  # from this thread, not the server's loop
            hits = receiver.wait_for(2)
    assert hits[1].json()["event"] == "inbox.deleted"
