"""postmarker, Postmark's most used SDK, sends to ``provider_url("postmark")``: the mail arrives."""

from __future__ import annotations

import base64

import pytest
from postmarker.core import PostmarkClient
from postmarker.exceptions import ClientError

from pytest_tempinbox import InboxServer, TempInboxClient
from pytest_tempinbox.client.inbox import Inbox

SENDER = "App <app@example.com>"
HTML = '<p>Your code is 482913</p><a href="https://app.test/confirm">Confirm</a>'


@pytest.fixture
def postmark(provider_server: InboxServer) -> PostmarkClient:
    """A postmarker client whose root API URL is the server's Postmark URL."""
    return PostmarkClient(
        server_token="any-token", root_api_url=provider_server.provider_url("postmark")
    )


def test_postmarks_url_is_the_origin_since_postmarker_drops_the_path(
    provider_server: InboxServer,
) -> None:
    url = provider_server.provider_url("postmark")
    assert provider_server.api_url == url + "/api"


def test_a_send_answers_postmarks_ok(postmark: PostmarkClient, recipient: Inbox) -> None:
    sent = postmark.emails.send(From=SENDER, To=recipient.address, Subject="Hi", TextBody="x")
    assert (sent["ErrorCode"], sent["Message"], sent["To"]) == (0, "OK", recipient.address)
    assert len(sent["MessageID"]) == 36


def test_text_and_html_arrive_with_their_link_and_code(
    postmark: PostmarkClient, recipient: Inbox
) -> None:
    postmark.emails.send(
        From=SENDER, To=recipient.address, Subject="Welcome", TextBody="482913", HtmlBody=HTML
    )
    message = recipient.wait_for_message(timeout=10)
    assert message.sender is not None
    assert (message.sender.name, message.subject) == ("App", "Welcome")
    assert message.link(text="Confirm") == "https://app.test/confirm"
    assert message.code() == "482913"


def test_an_attachment_and_an_inline_image_arrive(
    postmark: PostmarkClient, recipient: Inbox
) -> None:
    attachments = [
        {"Name": "report.pdf", "Content": base64.b64encode(b"%PDF-1.4").decode()},
        ("logo.png", base64.b64encode(b"\x89PNG").decode(), "image/png", "cid:logo"),
    ]
    postmark.emails.send(
        From=SENDER,
        To=recipient.address,
        Subject="Report",
        HtmlBody='<img src="cid:logo">',
        Attachments=attachments,
    )
    message = recipient.wait_for_message(timeout=10)
    assert message.attachment("report.pdf").content() == b"%PDF-1.4"
    assert message.attachment("logo.png", inline=True).content_id == "logo"


def test_headers_tag_metadata_and_stream_are_kept(
    postmark: PostmarkClient, recipient: Inbox
) -> None:
    postmark.emails.send(
        From=SENDER,
        To=recipient.address,
        Subject="Hi",
        TextBody="x",
        ReplyTo="help@example.com",
        Headers={"X-Entity-Ref-ID": "123"},
        Tag="welcome",
        Metadata={"user": "42"},
        MessageStream="outbound",
        TrackOpens=True,
    )
    message = recipient.wait_for_message(timeout=10)
    assert message.headers["x-entity-ref-id"] == ("123",)
    assert [address.email for address in message.reply_to] == ["help@example.com"]
    provider = message.provider
    assert provider is not None
    assert (provider.name, provider.endpoint) == ("postmark", "/email")
    assert (provider.tags, provider.metadata) == (("welcome",), {"user": "42"})
    assert provider.options["MessageStream"] == "outbound"
    assert provider.options["TrackOpens"] is True


def test_cc_and_bcc_each_get_a_copy_the_bcc_unwritten(
    postmark: PostmarkClient, provider_client: TempInboxClient
) -> None:
    to, cc, bcc = (provider_client.generate() for _ in range(3))
    postmark.emails.send(
        From=SENDER, To=[to.address], Cc=cc.address, Bcc=bcc.address, Subject="Hi", TextBody="x"
    )
    for inbox in (to, cc, bcc):
        message = inbox.wait_for_message(timeout=10)
        assert bcc.address not in str(message.headers)


def test_a_template_send_keeps_its_alias_and_model(
    postmark: PostmarkClient, recipient: Inbox
) -> None:
    postmark.emails.send_with_template(
        TemplateAlias="welcome", TemplateModel={"name": "Ada"}, From=SENDER, To=recipient.address
    )
    message = recipient.wait_for_message(timeout=10)
    provider = message.provider
    assert provider is not None
    assert (provider.endpoint, provider.template_id) == ("/email/withTemplate", "welcome")
    assert provider.template_data == {"name": "Ada"}
    assert message.text is not None
    assert "'welcome'" in message.text


def test_a_batch_answers_each_message_in_order(
    postmark: PostmarkClient, provider_client: TempInboxClient
) -> None:
    ada, bob = provider_client.generate(), provider_client.generate()
    sent = postmark.emails.send_batch(
        {"From": SENDER, "To": ada.address, "Subject": "A", "TextBody": "x"},
        {"From": SENDER, "To": "nobody@tempinbox.test", "Subject": "N", "TextBody": "x"},
        {"From": SENDER, "To": bob.address, "Subject": "B", "TextBody": "x"},
    )
    assert [answer["ErrorCode"] for answer in sent] == [0, 406, 0]
    assert [answer.get("To") for answer in sent] == [ada.address, None, bob.address]
    assert ada.wait_for_message(timeout=10).subject == "A"
    assert bob.wait_for_message(timeout=10).subject == "B"


def test_a_template_batch_delivers_each_with_its_model(
    postmark: PostmarkClient, provider_client: TempInboxClient
) -> None:
    ada, bob = provider_client.generate(), provider_client.generate()
    postmark.emails.send_template_batch(
        *(
            {"From": SENDER, "To": inbox.address, "TemplateId": 7, "TemplateModel": {"n": n}}
            for n, inbox in enumerate((ada, bob))
        )
    )
    for n, inbox in enumerate((ada, bob)):
        provider = inbox.wait_for_message(timeout=10).provider
        assert provider is not None
        assert (provider.endpoint, provider.template_id) == ("/email/batchWithTemplates", "7")
        assert provider.template_data == {"n": n}


def test_no_live_recipient_is_postmarks_inactive_recipient_error(
    postmark: PostmarkClient,
) -> None:
    with pytest.raises(ClientError) as caught:
        postmark.emails.send(From=SENDER, To="nobody@tempinbox.test", Subject="x", TextBody="x")
    assert caught.value.error_code == 406
    assert "nobody@tempinbox.test" in str(caught.value)


def test_a_recipient_not_live_beside_a_live_one_is_named_in_the_message(
    postmark: PostmarkClient, recipient: Inbox
) -> None:
    to = f"{recipient.address}, nobody@tempinbox.test"
    sent = postmark.emails.send(From=SENDER, To=to, Subject="Hi", TextBody="x")
    assert sent["ErrorCode"] == 0
    assert "inactive addresses: nobody@tempinbox.test." in sent["Message"]


def test_an_invalid_address_is_postmarks_invalid_email_request(
    postmark: PostmarkClient,
) -> None:
    with pytest.raises(ClientError) as caught:
        postmark.emails.send(From=SENDER, To="not-an-address", Subject="x", TextBody="x")
    assert caught.value.error_code == 300
    assert "Invalid 'To' address" in str(caught.value)


def test_the_message_id_is_made_of_the_answered_id(
    postmark: PostmarkClient, recipient: Inbox
) -> None:
    sent = postmark.emails.send(From=SENDER, To=recipient.address, Subject="x", TextBody="x")
    message = recipient.wait_for_message(timeout=10)
    assert message.message_id == f"<{sent['MessageID']}@postmark.tempinbox.invalid>"
