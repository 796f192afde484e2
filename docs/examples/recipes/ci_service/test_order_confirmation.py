"""A test that runs unchanged against the in-process server or a shared one.

Run as ``pytest``, the plugin starts its server in-process. Run as ``pytest
--tempinbox-url http://127.0.0.1:8025/api`` (or with ``$TEMPINBOX_URL`` set),
it uses the server already running there, a CI service say, and asks it where
its SMTP listener is: ``tempinbox_server`` has the answer either way.
"""

from __future__ import annotations

import smtplib
from email.message import EmailMessage

from pytest_tempinbox import Inbox
from pytest_tempinbox.plugin import TempInboxServer


def place_order(smtp_host: str, smtp_port: int, email: str) -> None:
    """Stands in for the application under test, which mails an order confirmation.

    In CI the application is often a service of its own, given the same SMTP
    host and port through its configuration (``EMAIL_HOST``, ``SMTP_URL``...).
    """
    message = EmailMessage()
    message["From"] = "orders@shop.test"
    message["To"] = email
    message["Subject"] = "Order A-1042 confirmed"
    message.set_content("Track your parcel: https://shop.test/orders/A-1042")
    with smtplib.SMTP(smtp_host, smtp_port, local_hostname="localhost") as smtp:
        smtp.send_message(message)


def test_the_order_confirmation_arrives(
    tempinbox: Inbox, tempinbox_server: TempInboxServer
) -> None:
    """The confirmation reaches the inbox, with its tracking link."""
    place_order(tempinbox_server.smtp_host, tempinbox_server.smtp_port, tempinbox.address)

    message = tempinbox.wait_for_message(subject="Order A-1042 confirmed")

    assert message.links == ("https://shop.test/orders/A-1042",)
