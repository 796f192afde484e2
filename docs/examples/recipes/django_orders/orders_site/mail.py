"""The order site's mail: each kind through its own mailer."""

from __future__ import annotations

from django.core.mail import EmailMessage, send_mail


def send_confirmation(order: int, customer: str) -> None:
    """Confirm an order, through the default mailer."""
    send_mail("Your order", f"Order {order} is confirmed.", None, [customer])


def send_receipt(order: int, customer: str) -> None:
    """Send the receipt of a paid order, through the ``receipts`` mailer."""
    send_mail("Your receipt", f"Order {order} is paid.", None, [customer], using="receipts")


def send_newsletter(subscribers: list[str]) -> None:
    """Send this month's newsletter, through the ``newsletter`` mailer."""
    EmailMessage("What is new", "New in the shop.", None, bcc=subscribers).send(using="newsletter")
