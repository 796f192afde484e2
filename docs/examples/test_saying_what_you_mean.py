"""Saying what the test means: the link by its text, the one code, the attachment, no mail.

A sign-up mail as real ones are: a logo that links home, a button, a code, and a
footer full of numbers that are not codes.
"""

from __future__ import annotations

import re
import smtplib
from email.message import EmailMessage

import pytest

from pytest_tempinbox import Inbox, MailAssertionError
from pytest_tempinbox.plugin import TempInboxServer

TEXT = """\
Welcome, Ada!

Confirm your address to finish signing up:
https://app.example/confirm/abc123

Or enter this code in the app: 482913
It expires in 15 minutes.

Example Inc., 1600 Main Street, Springfield, IL 62704 - +1 (555) 010-2030
Order 7781 - (c) 2026 Example Inc. - Unsubscribe: https://app.example/unsubscribe
"""


# --8<-- [start:send]
HTML = """\
<a href="https://app.example/"><img src="https://app.example/logo.png" alt="Example"></a>
<h1>Welcome, Ada!</h1>
<p>Confirm your address to finish signing up:</p>
<p><a href="https://app.example/confirm/abc123" style="background:#0a6">Confirm your email</a></p>
<p>Or enter this code in the app:</p>
<p style="font-size:28px;letter-spacing:4px"><strong>482913</strong></p>
<p>It expires in 15 minutes.</p>
<hr>
<p>Example Inc., 1600 Main Street, Springfield, IL 62704 &middot; +1 (555) 010-2030<br>
Order 7781 &middot; &copy; 2026 Example Inc. &middot;
<a href="https://app.example/unsubscribe">Unsubscribe</a></p>
"""


def send_signup(server: TempInboxServer, to: str, *, with_invoice: bool = False) -> None:
    """Stands in for the application's sign-up mail."""
    message = EmailMessage()
    message["From"] = "Example <hello@app.example>"
    message["To"] = to
    message["Subject"] = "Welcome to Example"
    message.set_content(TEXT)
    message.add_alternative(HTML, subtype="html")
    if with_invoice:
        message.add_attachment(
            b"%PDF-1.7 ...", maintype="application", subtype="pdf", filename="invoice-7781.pdf"
        )
    with smtplib.SMTP(server.smtp_host, server.smtp_port, local_hostname="localhost") as smtp:
        smtp.send_message(message)


# --8<-- [end:send]


def test_the_link_by_its_text(tempinbox: Inbox, tempinbox_server: TempInboxServer) -> None:
    """link(text=...) finds the button; link_details keeps every link with its text."""
    send_signup(tempinbox_server, tempinbox.address)

    # --8<-- [start:link]
    message = tempinbox.wait_for_message(subject="Welcome")

    # The button, by the text the reader sees (case and white space do not matter).
    assert message.link(text="confirm your email") == "https://app.example/confirm/abc123"
    # Or by a part of the URL, or a regular expression searched in it.
    assert message.link(contains="/unsubscribe") == "https://app.example/unsubscribe"
    assert message.link(pattern=r"/confirm/\w+$") == "https://app.example/confirm/abc123"
    # link_details keeps every link in document order (here the text part comes
    # first): a URL of the text body has no text; the logo's link has the image's alt.
    details = [(link.source, link.text) for link in message.link_details]
    assert details[0] == ("text", None)
    assert [text for source, text in details if source == "html"][:2] == [
        "Example",
        "Confirm your email",
    ]
    # --8<-- [end:link]


def test_the_one_code(tempinbox: Inbox, tempinbox_server: TempInboxServer) -> None:
    """code() picks the code, not the order number, the year or the postal code."""
    send_signup(tempinbox_server, tempinbox.address)

    # --8<-- [start:code]
    message = tempinbox.wait_for_message(subject="Welcome")

    # The single most likely code: next to "code", standing out in the HTML.
    assert message.code() == "482913"
    # codes lists every candidate, most likely first.
    assert message.codes[0] == "482913"
    # When the mail says it its own way, a pattern picks the code (its group, if any).
    assert message.code(pattern=r"code in the app: (\d+)") == "482913"
    # --8<-- [end:code]


def test_the_attachment(tempinbox: Inbox, tempinbox_server: TempInboxServer) -> None:
    """attachment() finds one attachment by a shell-style pattern on its name or type."""
    send_signup(tempinbox_server, tempinbox.address, with_invoice=True)

    # --8<-- [start:attachment]
    message = tempinbox.wait_for_message(subject="Welcome")

    invoice = message.attachment("invoice-*.pdf")
    assert invoice.content_type == "application/pdf"
    assert invoice.content().startswith(b"%PDF")
    assert message.attachment(content_type="application/*") == invoice
    # --8<-- [end:attachment]


def test_no_mail_and_text_filters(tempinbox: Inbox, tempinbox_server: TempInboxServer) -> None:
    """assert_no_message waits on the server for mail that must not come; text= reads bodies."""
    send_signup(tempinbox_server, tempinbox.address)

    # --8<-- [start:no-message]
    # text=: the text body or the HTML's visible text contains it.
    message = tempinbox.wait_for_message(text="Confirm your address")
    # subject, sender and text also take a compiled pattern.
    assert tempinbox.wait_for_message(subject=re.compile(r"^Welcome to \w+$")) == message

    # Nothing about a password arrives within half a second (1 s by default).
    tempinbox.assert_no_message(subject="password", within=0.5)
    # --8<-- [end:no-message]


def test_a_failure_lists_what_the_mail_holds(
    tempinbox: Inbox, tempinbox_server: TempInboxServer
) -> None:
    """Every lookup that finds none, or several, says what the mail held instead."""
    send_signup(tempinbox_server, tempinbox.address)
    message = tempinbox.wait_for_message(subject="Welcome")

    # --8<-- [start:failure]
    with pytest.raises(MailAssertionError) as raised:
        message.link(text="Reset password")

    assert "no link with text 'Reset password'" in str(raised.value)
    assert "'Confirm your email' (html) https://app.example/confirm/abc123" in str(raised.value)
    # --8<-- [end:failure]
