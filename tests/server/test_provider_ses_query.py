"""boto3's ``ses`` client (SES v1's query API) sends to ``provider_url("ses")``; mail arrives."""

from __future__ import annotations

import json
from email.mime.application import MIMEApplication
from email.mime.multipart import MIMEMultipart
from email.mime.text import MIMEText
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from mypy_boto3_ses import SESClient
from mypy_boto3_ses.type_defs import DestinationTypeDef, MessageTypeDef

from pytest_tempinbox import InboxServer, TempInboxClient
from pytest_tempinbox.client.inbox import Inbox

SENDER = "App <app@example.com>"
MESSAGE: MessageTypeDef = {
    "Subject": {"Data": "Welcome"},
    "Body": {
        "Text": {"Data": "Your code is 482913"},
        "Html": {"Data": '<a href="https://app.test/confirm">Confirm</a>'},
    },
}


@pytest.fixture
def ses(provider_server: InboxServer) -> SESClient:
    """boto3's SES v1 client of the server, with fake keys and a region."""
    return boto3.client(
        "ses",
        endpoint_url=provider_server.provider_url("ses"),
        region_name="us-east-1",
        aws_access_key_id="AKIATESTKEY",
        aws_secret_access_key="secret",
    )


def test_send_email_answers_its_message_id_and_delivers_text_and_html(
    ses: SESClient, recipient: Inbox
) -> None:
    sent = ses.send_email(
        Source=SENDER, Destination={"ToAddresses": [recipient.address]}, Message=MESSAGE
    )
    message = recipient.wait_for_message(timeout=10)
    assert sent["MessageId"].startswith("0100")
    assert sent["ResponseMetadata"]["RequestId"]
    assert message.subject == "Welcome"
    assert message.link(text="Confirm") == "https://app.test/confirm"
    assert message.code() == "482913"


def test_send_email_gives_cc_and_bcc_each_a_copy(
    ses: SESClient, provider_client: TempInboxClient
) -> None:
    to, cc, bcc = (provider_client.generate() for _ in range(3))
    destination: DestinationTypeDef = {
        "ToAddresses": [to.address],
        "CcAddresses": [cc.address],
        "BccAddresses": [bcc.address],
    }
    ses.send_email(Source=SENDER, Destination=destination, Message=MESSAGE)
    for inbox in (to, cc, bcc):
        message = inbox.wait_for_message(timeout=10)
        assert bcc.address not in json.dumps(message.to_json()["headers"])


def test_tags_reply_to_and_configuration_set_are_kept(ses: SESClient, recipient: Inbox) -> None:
    ses.send_email(
        Source=SENDER,
        Destination={"ToAddresses": [recipient.address]},
        Message=MESSAGE,
        ReplyToAddresses=["support@example.com"],
        Tags=[{"Name": "category", "Value": "welcome"}],
        ConfigurationSetName="transactional",
    )
    message = recipient.wait_for_message(timeout=10)
    assert message.headers["reply-to"] == ("support@example.com",)
    provider = message.provider
    assert provider is not None
    assert (provider.endpoint, provider.metadata) == ("/?Action=SendEmail", {"category": "welcome"})
    assert provider.options["ConfigurationSetName"] == "transactional"
    assert provider.options["access_key_id"] == "AKIATESTKEY"


def raw_message(to: str, *, custom: str = "") -> bytes:
    """A MIME message to ``to`` with a text body, a PDF attachment and a custom header."""
    message = MIMEMultipart()
    message["From"], message["To"], message["Subject"] = SENDER, to, "Report"
    message["X-Custom"] = custom or "raw"
    message.attach(MIMEText("See the report, code 482913"))
    report = MIMEApplication(b"%PDF-1.4", "pdf")
    report.add_header("Content-Disposition", "attachment", filename="report.pdf")
    message.attach(report)
    return message.as_bytes()


def test_send_raw_email_delivers_the_message_to_its_headers_addresses(
    ses: SESClient, recipient: Inbox
) -> None:
    ses.send_raw_email(RawMessage={"Data": raw_message(recipient.address)})
    message = recipient.wait_for_message(timeout=10)
    assert message.attachment("report.pdf").content() == b"%PDF-1.4"
    assert message.headers["x-custom"] == ("raw",)
    assert message.provider is not None
    assert message.provider.endpoint == "/?Action=SendRawEmail"


def test_send_raw_email_goes_to_its_destinations_not_its_headers(
    ses: SESClient, provider_client: TempInboxClient
) -> None:
    named, destined = provider_client.generate(), provider_client.generate()
    ses.send_raw_email(
        Source="app@example.com",
        Destinations=[destined.address],
        RawMessage={"Data": raw_message(named.address)},
    )
    assert destined.wait_for_message(timeout=10).code() == "482913"
    named.assert_no_message(within=0.2)


def test_send_templated_email_keeps_the_template_name_and_data(
    ses: SESClient, recipient: Inbox
) -> None:
    ses.send_templated_email(
        Source=SENDER,
        Destination={"ToAddresses": [recipient.address]},
        Template="welcome",
        TemplateData='{"name": "Ada"}',
    )
    provider = recipient.wait_for_message(timeout=10).provider
    assert provider is not None
    assert (provider.template_id, provider.template_data) == ("welcome", {"name": "Ada"})


def test_get_send_quota_answers_a_quota(ses: SESClient) -> None:
    quota = ses.get_send_quota()
    assert quota["MaxSendRate"] >= 1
    assert quota["ResponseMetadata"]["RequestId"]


def test_no_live_recipient_is_a_sender_message_rejected(ses: SESClient) -> None:
    with pytest.raises(ClientError) as caught:
        ses.send_email(
            Source=SENDER, Destination={"ToAddresses": ["nobody@tempinbox.test"]}, Message=MESSAGE
        )
    error: dict[str, Any] = dict(caught.value.response["Error"])
    assert (error["Type"], error["Code"]) == ("Sender", "MessageRejected")
    assert "nobody@tempinbox.test" in error["Message"]
