"""The Python client on its own: every call of the HTTP API, typed."""

from __future__ import annotations

import smtplib

import pytest

from pytest_tempinbox import InboxNotFound, TempInboxClient
from pytest_tempinbox.plugin import TempInboxServer


def test_the_client_by_hand(tempinbox_server: TempInboxServer) -> None:
    """Generate, read, wait, fetch and delete with a TempInboxClient of one's own."""
    api_url = tempinbox_server.api_url  # for example http://127.0.0.1:8025/api
    smtp_host, smtp_port = tempinbox_server.smtp_host, tempinbox_server.smtp_port

    # --8<-- [start:client]
    with TempInboxClient(api_url) as client:
        inbox = client.generate(prefix="signup")  # an Inbox: signup-...@tempinbox.test
        assert client.messages(inbox.address) == []

        with smtplib.SMTP(smtp_host, smtp_port, local_hostname="localhost") as smtp:
            smtp.sendmail("app@example.com", [inbox.address], b"Subject: Hi\r\n\r\nHello\r\n")

        (message,) = client.messages(inbox.address, wait=10)  # long-polls up to 10 s
        assert client.message(inbox.address, message.id) == message
        assert client.raw(inbox.address, message.id).startswith(b"Subject: Hi")
        assert client.messages(inbox.address, after=message.id) == []
        assert client.info()["smtp"]["port"] == smtp_port

        assert client.delete(inbox.address) == 1  # how many messages were purged
        with pytest.raises(InboxNotFound) as raised:  # the address is gone
            client.messages(inbox.address)
        assert (raised.value.code, raised.value.status) == ("inbox_not_found", 404)
    # --8<-- [end:client]
