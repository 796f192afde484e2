"""An application that sends through SendGrid's and Resend's SDKs, tested against the server."""

from __future__ import annotations

import resend
from sendgrid import SendGridAPIClient
from sendgrid.helpers.mail import Mail

from pytest_tempinbox import Inbox, InboxServer, TempInboxClient


def test_sendgrid(tempinbox: Inbox, tempinbox_server: InboxServer) -> None:
    """The SendGrid SDK, given the server's provider URL as its host."""
    # --8<-- [start:sendgrid]
    client = SendGridAPIClient(api_key="SG.any", host=tempinbox_server.provider_url("sendgrid"))
    mail = Mail(
        from_email="app@example.com",
        to_emails=tempinbox.address,
        subject="Confirm your account",
        html_content='<a href="https://app.test/confirm?t=abc">Confirm</a>',
    )
    mail.template_id = "d-welcome"
    mail.dynamic_template_data = {"name": "Ada"}
    assert client.send(mail).status_code == 202

    message = tempinbox.wait_for_message(subject="Confirm your account")
    assert message.link(text="Confirm") == "https://app.test/confirm?t=abc"
    assert message.provider is not None
    assert message.provider.template_id == "d-welcome"
    assert message.provider.template_data == {"name": "Ada"}
    # --8<-- [end:sendgrid]


def test_the_providers_fixture(tempinbox: Inbox, tempinbox_providers: dict[str, str]) -> None:
    """The SDKs as the application configures them, pointed at the server by the fixture."""
    # --8<-- [start:fixture]
    # The application's code, unchanged: resend reads RESEND_API_URL and RESEND_API_KEY.
    resend.Emails.send(
        {"from": "app@example.com", "to": tempinbox.address, "subject": "Code", "text": "482913"}
    )
    assert tempinbox.wait_for_message(subject="Code").code() == "482913"

    # SendGrid's SDK takes its host as an argument, and its key from SENDGRID_API_KEY.
    client = SendGridAPIClient(host=tempinbox_providers["sendgrid"])
    client.send(Mail("app@example.com", tempinbox.address, "Welcome", "Hello"))
    assert tempinbox.wait_for_message(subject="Welcome").provider is not None
    # --8<-- [end:fixture]


def test_resend_from_a_standalone_server() -> None:
    """Resend's SDK, its module-wide api_url pointed at a server of one's own."""
    saved = resend.api_url, resend.api_key
    # --8<-- [start:resend]
    with InboxServer() as server, TempInboxClient(server.api_url) as client:
        inbox = client.generate()
        resend.api_url = server.provider_url("resend")  # or RESEND_API_URL before import
        resend.api_key = "re_any"
        resend.Emails.send(
            {
                "from": "App <app@example.com>",
                "to": inbox.address,
                "subject": "Code",
                "text": "482913",
            }
        )
        assert inbox.wait_for_message().code() == "482913"
    # --8<-- [end:resend]
    resend.api_url, resend.api_key = saved
