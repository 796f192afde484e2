"""What a test can say about its mail: no message, text and pattern filters, the attachment."""

from __future__ import annotations

import asyncio
import re
import threading
import time
from collections.abc import Iterator
from email.message import EmailMessage

import pytest

import pytest_tempinbox
from pytest_tempinbox import Inbox, MailAssertionError, Message, TempInboxError, WaitTimeout
from pytest_tempinbox.server.inbox_server import InboxServer

from ..helpers import TIMER_SLACK, make_message, send


def html_message(to: str, subject: str, html: str, text: str | None = None) -> EmailMessage:
    message = make_message(to, subject)
    if text is None:
        message.set_content(html, subtype="html")
    else:
        message.set_content(text)
        message.add_alternative(html, subtype="html")
    return message


@pytest.fixture
def later() -> Iterator[list[threading.Timer]]:
    """Timers that send mail while a test waits; all are finished before the test ends."""
    timers: list[threading.Timer] = []
    yield timers
    for timer in timers:
        timer.join(10)


def send_later(
    timers: list[threading.Timer], server: InboxServer, message: EmailMessage, delay: float
) -> None:
    timer = threading.Timer(delay, send, (server, message))
    timers.append(timer)
    timer.start()


# --- the exception ---------------------------------------------------------------


def test_mail_assertion_error_is_an_assertion_error_and_ours() -> None:
    assert issubclass(MailAssertionError, AssertionError)
    assert issubclass(MailAssertionError, TempInboxError)
    assert pytest_tempinbox.MailAssertionError is MailAssertionError


def test_wait_timeout_is_a_mail_assertion_error_and_a_timeout_error() -> None:
    assert issubclass(WaitTimeout, MailAssertionError)
    assert issubclass(WaitTimeout, TimeoutError)


# --- assert_no_message ----------------------------------------------------------------


def test_no_message_passes_when_nothing_arrives(inbox: Inbox) -> None:
    started = time.monotonic()
    inbox.assert_no_message(within=0.3)
    assert time.monotonic() - started >= 0.3 - TIMER_SLACK


def test_no_message_passes_when_only_other_mail_arrived(inbox: Inbox, server: InboxServer) -> None:
    send(server, make_message(inbox.address, "Your receipt"))
    inbox.assert_no_message(subject="Welcome", within=0.2)


def test_no_message_fails_at_once_on_a_message_already_there(
    inbox: Inbox, server: InboxServer
) -> None:
    send(server, make_message(inbox.address, "Welcome", "Hello Ada,\n\nWelcome aboard.\n"))
    started = time.monotonic()
    with pytest.raises(MailAssertionError) as raised:
        inbox.assert_no_message(subject="Welcome", within=30)
    assert time.monotonic() - started < 5
    text = str(raised.value)
    assert f"expected no message with subject containing 'Welcome' at {inbox.address}" in text
    assert "from app@example.com: 'Welcome'" in text
    assert "| Hello Ada," in text


def test_no_message_says_a_message_was_already_there_when_the_check_began(
    inbox: Inbox, server: InboxServer
) -> None:
    send(server, make_message(inbox.address, "Welcome"))
    time.sleep(0.3)  # the check begins well after the message arrived
    with pytest.raises(MailAssertionError) as raised:
        inbox.assert_no_message(subject="Welcome", within=5)
    first = str(raised.value).splitlines()[0]
    assert first.startswith(
        f"expected no message with subject containing 'Welcome' at {inbox.address} within 5 s,"
        " but one was already there when the check began (received "
    )
    received_before = float(first.rpartition("(received ")[2].split(" s before")[0])
    assert 0.25 <= received_before < 5


def test_no_message_says_how_long_after_the_check_began_a_message_arrived(
    inbox: Inbox, server: InboxServer, later: list[threading.Timer]
) -> None:
    send_later(later, server, make_message(inbox.address, "Password changed"), 0.4)
    with pytest.raises(MailAssertionError) as raised:
        inbox.assert_no_message(subject="Password", within=30)
    first = str(raised.value).splitlines()[0]
    assert ", but one arrived " in first
    assert first.endswith(" s after the check began:")
    after = float(first.rpartition("but one arrived ")[2].split(" s after")[0])
    assert 0.3 <= after < 10


def test_no_message_fails_as_soon_as_a_matching_message_arrives(
    inbox: Inbox, server: InboxServer, later: list[threading.Timer]
) -> None:
    send_later(later, server, make_message(inbox.address, "Other"), 0.1)
    send_later(later, server, make_message(inbox.address, "Password changed"), 0.4)
    started = time.monotonic()
    with pytest.raises(MailAssertionError, match="'Password changed'"):
        inbox.assert_no_message(subject="Password", within=30)
    assert time.monotonic() - started < 10  # the long-poll ended it, not the 30 s


def test_no_message_without_filters_counts_any_message(inbox: Inbox, server: InboxServer) -> None:
    send(server, make_message(inbox.address, "Anything"))
    with pytest.raises(MailAssertionError, match="expected no message at"):
        inbox.assert_no_message(within=0)


def test_no_message_refuses_a_negative_time(inbox: Inbox) -> None:
    with pytest.raises(ValueError, match="within"):
        inbox.assert_no_message(within=-1)


@pytest.mark.parametrize("within", ["1", None, True, [1]], ids=["str", "None", "bool", "list"])
def test_no_message_names_a_within_of_the_wrong_type(inbox: Inbox, within: object) -> None:
    with pytest.raises(TypeError) as raised:
        inbox.assert_no_message(within=within)  # type: ignore[arg-type]
    assert str(raised.value) == (
        f"within must be a number of seconds (int or float), not {type(within).__name__} {within!r}"
    )


def test_a_wait_names_a_timeout_given_as_a_string(inbox: Inbox) -> None:
    message = "timeout must be a number of seconds (int or float), not str '1'"
    with pytest.raises(TypeError) as raised:
        inbox.wait_for_message(timeout="1")  # type: ignore[arg-type]
    assert str(raised.value) == message
    # Raised by the method called, not from inside the package's wait.
    assert raised.traceback[-1].name == "seconds"
    assert raised.traceback[-2].name == "wait_for_message"
    with pytest.raises(TypeError, match=r"^timeout must be a number"):
        inbox.wait_for_messages(1, timeout="1")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^count must be an int, not str '2'$"):
        inbox.wait_for_messages("2")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"^timeout must be a number of seconds, 0 or more"):
        inbox.wait_for_message(timeout=-1)
    with pytest.raises(TypeError, match=r"^wait must be a number"):
        inbox.client.messages(inbox.address, wait="1")  # type: ignore[arg-type]


def test_an_awaited_wait_names_a_timeout_given_as_a_string(inbox: Inbox) -> None:
    async def scenario() -> None:
        with pytest.raises(TypeError, match=r"^timeout must be a number of seconds"):
            await inbox.wait_for_message_async(timeout="1")  # type: ignore[arg-type]
        with pytest.raises(TypeError, match=r"^within must be a number of seconds"):
            await inbox.assert_no_message_async(within="1")  # type: ignore[arg-type]

    asyncio.run(scenario())


def test_no_message_async_fails_on_a_matching_message(inbox: Inbox, server: InboxServer) -> None:
    send(server, make_message(inbox.address, "Welcome"))

    async def scenario() -> None:
        await inbox.assert_no_message_async(subject="Other", within=0.1)
        with pytest.raises(MailAssertionError, match="'Welcome'"):
            await inbox.assert_no_message_async(sender="APP@", within=5)

    asyncio.run(scenario())


# --- text= and patterns -----------------------------------------------------------


def test_text_filter_finds_a_phrase_in_the_text_body(inbox: Inbox, server: InboxServer) -> None:
    send(server, make_message(inbox.address, "One", "Nothing to see.\n"))
    send(server, make_message(inbox.address, "Two", "Your order has\nshipped today.\n"))
    assert inbox.wait_for_message(text="order has shipped", timeout=5).subject == "Two"


def test_text_filter_reads_the_visible_text_of_html(inbox: Inbox, server: InboxServer) -> None:
    html = '<p>Your code is <b>482913</b></p><p style="display:none">ignored</p>'
    send(server, html_message(inbox.address, "Code", html))
    assert inbox.wait_for_message(text="Your code is 482913", timeout=5).subject == "Code"


def test_text_filter_is_case_sensitive_and_says_so_on_timeout(
    inbox: Inbox, server: InboxServer
) -> None:
    send(server, make_message(inbox.address, "Hi", "Welcome Aboard\n"))
    with pytest.raises(WaitTimeout) as raised:
        inbox.wait_for_message(text="welcome aboard", timeout=0.2)
    assert "its text matches but for letter case" in str(raised.value)


def test_a_subject_that_differs_in_case_is_named_on_timeout(
    inbox: Inbox, server: InboxServer
) -> None:
    send(server, make_message(inbox.address, "Welcome to Example"))
    with pytest.raises(WaitTimeout) as raised:
        inbox.wait_for_message(subject="welcome", timeout=0.2)
    message = str(raised.value)
    assert "'Welcome to Example' (its subject matches but for letter case" in message


def test_patterns_are_searched_in_subject_sender_and_text(
    inbox: Inbox, server: InboxServer
) -> None:
    send(
        server, make_message(inbox.address, "Order 1042 shipped", "Track it.\n", "shop@example.com")
    )
    send(server, make_message(inbox.address, "Welcome", "Code: 4821-XY\n", "auth@example.com"))
    assert inbox.wait_for_message(subject=re.compile(r"Order \d+"), timeout=5).subject.startswith(
        "Order"
    )
    assert inbox.wait_for_message(sender=re.compile(r"^auth@"), timeout=5).subject == "Welcome"
    found = inbox.wait_for_message(text=re.compile(r"Code: \d{4}-[A-Z]{2}"), timeout=5)
    assert found.subject == "Welcome"


def test_a_pattern_filter_is_named_by_its_pattern_on_timeout(inbox: Inbox) -> None:
    with pytest.raises(WaitTimeout, match=r"no message with subject matching 'Order \\\\d\+'"):
        inbox.wait_for_message(subject=re.compile(r"Order \d+"), timeout=0.1)


def test_wait_for_messages_counts_only_matching_messages(inbox: Inbox, server: InboxServer) -> None:
    for subject in ("Reminder 1", "Receipt", "Reminder 2"):
        send(server, make_message(inbox.address, subject))
    found = inbox.wait_for_messages(2, subject="Reminder", timeout=5)
    assert [message.subject for message in found] == ["Reminder 1", "Reminder 2"]


def test_wait_for_messages_timeout_says_how_many_passed(inbox: Inbox, server: InboxServer) -> None:
    send(server, make_message(inbox.address, "Reminder 1"))
    send(server, make_message(inbox.address, "Receipt"))
    with pytest.raises(WaitTimeout) as raised:
        inbox.wait_for_messages(2, subject="Reminder", timeout=0.2)
    text = str(raised.value)
    assert "fewer than 2 messages with subject containing 'Reminder' arrived" in text
    assert "'Reminder 1' (passes)" in text
    assert "1 of them pass the filters." in text


def test_text_filter_async(inbox: Inbox, server: InboxServer) -> None:
    send(server, make_message(inbox.address, "Hi", "The  quick\n brown fox\n"))

    async def scenario() -> Message:
        return await inbox.wait_for_message_async(text="quick brown", timeout=5)

    assert asyncio.run(scenario()).subject == "Hi"


def test_wait_for_messages_async_takes_filters(inbox: Inbox, server: InboxServer) -> None:
    send(server, make_message(inbox.address, "A", sender="one@example.com"))
    send(server, make_message(inbox.address, "B", sender="two@example.com"))

    async def scenario() -> list[Message]:
        return await inbox.wait_for_messages_async(1, sender="two@", timeout=5)

    assert [message.subject for message in asyncio.run(scenario())] == ["B"]


# --- attachment() ---------------------------------------------------------------------


def with_attachments(to: str) -> EmailMessage:
    message = make_message(to, "Your invoice", "Attached.\n")
    message.add_attachment(
        b"%PDF-1.7", maintype="application", subtype="pdf", filename="Invoice-42.pdf"
    )
    message.add_attachment(b"a,b\n", maintype="text", subtype="csv", filename="items.csv")
    message.add_attachment(
        b"\x89PNG", maintype="image", subtype="png", filename="logo.png", disposition="inline"
    )
    return message


@pytest.fixture
def invoice(inbox: Inbox, server: InboxServer) -> Message:
    send(server, with_attachments(inbox.address))
    return inbox.wait_for_message(timeout=5)


def test_attachment_by_name_pattern_ignores_case(invoice: Message) -> None:
    found = invoice.attachment("invoice-*.PDF")
    assert found.filename == "Invoice-42.pdf"
    assert found.content() == b"%PDF-1.7"


def test_attachment_by_content_type_pattern(invoice: Message) -> None:
    assert invoice.attachment(content_type="text/*").filename == "items.csv"


def test_inline_parts_count_only_when_asked(invoice: Message) -> None:
    with pytest.raises(MailAssertionError, match="pass inline=True"):
        invoice.attachment(content_type="image/*")
    assert invoice.attachment(content_type="image/*", inline=True).filename == "logo.png"


def test_attachment_fails_on_none_listing_them(invoice: Message) -> None:
    with pytest.raises(MailAssertionError) as raised:
        invoice.attachment("receipt.pdf")
    assert str(raised.value).splitlines() == [
        "no attachment named 'receipt.pdf' in message 'Your invoice' from app@example.com;"
        " its 3 attachment(s):",
        "  - #0 'Invoice-42.pdf' application/pdf, 8 bytes",
        "  - #1 'items.csv' text/csv, 4 bytes",
        "  - #2 'logo.png' image/png, 4 bytes, inline",
    ]


def test_attachment_fails_on_several(invoice: Message) -> None:
    with pytest.raises(MailAssertionError) as raised:
        invoice.attachment(inline=True)
    assert str(raised.value).startswith(
        "3 attachments in message 'Your invoice' from app@example.com; expected one:"
    )


def test_attachment_of_a_message_without_any(inbox: Inbox, server: InboxServer) -> None:
    send(server, make_message(inbox.address, "Plain"))
    message = inbox.wait_for_message(timeout=5)
    with pytest.raises(MailAssertionError, match="it has no attachments at all"):
        message.attachment("*.pdf")


# --- the failures as pytest shows them --------------------------------------------


FAILURES = """
import smtplib
from email.message import EmailMessage


def send(server, to, subject):
    message = EmailMessage()
    message["From"] = "app@example.com"
    message["To"] = to
    message["Subject"] = subject
    message.set_content("Hello Ada,\\nyour password was changed.\\n")
    with smtplib.SMTP(server.smtp_host, server.smtp_port, local_hostname="localhost") as smtp:
        smtp.send_message(message)


def test_no_mail(tempinbox, tempinbox_server):
    send(tempinbox_server, tempinbox.address, "Password changed")
    tempinbox.assert_no_message(subject="Password", within=5)


def test_attachment(tempinbox, tempinbox_server):
    send(tempinbox_server, tempinbox.address, "Receipt")
    tempinbox.wait_for_message().attachment("*.pdf")


def test_wait(tempinbox, tempinbox_server):
    send(tempinbox_server, tempinbox.address, "Password changed")
    tempinbox.wait_for_message(text="Your Password Was Changed", timeout=0.2)
"""


def test_failures_are_reported_as_failed_assertions(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(FAILURES)
    result = pytester.runpytest("-p", "no:randomly")
    result.assert_outcomes(failed=3)
    result.stdout.fnmatch_lines(
        [
            "E * pytest_tempinbox.errors.MailAssertionError: expected no message with subject"
            " containing 'Password' at *@tempinbox.test within 5 s, but one was already there"
            " when the check began (received * s before):",
            "E *   - *.* from app@example.com: 'Password changed'",
            "E *     | Hello Ada,",
            "E *     | your password was changed.",
            "E * pytest_tempinbox.errors.MailAssertionError: no attachment named '*.pdf'"
            " in message 'Receipt' from app@example.com: it has no attachments at all.",
            "E * pytest_tempinbox.errors.WaitTimeout: no message with text containing"
            " 'Your Password Was Changed' arrived at *@tempinbox.test within 0.2 s;",
            "E * the inbox received 1 message(s):",
            "E *   - *.* from app@example.com: 'Password changed' (its text matches but for"
            " letter case (text= is case-sensitive))",
        ]
    )
    # The frames of the package are hidden: the test's own line is the last shown.
    assert "pytest_tempinbox/inbox.py" not in result.stdout.str()
