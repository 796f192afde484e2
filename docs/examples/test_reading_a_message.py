"""Reading what the application sent: a message's fields, its attachments, its raw bytes.

Also how to wait for the right message among several, and what a test sees
when the mail it waits for never comes.
"""

from __future__ import annotations

import smtplib
from email.message import EmailMessage

import pytest

from pytest_tempinbox import Inbox, Message, WaitTimeout
from pytest_tempinbox.plugin import TempInboxServer


def send(server: TempInboxServer, message: EmailMessage) -> None:
    """Stands in for the application's mail code."""
    with smtplib.SMTP(server.smtp_host, server.smtp_port, local_hostname="localhost") as smtp:
        smtp.send_message(message)


def receipt(to: str) -> EmailMessage:
    """An HTML receipt with a text alternative and a PDF attached."""
    message = EmailMessage()
    message["From"] = "Shop <shop@example.com>"
    message["To"] = to
    message["Reply-To"] = "help@example.com"
    message["Subject"] = "Your receipt"
    message.set_content("Thank you! Your order: https://shop.example/orders/1042\n")
    message.add_alternative(
        '<p>Thank you! <a href="https://shop.example/orders/1042">Your order</a></p>\n',
        subtype="html",
    )
    message.add_attachment(
        b"%PDF-1.7 ...", maintype="application", subtype="pdf", filename="receipt.pdf"
    )
    return message


def sign_in_code(to: str) -> EmailMessage:
    """A plain text mail with a one-time code."""
    message = EmailMessage()
    message["From"] = "Example <auth@example.com>"
    message["To"] = to
    message["Subject"] = "Your sign-in code"
    message.set_content("Your code is 482913. It expires in 10 minutes.\n")
    return message


def test_read_the_fields_of_a_message(tempinbox: Inbox, tempinbox_server: TempInboxServer) -> None:
    """Every part of a message, as the test reads it."""
    send(tempinbox_server, receipt(tempinbox.address))

    # --8<-- [start:fields]
    message = tempinbox.wait_for_message(subject="receipt")

    # Who sent it, and to whom: Address objects with a name and an email.
    assert message.sender is not None
    assert (message.sender.name, message.sender.email) == ("Shop", "shop@example.com")
    assert [address.email for address in message.to] == [tempinbox.address]
    assert [address.email for address in message.reply_to] == ["help@example.com"]
    assert message.envelope.rcpt_to == (tempinbox.address,)  # the SMTP envelope

    # The subject and the bodies, decoded; headers by lowercase name.
    assert message.subject == "Your receipt"
    assert message.text == "Thank you! Your order: https://shop.example/orders/1042\n"
    assert message.html is not None
    assert '<a href="https://shop.example/orders/1042">' in message.html
    assert message.headers["reply-to"] == ("help@example.com",)

    # The links found in the text and the HTML, each once, in order.
    assert message.links == ("https://shop.example/orders/1042",)

    # Attachments are described; their bytes are downloaded on demand.
    (pdf,) = message.attachments
    assert (pdf.filename, pdf.content_type, pdf.inline) == ("receipt.pdf", "application/pdf", False)
    assert pdf.content() == b"%PDF-1.7 ..."

    # The message exactly as the server received it.
    assert b"Subject: Your receipt" in message.raw()
    # --8<-- [end:fields]


def test_wait_for_the_right_message(tempinbox: Inbox, tempinbox_server: TempInboxServer) -> None:
    """Filters pick one message among several; wait_for_messages waits for a count."""
    send(tempinbox_server, receipt(tempinbox.address))
    send(tempinbox_server, sign_in_code(tempinbox.address))

    # --8<-- [start:filters]
    # subject: the subject contains the text (case-sensitive).
    assert tempinbox.wait_for_message(subject="sign-in").codes == ("482913",)

    # sender: the From address contains the text (case-insensitive).
    assert tempinbox.wait_for_message(sender="SHOP@").subject == "Your receipt"

    # match: any test of the message.
    def has_attachment(message: Message) -> bool:
        return bool(message.attachments)

    assert tempinbox.wait_for_message(match=has_attachment).subject == "Your receipt"

    # Several messages: wait until there are at least 2, get them all, oldest first.
    messages = tempinbox.wait_for_messages(2)
    assert [message.subject for message in messages] == ["Your receipt", "Your sign-in code"]
    # --8<-- [end:filters]


def test_a_wait_that_times_out_says_what_arrived(
    tempinbox: Inbox, tempinbox_server: TempInboxServer
) -> None:
    """WaitTimeout's message lists the mail the inbox did receive."""
    send(tempinbox_server, receipt(tempinbox.address))

    # --8<-- [start:timeout]
    with pytest.raises(WaitTimeout) as raised:
        tempinbox.wait_for_message(subject="Welcome", timeout=0.5)

    assert "no message with subject containing 'Welcome'" in str(raised.value)
    assert "from Shop <shop@example.com>: 'Your receipt'" in str(raised.value)
    # --8<-- [end:timeout]
