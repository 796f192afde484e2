"""Mailgun's official SDK sends to ``provider_url("mailgun")``: form and MIME sends arrive."""

from __future__ import annotations

import json
import shutil
import subprocess
from typing import Any

import pytest

from pytest_tempinbox import InboxServer, TempInboxClient
from pytest_tempinbox.client.inbox import Inbox

SENDER = "App <app@example.com>"
HTML = '<p>Your code is 482913</p><a href="https://app.test/confirm">Confirm</a>'
DOMAIN = "mg.example.com"


@pytest.fixture
def mailgun(provider_server: InboxServer) -> Any:
    """A Mailgun SDK client whose API URL is the server's Mailgun URL (skipped before 3.11)."""
    sdk = pytest.importorskip("mailgun.client", reason="the Mailgun SDK needs Python 3.11")
    return sdk.Client(auth=("api", "key-any"), api_url=provider_server.provider_url("mailgun"))


def send(mailgun: Any, files: Any = None, **data: Any) -> Any:
    """POST ``data`` (and ``files``) to ``/v3/mg.example.com/messages``; the response."""
    fields = {"from": SENDER, "subject": "Welcome", "text": "482913", **data}
    return mailgun.messages.create(data=fields, files=files, domain=DOMAIN)


def test_a_send_answers_mailguns_queued(mailgun: Any, recipient: Inbox) -> None:
    response = send(mailgun, to=recipient.address)
    assert response.status_code == 200
    assert response.json()["message"] == "Queued. Thank you."
    message = recipient.wait_for_message(timeout=10)
    assert message.message_id == response.json()["id"]


def test_text_and_html_arrive_with_their_link_and_code(mailgun: Any, recipient: Inbox) -> None:
    send(mailgun, to=recipient.address, html=HTML)
    message = recipient.wait_for_message(timeout=10)
    assert message.sender is not None
    assert (message.sender.name, message.subject) == ("App", "Welcome")
    assert message.link(text="Confirm") == "https://app.test/confirm"
    assert message.code() == "482913"


def test_an_attachment_and_an_inline_image_arrive_as_multipart(
    mailgun: Any, recipient: Inbox
) -> None:
    files = [
        ("attachment", ("report.pdf", b"%PDF-1.4", "application/pdf")),
        ("inline", ("logo.png", b"\x89PNG", "image/png")),
    ]
    send(mailgun, files, to=recipient.address, html='<img src="cid:logo.png">')
    message = recipient.wait_for_message(timeout=10)
    assert message.attachment("report.pdf").content() == b"%PDF-1.4"
    assert message.attachment("logo.png", inline=True).content_id == "logo.png"


def test_headers_variables_tags_options_and_domain_are_kept(mailgun: Any, recipient: Inbox) -> None:
    send(
        mailgun,
        to=recipient.address,
        **{
            "h:X-Entity-Ref-ID": "123",
            "h:Reply-To": "help@example.com",
            "v:user": "42",
            "o:tag": ["welcome", "onboarding"],
            "o:tracking-clicks": "no",
        },
    )
    message = recipient.wait_for_message(timeout=10)
    assert message.headers["x-entity-ref-id"] == ("123",)
    assert [address.email for address in message.reply_to] == ["help@example.com"]
    provider = message.provider
    assert provider is not None
    assert (provider.name, provider.endpoint) == ("mailgun", f"/v3/{DOMAIN}/messages")
    assert (provider.tags, provider.metadata) == (("welcome", "onboarding"), {"user": "42"})
    assert provider.options == {"domain": DOMAIN, "o:tracking-clicks": "no"}


def test_cc_and_bcc_each_get_a_copy(mailgun: Any, provider_client: TempInboxClient) -> None:
    to, cc, bcc = (provider_client.generate() for _ in range(3))
    send(mailgun, to=to.address, cc=cc.address, bcc=bcc.address)
    for inbox in (to, cc, bcc):
        assert inbox.wait_for_message(timeout=10).subject == "Welcome"


def test_a_template_send_keeps_its_name_and_variables(mailgun: Any, recipient: Inbox) -> None:
    variables = json.dumps({"name": "Ada"})
    send(mailgun, to=recipient.address, text=None, template="welcome", **{"t:variables": variables})
    provider = recipient.wait_for_message(timeout=10).provider
    assert provider is not None
    assert (provider.template_id, provider.template_data) == ("welcome", {"name": "Ada"})


def test_recipient_variables_make_one_message_per_recipient(
    mailgun: Any, provider_client: TempInboxClient
) -> None:
    ada, bob = provider_client.generate(), provider_client.generate()
    variables = {ada.address: {"name": "Ada"}, bob.address: {"name": "Bob"}}
    send(
        mailgun,
        to=[ada.address, bob.address],
        subject="Hi %recipient.name%",
        **{"recipient-variables": json.dumps(variables)},
    )
    for inbox, name in ((ada, "Ada"), (bob, "Bob")):
        message = inbox.wait_for_message(timeout=10)
        assert message.subject == f"Hi {name}"
        assert [address.email for address in message.to] == [inbox.address]


def test_a_mime_send_stores_the_message_as_it_is(mailgun: Any, recipient: Inbox) -> None:
    raw = b"From: app@example.com\r\nTo: someone@example.com\r\nSubject: Raw\r\n\r\n"
    raw += b"Your code is 482913\r\n"
    response = mailgun.mimemessage.create(
        data={"to": recipient.address}, files={"message": raw}, domain=DOMAIN
    )
    assert response.status_code == 200
    message = recipient.wait_for_message(timeout=10)
    assert (message.subject, message.code()) == ("Raw", "482913")
    assert message.provider is not None
    assert message.provider.endpoint == f"/v3/{DOMAIN}/messages.mime"


def test_test_mode_delivers_nothing(mailgun: Any, recipient: Inbox) -> None:
    response = send(mailgun, to=recipient.address, **{"o:testmode": "yes"})
    assert response.json()["message"] == "Queued. Thank you."
    recipient.assert_no_message(within=0.2)


def test_a_missing_from_is_mailguns_400(mailgun: Any, recipient: Inbox) -> None:
    response = mailgun.messages.create(
        data={"to": recipient.address, "subject": "x", "text": "y"}, domain=DOMAIN
    )
    assert response.status_code == 400
    assert response.json() == {"message": "'from' parameter is missing"}


def test_no_live_recipient_is_a_400_naming_it(mailgun: Any) -> None:
    response = send(mailgun, to="nobody@tempinbox.test")
    assert response.status_code == 400
    assert "nobody@tempinbox.test" in response.json()["message"]


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
def test_curl_sends_a_multipart_form_with_a_file(
    provider_server: InboxServer, recipient: Inbox, tmp_path: Any
) -> None:
    report = tmp_path / "report.txt"
    report.write_bytes(b"quarterly numbers")
    url = provider_server.provider_url("mailgun") + f"/v3/{DOMAIN}/messages"
    command = ["curl", "-sS", "--noproxy", "*", "--user", "api:key-any", url]
    command += ["-F", f"from={SENDER}", "-F", f"to={recipient.address}", "-F", "subject=curl"]
    command += ["-F", "text=482913", "-F", f"attachment=@{report}"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=30, check=True)
    assert json.loads(result.stdout)["message"] == "Queued. Thank you."
    message = recipient.wait_for_message(timeout=10)
    assert message.attachment("report.txt").content() == b"quarterly numbers"


def test_recipient_variables_match_their_address_whatever_its_case(
    mailgun: Any, recipient: Inbox
) -> None:
    variables = {recipient.address.upper(): {"name": "Ada"}}
    send(
        mailgun,
        to=recipient.address,
        subject="Hi %recipient.name%",
        **{"recipient-variables": json.dumps(variables)},
    )
    assert recipient.wait_for_message(timeout=10).subject == "Hi Ada"
