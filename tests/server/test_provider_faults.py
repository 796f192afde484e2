"""A recipient's faults strike provider sends too: the provider's error, a delay, a dropped line."""

from __future__ import annotations

import http.client
import time

import pytest
import resend
from python_http_client.exceptions import (
    BadRequestsError,
    InternalServerError,
    ServiceUnavailableError,
    TooManyRequestsError,
)
from sendgrid import SendGridAPIClient
from sendgrid.helpers.mail import Mail

from pytest_tempinbox import InboxServer, TempInboxClient
from pytest_tempinbox.client.inbox import Inbox

SENDER = "app@example.com"


def sendgrid_send(server: InboxServer, to: str) -> int:
    """Send through SendGrid's SDK; the status."""
    client = SendGridAPIClient(api_key="SG.key", host=server.provider_url("sendgrid"))
    mail = Mail(from_email=SENDER, to_emails=to, subject="Hi", plain_text_content="Hello")
    return int(client.send(mail).status_code)


def resend_send(emails: type[resend.Emails], to: str) -> None:
    """Send through Resend's SDK."""
    emails.send({"from": SENDER, "to": to, "subject": "Hi", "text": "Hello"})


def test_fail_next_429_is_sendgrids_429_with_retry_after(
    provider_server: InboxServer, recipient: Inbox
) -> None:
    recipient.fail_next(429)
    with pytest.raises(TooManyRequestsError) as raised:
        sendgrid_send(provider_server, recipient.address)
    assert raised.value.headers["Retry-After"] == "1"
    assert "injected fault" in raised.value.to_dict["errors"][0]["message"]
    assert recipient.messages() == []


def test_the_fault_is_consumed_and_the_next_send_delivers(
    provider_server: InboxServer, recipient: Inbox
) -> None:
    recipient.fail_next(500)
    with pytest.raises(InternalServerError):
        sendgrid_send(provider_server, recipient.address)
    assert recipient.faults() == []
    assert sendgrid_send(provider_server, recipient.address) == 202
    assert len(recipient.messages()) == 1


@pytest.mark.parametrize(
    ("code", "error"),
    [(503, ServiceUnavailableError), (451, ServiceUnavailableError), (550, BadRequestsError)],
)
def test_an_smtp_code_is_mapped_to_an_http_status(
    provider_server: InboxServer, recipient: Inbox, code: int, error: type[Exception]
) -> None:
    recipient.fail_next(code)
    with pytest.raises(error):
        sendgrid_send(provider_server, recipient.address)


def test_fail_next_429_is_resends_rate_limit_error(
    emails: type[resend.Emails], recipient: Inbox
) -> None:
    recipient.fail_next(429, "slow down")
    with pytest.raises(resend.exceptions.RateLimitError) as raised:
        resend_send(emails, recipient.address)
    assert "slow down" in raised.value.message
    assert recipient.messages() == []


def test_fail_next_500_is_resends_application_error(
    emails: type[resend.Emails], recipient: Inbox
) -> None:
    recipient.fail_next(500)
    with pytest.raises(resend.exceptions.ApplicationError):
        resend_send(emails, recipient.address)


def test_delay_next_holds_the_answer_then_delivers(
    provider_server: InboxServer, recipient: Inbox
) -> None:
    recipient.delay_next(0.5)
    started = time.monotonic()
    assert sendgrid_send(provider_server, recipient.address) == 202
    assert time.monotonic() - started >= 0.5
    assert len(recipient.messages()) == 1


def test_disconnect_next_drops_sendgrids_connection_unanswered(
    provider_server: InboxServer, recipient: Inbox
) -> None:
    recipient.disconnect_next()
    with pytest.raises(http.client.RemoteDisconnected):
        sendgrid_send(provider_server, recipient.address)
    assert recipient.messages() == []
    assert sendgrid_send(provider_server, recipient.address) == 202


def test_disconnect_next_drops_resends_connection_unanswered(
    emails: type[resend.Emails], recipient: Inbox
) -> None:
    recipient.disconnect_next()
    with pytest.raises(resend.exceptions.ResendError, match="Connection aborted"):
        resend_send(emails, recipient.address)
    assert recipient.messages() == []


def test_a_recipient_without_a_fault_is_not_struck(
    provider_server: InboxServer, recipient: Inbox, provider_client: TempInboxClient
) -> None:
    recipient.fail_next(429, stage="data")
    other = provider_client.generate()
    assert sendgrid_send(provider_server, other.address) == 202
    assert len(recipient.faults()) == 1
