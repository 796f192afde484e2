"""SendGrid's official SDK sends to ``provider_url("sendgrid")``; the mail lands in the inboxes."""

from __future__ import annotations

import base64
import json
import smtplib

import pytest
import requests
from python_http_client.exceptions import BadRequestsError
from sendgrid import SendGridAPIClient
from sendgrid.helpers.mail import (
    Attachment,
    Category,
    Cc,
    ContentId,
    CustomArg,
    Disposition,
    FileContent,
    FileName,
    FileType,
    Header,
    Mail,
    Personalization,
    To,
)

from pytest_tempinbox import InboxServer, TempInboxClient
from pytest_tempinbox.client.inbox import Inbox

from .providers_support import answer, post

SENDER = "app@example.com"


def sendgrid(server: InboxServer) -> SendGridAPIClient:
    """The SDK's client, pointed at ``server``."""
    return SendGridAPIClient(api_key="SG.test-key", host=server.provider_url("sendgrid"))


def mail(to: str, **fields: object) -> Mail:
    """A text and HTML send to ``to``."""
    defaults: dict[str, object] = {
        "subject": "Welcome",
        "plain_text_content": "Your code is 482913",
        "html_content": '<p>Code 482913</p><a href="https://app.test/confirm">Confirm</a>',
    }
    return Mail(from_email=SENDER, to_emails=to, **{**defaults, **fields})


def test_a_send_is_accepted_with_202_an_empty_body_and_a_message_id(
    provider_server: InboxServer, recipient: Inbox
) -> None:
    response = sendgrid(provider_server).send(mail(recipient.address))
    assert response.status_code == 202
    assert response.body == b""
    assert len(response.headers["X-Message-Id"]) == 22


def test_text_and_html_arrive_with_their_link_and_code(
    provider_server: InboxServer, recipient: Inbox
) -> None:
    sendgrid(provider_server).send(mail(recipient.address))
    message = recipient.wait_for_message(timeout=10)
    assert message.subject == "Welcome"
    assert message.link(text="Confirm") == "https://app.test/confirm"
    assert message.code() == "482913"
    assert message.envelope.mail_from == SENDER


def test_the_provider_record_is_on_the_message(
    provider_server: InboxServer, recipient: Inbox
) -> None:
    send = mail(recipient.address)
    send.category = Category("welcome")
    send.custom_arg = CustomArg("user_id", "7")
    sendgrid(provider_server).send(send)
    provider = recipient.wait_for_message(timeout=10).provider
    assert provider is not None
    assert (provider.name, provider.endpoint) == ("sendgrid", "/v3/mail/send")
    assert provider.tags == ("welcome",)
    assert provider.metadata == {"user_id": "7"}


def test_an_attachment_and_an_inline_image_arrive(
    provider_server: InboxServer, recipient: Inbox
) -> None:
    send = mail(recipient.address, html_content='<img src="cid:logo"><p>Hi</p>')
    pdf = base64.b64encode(b"%PDF-1.4 report").decode()
    png = base64.b64encode(b"\x89PNG fake").decode()
    send.add_attachment(
        Attachment(FileContent(pdf), FileName("report.pdf"), FileType("application/pdf"))
    )
    send.add_attachment(
        Attachment(
            FileContent(png),
            FileName("logo.png"),
            FileType("image/png"),
            Disposition("inline"),
            ContentId("logo"),
        )
    )
    sendgrid(provider_server).send(send)
    message = recipient.wait_for_message(timeout=10)
    assert message.attachment("report.pdf").content() == b"%PDF-1.4 report"
    logo = message.attachment("logo.png", inline=True)
    assert (logo.inline, logo.content_id) == (True, "logo")


def test_custom_headers_are_on_the_message_and_in_the_record(
    provider_server: InboxServer, recipient: Inbox
) -> None:
    send = mail(recipient.address)
    send.header = Header("X-Campaign", "spring")
    sendgrid(provider_server).send(send)
    message = recipient.wait_for_message(timeout=10)
    assert message.headers["x-campaign"] == ("spring",)
    assert message.provider is not None
    assert message.provider.headers == {"X-Campaign": "spring"}


def test_cc_and_bcc_each_get_a_copy_and_bcc_is_not_written(
    provider_server: InboxServer, provider_client: TempInboxClient
) -> None:
    to, cc, bcc = (provider_client.generate() for _ in range(3))
    send = mail(to.address)
    send.personalizations[0].add_cc(Cc(cc.address))
    send.add_bcc(bcc.address)
    sendgrid(provider_server).send(send)
    for inbox in (to, cc, bcc):
        message = inbox.wait_for_message(timeout=10)
        assert bcc.address not in json.dumps(message.to_json()["headers"])


def test_a_template_send_carries_the_template_id_and_data(
    provider_server: InboxServer, recipient: Inbox
) -> None:
    send = Mail(from_email=SENDER, to_emails=recipient.address)
    send.template_id = "d-0123456789abcdef"
    send.dynamic_template_data = {"name": "Ada", "code": "482913"}
    sendgrid(provider_server).send(send)
    message = recipient.wait_for_message(timeout=10)
    assert message.provider is not None
    assert message.provider.template_id == "d-0123456789abcdef"
    assert message.provider.template_data == {"name": "Ada", "code": "482913"}
    assert message.text is not None
    assert "d-0123456789abcdef" in message.text


def test_each_personalization_is_its_own_message_with_its_substitutions(
    provider_server: InboxServer, provider_client: TempInboxClient
) -> None:
    ada, bob = provider_client.generate(), provider_client.generate()
    send = Mail(from_email=SENDER, subject="Hello -name-", plain_text_content="Hi -name-")
    for inbox, name in ((ada, "Ada"), (bob, "Bob")):
        personalization = Personalization()
        personalization.add_to(To(inbox.address))
        personalization.add_substitution({"-name-": name})
        send.add_personalization(personalization)
    sendgrid(provider_server).send(send)
    assert ada.wait_for_message(timeout=10).subject == "Hello Ada"
    message = bob.wait_for_message(timeout=10)
    assert (message.subject, message.text) == ("Hello Bob", "Hi Bob\n")


def test_a_recipient_not_live_is_refused_and_recorded(
    provider_server: InboxServer, provider_client: TempInboxClient, recipient: Inbox
) -> None:
    ghost = "nobody-" + recipient.address
    send = mail(recipient.address)
    send.add_to(To(ghost))
    sendgrid(provider_server).send(send)
    recipient.wait_for_message(timeout=10)
    refused = provider_client.refused(similar_to=ghost, limit=1)
    assert [(refusal.address, refusal.helo) for refusal in refused] == [(ghost, "sendgrid API")]


def test_no_live_recipient_is_sendgrids_400(provider_server: InboxServer) -> None:
    with pytest.raises(BadRequestsError) as caught:
        sendgrid(provider_server).send(mail("nobody@tempinbox.test"))
    errors = json.loads(caught.value.body)["errors"]
    assert "no recipient is a live inbox" in errors[0]["message"]


def test_sandbox_mode_answers_200_and_delivers_nothing(
    provider_server: InboxServer, recipient: Inbox
) -> None:
    body = mail(recipient.address).get()
    body["mail_settings"] = {"sandbox_mode": {"enable": True}}
    status, _ = answer(
        post(provider_server.provider_url("sendgrid") + "/v3/mail/send", json.dumps(body))
    )
    assert status == 200
    recipient.assert_no_message(within=0.3)


def test_the_message_id_is_made_of_the_answered_x_message_id(
    provider_server: InboxServer, recipient: Inbox
) -> None:
    response = sendgrid(provider_server).send(mail(recipient.address))
    message = recipient.wait_for_message(timeout=10)
    expected = f"<{response.headers['X-Message-Id']}.0@sendgrid.tempinbox.invalid>"
    assert message.message_id == expected


def test_the_api_filters_messages_by_provider_and_template(
    provider_server: InboxServer, recipient: Inbox, http: requests.Session
) -> None:
    smtp_send(provider_server, recipient.address)
    send = Mail(from_email=SENDER, to_emails=recipient.address)
    send.template_id = "d-welcome"
    sendgrid(provider_server).send(send)
    url = f"{provider_server.api_url}/messages/{recipient.address}"
    recipient.wait_for_message(timeout=10, match=lambda message: message.provider is not None)
    for query, expected in (
        ("provider=sendgrid", ["d-welcome"]),
        ("template=d-welcome", ["d-welcome"]),
        ("provider=resend", []),
        ("template=d-other", []),
    ):
        found = http.get(f"{url}?{query}", timeout=10).json()
        assert [message["provider"]["template_id"] for message in found] == expected, query


def test_a_wait_filtered_by_provider_passes_smtp_mail_over(
    provider_server: InboxServer, recipient: Inbox, http: requests.Session
) -> None:
    smtp_send(provider_server, recipient.address)
    sendgrid(provider_server).send(mail(recipient.address, subject="By API"))
    url = f"{provider_server.api_url}/messages/{recipient.address}?provider=sendgrid&wait=10"
    found = http.get(url, timeout=20).json()
    assert [message["subject"] for message in found] == ["By API"]


def smtp_send(server: InboxServer, to: str) -> None:
    """One mail to ``to`` over SMTP: mail without a provider record."""
    with smtplib.SMTP(server.smtp_host, server.smtp_port, local_hostname="localhost") as smtp:
        smtp.sendmail(SENDER, [to], b"Subject: By SMTP\r\n\r\nHello\r\n")
