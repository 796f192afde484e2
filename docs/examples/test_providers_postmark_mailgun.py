"""An application that sends through postmarker and the Mailgun SDK, tested against the server."""

from __future__ import annotations

import sys

import pytest
from postmarker.core import PostmarkClient

from pytest_tempinbox import Inbox, InboxServer


def test_postmark(tempinbox: Inbox, tempinbox_server: InboxServer) -> None:
    """postmarker, given the server's Postmark URL (its origin) as its root API URL."""
    # --8<-- [start:postmark]
    postmark = PostmarkClient(
        server_token="any", root_api_url=tempinbox_server.provider_url("postmark")
    )
    postmark.emails.send_with_template(
        TemplateAlias="welcome",
        TemplateModel={"name": "Ada"},
        From="app@example.com",
        To=tempinbox.address,
    )
    message = tempinbox.wait_for_message()
    assert message.provider is not None
    assert message.provider.template_id == "welcome"
    assert message.provider.template_data == {"name": "Ada"}
    # --8<-- [end:postmark]


@pytest.mark.skipif(sys.version_info < (3, 11), reason="the Mailgun SDK needs Python 3.11")
def test_mailgun(tempinbox: Inbox, tempinbox_server: InboxServer) -> None:
    """The Mailgun SDK, given the server's Mailgun URL as its API URL."""
    # --8<-- [start:mailgun]
    from mailgun.client import Client

    mailgun = Client(auth=("api", "any"), api_url=tempinbox_server.provider_url("mailgun"))
    mailgun.messages.create(
        domain="mg.example.com",
        data={
            "from": "App <app@example.com>",
            "to": tempinbox.address,
            "subject": "Your code",
            "text": "Your code is 482913",
        },
        files=[("attachment", ("terms.pdf", b"%PDF-1.4", "application/pdf"))],
    )
    message = tempinbox.wait_for_message(subject="Your code")
    assert message.code() == "482913"
    assert message.attachment("terms.pdf").content() == b"%PDF-1.4"
    # --8<-- [end:mailgun]
