"""Resend's official SDK sends to ``provider_url("resend")``; the mail lands in the inboxes."""

from __future__ import annotations

import base64
from typing import Any

import pytest
import resend

from pytest_tempinbox import InboxServer, TempInboxClient
from pytest_tempinbox.client.inbox import Inbox

SENDER = "App <app@example.com>"


def params(to: str | list[str], **fields: Any) -> resend.Emails.SendParams:
    """A text and HTML send to ``to``."""
    found: dict[str, Any] = {
        "from": SENDER,
        "to": to,
        "subject": "Welcome",
        "text": "Your code is 482913",
        "html": '<p>Code 482913</p><a href="https://app.test/confirm">Confirm</a>',
        **fields,
    }
    return found  # type: ignore[return-value]


def test_a_send_answers_its_id(emails: type[resend.Emails], recipient: Inbox) -> None:
    sent = emails.send(params(recipient.address))
    assert len(sent["id"]) == 36


def test_text_and_html_arrive_with_their_link_and_code(
    emails: type[resend.Emails], recipient: Inbox
) -> None:
    emails.send(params(recipient.address))
    message = recipient.wait_for_message(timeout=10)
    assert message.sender is not None
    assert (message.sender.name, message.subject) == ("App", "Welcome")
    assert message.link(text="Confirm") == "https://app.test/confirm"
    assert message.code() == "482913"


def test_attachments_as_base64_and_as_bytes_and_an_inline_image_arrive(
    emails: type[resend.Emails], recipient: Inbox
) -> None:
    attachments = [
        {"filename": "report.pdf", "content": base64.b64encode(b"%PDF-1.4").decode()},
        {"filename": "notes.txt", "content": list(b"plain notes")},
        {"filename": "logo.png", "content": list(b"\x89PNG"), "content_id": "logo"},
    ]
    html = '<img src="cid:logo">'
    emails.send(params(recipient.address, html=html, attachments=attachments))
    message = recipient.wait_for_message(timeout=10)
    assert message.attachment("report.pdf").content_type == "application/pdf"
    assert message.attachment("notes.txt").content() == b"plain notes"
    assert message.attachment("logo.png", inline=True).content_id == "logo"


def test_headers_tags_and_schedule_are_in_the_record(
    emails: type[resend.Emails], recipient: Inbox
) -> None:
    emails.send(
        params(
            recipient.address,
            headers={"X-Entity-Ref-ID": "123"},
            tags=[{"name": "category", "value": "welcome"}],
            scheduled_at="2026-12-01T09:00:00Z",
        )
    )
    message = recipient.wait_for_message(timeout=10)
    assert message.headers["x-entity-ref-id"] == ("123",)
    provider = message.provider
    assert provider is not None
    assert (provider.name, provider.endpoint) == ("resend", "/emails")
    assert provider.tags == ("category",)
    assert provider.metadata == {"category": "welcome"}
    assert provider.options == {"scheduled_at": "2026-12-01T09:00:00Z"}


def test_cc_and_bcc_each_get_a_copy(
    emails: type[resend.Emails], provider_client: TempInboxClient
) -> None:
    to, cc, bcc = (provider_client.generate() for _ in range(3))
    emails.send(params([to.address], cc=cc.address, bcc=[bcc.address]))
    for inbox in (to, cc, bcc):
        assert inbox.wait_for_message(timeout=10).subject == "Welcome"


def test_a_template_send_carries_the_template_id_and_variables(
    emails: type[resend.Emails], recipient: Inbox
) -> None:
    template = {"id": "welcome-email", "variables": {"name": "Ada"}}
    emails.send(params(recipient.address, text=None, html=None, template=template))
    provider = recipient.wait_for_message(timeout=10).provider
    assert provider is not None
    assert (provider.template_id, provider.template_data) == ("welcome-email", {"name": "Ada"})


def test_a_batch_answers_the_ids_in_order_and_delivers_each(
    provider_server: InboxServer, emails: type[resend.Emails], provider_client: TempInboxClient
) -> None:
    ada, bob = provider_client.generate(), provider_client.generate()
    sent = resend.Batch.send([params(ada.address, subject="A"), params(bob.address, subject="B")])
    assert len(sent["data"]) == 2
    assert ada.wait_for_message(timeout=10).subject == "A"
    message = bob.wait_for_message(timeout=10)
    assert message.provider is not None
    assert message.provider.endpoint == "/emails/batch"


def test_no_live_recipient_is_resends_validation_error(emails: type[resend.Emails]) -> None:
    with pytest.raises(resend.exceptions.ResendError) as caught:
        emails.send(params("nobody@tempinbox.test"))
    assert "no recipient is a live inbox" in caught.value.message


def test_a_missing_subject_is_resends_missing_required_field(
    emails: type[resend.Emails], recipient: Inbox
) -> None:
    with pytest.raises(resend.exceptions.ResendError) as caught:
        emails.send(params(recipient.address, subject=""))
    assert caught.value.error_type == "missing_required_field"


def test_a_remote_attachment_path_is_refused(emails: type[resend.Emails], recipient: Inbox) -> None:
    attachments = [{"filename": "a.pdf", "path": "https://example.com/a.pdf"}]
    with pytest.raises(resend.exceptions.ResendError) as caught:
        emails.send(params(recipient.address, attachments=attachments))
    assert caught.value.error_type == "invalid_attachment"
    recipient.assert_no_message(within=0.2)


def test_the_message_id_is_made_of_the_answered_id(
    emails: type[resend.Emails], recipient: Inbox
) -> None:
    sent = emails.send(params(recipient.address))
    message = recipient.wait_for_message(timeout=10)
    assert message.message_id == f"<{sent['id']}@resend.tempinbox.invalid>"
