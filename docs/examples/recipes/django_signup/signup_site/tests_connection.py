"""Several mails in one test, sent over one SMTP connection instead of one each."""

from __future__ import annotations

from collections.abc import Callable

from django.core.mail import get_connection, send_mail

from pytest_tempinbox import Inbox


def test_the_reminders_share_one_connection(tempinbox_factory: Callable[..., Inbox]) -> None:
    """Three mails, one connection: one connection set-up and STARTTLS handshake, not three."""
    customers = [tempinbox_factory() for _ in range(3)]

    with get_connection() as connection:  # opened here, closed after the last mail
        for inbox in customers:
            send_mail("Your cart", "It is waiting.", None, [inbox.address], connection=connection)

    for inbox in customers:
        inbox.wait_for_message(subject="Your cart")
