"""boto3's ``sesv2`` client sends to ``provider_url("ses")``; the mail lands in the inboxes."""

from __future__ import annotations

import json
from email.mime.image import MIMEImage
from email.mime.multipart import MIMEMultipart
from email.mime.text import MIMEText
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from mypy_boto3_sesv2 import SESV2Client
from mypy_boto3_sesv2.type_defs import DestinationTypeDef

from pytest_tempinbox import InboxServer, TempInboxClient
from pytest_tempinbox.client.inbox import Inbox

SENDER = "App <app@example.com>"
HTML = '<p>Code 482913</p><a href="https://app.test/confirm">Confirm</a>'


@pytest.fixture
def sesv2(provider_server: InboxServer) -> SESV2Client:
    """boto3's SES v2 client of the server, with fake keys and a region."""
    return boto3.client(
        "sesv2",
        endpoint_url=provider_server.provider_url("ses"),
        region_name="eu-west-1",
        aws_access_key_id="AKIATESTKEY",
        aws_secret_access_key="secret",
    )


def simple(**fields: Any) -> Any:
    """A ``Content.Simple`` of a subject, a text and an HTML body, and ``fields``."""
    body = {"Text": {"Data": "Your code is 482913"}, "Html": {"Data": HTML}}
    return {"Simple": {"Subject": {"Data": "Welcome"}, "Body": body, **fields}}


def test_a_send_answers_its_message_id_and_a_request_id(
    sesv2: SESV2Client, recipient: Inbox
) -> None:
    sent = sesv2.send_email(
        FromEmailAddress=SENDER, Destination={"ToAddresses": [recipient.address]}, Content=simple()
    )
    assert sent["MessageId"].startswith("0100")
    assert sent["ResponseMetadata"]["RequestId"]


def test_text_and_html_arrive_with_their_link_and_code(
    sesv2: SESV2Client, recipient: Inbox
) -> None:
    sesv2.send_email(
        FromEmailAddress=SENDER, Destination={"ToAddresses": [recipient.address]}, Content=simple()
    )
    message = recipient.wait_for_message(timeout=10)
    assert message.sender is not None
    assert (message.sender.name, message.subject) == ("App", "Welcome")
    assert message.link(text="Confirm") == "https://app.test/confirm"
    assert message.code() == "482913"


def test_an_attachment_and_an_inline_image_arrive(sesv2: SESV2Client, recipient: Inbox) -> None:
    attachments = [
        {"FileName": "report.pdf", "RawContent": b"%PDF-1.4", "ContentDisposition": "ATTACHMENT"},
        {
            "FileName": "logo.png",
            "RawContent": b"\x89PNG",
            "ContentType": "image/png",
            "ContentDisposition": "INLINE",
            "ContentId": "logo",
        },
    ]
    content = simple(Attachments=attachments)
    content["Simple"]["Body"]["Html"]["Data"] = '<img src="cid:logo">'
    sesv2.send_email(
        FromEmailAddress=SENDER, Destination={"ToAddresses": [recipient.address]}, Content=content
    )
    message = recipient.wait_for_message(timeout=10)
    assert message.attachment("report.pdf").content_type == "application/pdf"
    assert message.attachment("report.pdf").content() == b"%PDF-1.4"
    assert message.attachment("logo.png", inline=True).content_id == "logo"


def test_headers_tags_configuration_set_and_key_are_in_the_record(
    sesv2: SESV2Client, recipient: Inbox
) -> None:
    sesv2.send_email(
        FromEmailAddress=SENDER,
        Destination={"ToAddresses": [recipient.address]},
        Content=simple(Headers=[{"Name": "X-Campaign", "Value": "spring"}]),
        EmailTags=[{"Name": "category", "Value": "welcome"}],
        ConfigurationSetName="transactional",
    )
    message = recipient.wait_for_message(timeout=10)
    assert message.headers["x-campaign"] == ("spring",)
    provider = message.provider
    assert provider is not None
    assert (provider.name, provider.endpoint) == ("ses", "/v2/email/outbound-emails")
    assert (provider.tags, provider.metadata) == (("category",), {"category": "welcome"})
    assert provider.headers == {"X-Campaign": "spring"}
    assert provider.options == {
        "ConfigurationSetName": "transactional",
        "access_key_id": "AKIATESTKEY",
        "region": "eu-west-1",
    }


def test_cc_and_bcc_each_get_a_copy_and_bcc_is_not_written(
    sesv2: SESV2Client, provider_client: TempInboxClient
) -> None:
    to, cc, bcc = (provider_client.generate() for _ in range(3))
    destination: DestinationTypeDef = {
        "ToAddresses": [to.address],
        "CcAddresses": [cc.address],
        "BccAddresses": [bcc.address],
    }
    sesv2.send_email(FromEmailAddress=SENDER, Destination=destination, Content=simple())
    for inbox in (to, cc, bcc):
        message = inbox.wait_for_message(timeout=10)
        assert bcc.address not in json.dumps(message.to_json()["headers"])


def raw_message(to: str, *, inline_image: bool = False) -> bytes:
    """A MIME message to ``to``, its HTML with an inline image when asked."""
    message = MIMEMultipart("related")
    message["From"], message["To"], message["Subject"] = SENDER, to, "Raw"
    message.attach(MIMEText('<img src="cid:logo"><a href="https://app.test/r">Open</a>', "html"))
    if inline_image:
        image = MIMEImage(b"\x89PNG\r\n\x1a\n", "png")
        image.add_header("Content-ID", "<logo>")
        image.add_header("Content-Disposition", "inline", filename="logo.png")
        message.attach(image)
    return message.as_bytes()


def test_a_raw_message_is_stored_as_it_is_with_its_inline_image(
    sesv2: SESV2Client, recipient: Inbox
) -> None:
    raw = raw_message(recipient.address, inline_image=True)
    sesv2.send_email(Content={"Raw": {"Data": raw}})
    message = recipient.wait_for_message(timeout=10)
    assert message.raw() == raw
    assert message.attachment("logo.png", inline=True).content_id == "logo"
    assert message.link(text="Open") == "https://app.test/r"


def test_a_raw_message_goes_to_its_destination_not_its_headers(
    sesv2: SESV2Client, provider_client: TempInboxClient
) -> None:
    named, destined = provider_client.generate(), provider_client.generate()
    sesv2.send_email(
        Destination={"BccAddresses": [destined.address]},
        Content={"Raw": {"Data": raw_message(named.address)}},
    )
    assert destined.wait_for_message(timeout=10).subject == "Raw"
    named.assert_no_message(within=0.2)


def test_a_template_send_keeps_the_template_name_and_data(
    sesv2: SESV2Client, recipient: Inbox
) -> None:
    sesv2.send_email(
        FromEmailAddress=SENDER,
        Destination={"ToAddresses": [recipient.address]},
        Content={"Template": {"TemplateName": "welcome", "TemplateData": '{"name": "Ada"}'}},
    )
    message = recipient.wait_for_message(timeout=10)
    assert message.provider is not None
    assert (message.provider.template_id, message.provider.template_data) == (
        "welcome",
        {"name": "Ada"},
    )
    assert "welcome" in (message.text or "")


def test_a_bulk_send_answers_each_entry_in_order_and_delivers_its_data(
    sesv2: SESV2Client, provider_client: TempInboxClient
) -> None:
    ada, bob = provider_client.generate(), provider_client.generate()
    entries: list[Any] = [
        {
            "Destination": {"ToAddresses": [ada.address]},
            "ReplacementEmailContent": {
                "ReplacementTemplate": {"ReplacementTemplateData": '{"name": "Ada"}'}
            },
        },
        {"Destination": {"ToAddresses": ["nobody@tempinbox.test"]}},
        {"Destination": {"ToAddresses": [bob.address]}},
    ]
    sent = sesv2.send_bulk_email(
        FromEmailAddress=SENDER,
        DefaultContent={"Template": {"TemplateName": "welcome", "TemplateData": '{"name": "you"}'}},
        BulkEmailEntries=entries,
    )
    statuses = [result["Status"] for result in sent["BulkEmailEntryResults"]]
    assert statuses == ["SUCCESS", "FAILED", "SUCCESS"]
    for inbox, name in ((ada, "Ada"), (bob, "you")):
        provider = inbox.wait_for_message(timeout=10).provider
        assert provider is not None
        assert (provider.endpoint, provider.template_data) == (
            "/v2/email/outbound-bulk-emails",
            {"name": name},
        )


def test_get_account_answers_a_send_quota(sesv2: SESV2Client) -> None:
    account = sesv2.get_account()
    assert account["SendQuota"]["MaxSendRate"] >= 1
    assert account["ProductionAccessEnabled"] is True


def test_no_live_recipient_is_message_rejected(sesv2: SESV2Client) -> None:
    with pytest.raises(ClientError) as caught:
        sesv2.send_email(
            FromEmailAddress=SENDER,
            Destination={"ToAddresses": ["nobody@tempinbox.test"]},
            Content=simple(),
        )
    error = caught.value.response["Error"]
    assert error["Code"] == "MessageRejected"
    assert "nobody@tempinbox.test" in error["Message"]


def test_a_send_without_a_body_is_a_bad_request(sesv2: SESV2Client, recipient: Inbox) -> None:
    with pytest.raises(ClientError) as caught:
        sesv2.send_email(
            FromEmailAddress=SENDER,
            Destination={"ToAddresses": [recipient.address]},
            Content={"Simple": {"Subject": {"Data": "Hi"}, "Body": {}}},
        )
    assert caught.value.response["Error"]["Code"] == "BadRequestException"
    recipient.assert_no_message(within=0.2)


def test_a_utf8_subject_name_and_body_arrive_as_sent(sesv2: SESV2Client, recipient: Inbox) -> None:
    content = simple()
    content["Simple"]["Subject"] = {"Data": "Bienvenue, Zoë", "Charset": "UTF-8"}
    content["Simple"]["Body"] = {"Text": {"Data": "Votre code : 482913 ✓", "Charset": "UTF-8"}}
    sesv2.send_email(
        FromEmailAddress="Café <app@example.com>",
        Destination={"ToAddresses": [recipient.address]},
        Content=content,
    )
    message = recipient.wait_for_message(timeout=10)
    assert message.sender is not None
    assert (message.subject, message.sender.name) == ("Bienvenue, Zoë", "Café")
    assert "482913 ✓" in (message.text or "")
