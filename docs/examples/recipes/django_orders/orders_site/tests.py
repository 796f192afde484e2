"""Each mailer of the order site: the SMTP ones reach the inbox, the kept one the outbox."""

from __future__ import annotations

import pytest
from django.core import mail

from pytest_tempinbox import Inbox

from .mail import send_confirmation, send_newsletter, send_receipt

# Every test here sends its mail to the session's inbox server (but the kept mailers').
pytestmark = pytest.mark.usefixtures("tempinbox_django")


def test_the_confirmation_arrives_through_the_default_mailer(tempinbox: Inbox) -> None:
    """The default mailer's STARTTLS and login run as in production; the mail arrives."""
    send_confirmation(1042, tempinbox.address)

    message = tempinbox.wait_for_message(subject="Your order")
    assert message.text == "Order 1042 is confirmed.\n"


def test_the_receipt_arrives_through_the_receipts_mailer(tempinbox: Inbox) -> None:
    """A named mailer is pointed at the server too; its SMTPS becomes STARTTLS there."""
    send_receipt(1042, tempinbox.address)

    assert tempinbox.wait_for_message(subject="Your receipt").text == "Order 1042 is paid.\n"


def test_the_newsletter_stays_in_the_outbox(tempinbox: Inbox) -> None:
    """tempinbox_django_keep_mailers leaves the newsletter's mailer as pytest-django made it."""
    send_newsletter([tempinbox.address])

    assert [message.subject for message in mail.outbox] == ["What is new"]
    tempinbox.assert_no_message(within=0.2)
