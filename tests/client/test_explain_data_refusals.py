"""A wait that saw no mail names the message refused at the end of DATA, and its reply."""

from __future__ import annotations

import smtplib
from collections.abc import Iterator
from datetime import datetime, timezone

import pytest

from pytest_tempinbox.client.explain import refusal_lines
from pytest_tempinbox.client.http import Inbox, TempInboxClient
from pytest_tempinbox.errors import WaitTimeout
from pytest_tempinbox.models import Refusal
from pytest_tempinbox.server.inbox_server import InboxServer

from ..helpers import CLIENT_NAME

SIZE_LIMIT = 2000
BIG = b"Subject: Welcome\r\n\r\n" + (b"x" * 70 + b"\r\n") * 40
TOO_BIG = "552 Error: Too much mail data"


@pytest.fixture
def small_server() -> Iterator[InboxServer]:
    """A server taking messages of at most :data:`SIZE_LIMIT` octets."""
    with InboxServer(message_size_limit=SIZE_LIMIT) as server:
        yield server


@pytest.fixture
def local_client(small_server: InboxServer) -> Iterator[TempInboxClient]:
    """A client of the server in this process: the mail it refused is this test's."""
    with TempInboxClient(small_server.api_url, transport=small_server.local_transport()) as client:
        yield client


def _send(server: InboxServer, recipients: list[str], message: bytes) -> None:
    """Send ``message`` without SIZE= (which MAIL would refuse at once), whatever DATA answers."""
    with smtplib.SMTP(server.smtp_host, server.smtp_port, local_hostname=CLIENT_NAME) as smtp:
        smtp.ehlo()
        smtp.mail("app@example.test")
        for recipient in recipients:
            smtp.rcpt(recipient)
        smtp.data(message)


def _failure(server: InboxServer, inbox: Inbox, also: tuple[str, ...] = ()) -> list[str]:
    """The lines of ``inbox``'s failed wait after mail too big to it (and to ``also``)."""
    _send(server, [inbox.address, *also], BIG)
    with pytest.raises(WaitTimeout) as failure:
        inbox.wait_for_message(subject="Welcome", timeout=0.2)
    return str(failure.value).splitlines()


def test_a_wait_names_the_reply_that_refused_its_message_at_data(
    small_server: InboxServer, local_client: TempInboxClient
) -> None:
    inbox = local_client.generate()
    address = inbox.address
    lines = _failure(small_server, inbox)
    assert lines[2].endswith(
        "it reached the server, so the host and port (EMAIL_HOST, EMAIL_PORT) are right;"
        " the server refused the message itself:"
    )
    assert lines[3].startswith(f"  - {address!r} at ")
    assert lines[3].endswith(
        f" from 127.0.0.1 (EHLO {CLIENT_NAME}): {TOO_BIG} (the server refused the message at"
        " the end of DATA: the message is over the server's size limit: send less, or raise"
        " --max-message-size)"
    )


def test_a_wait_shows_the_conversation_that_ended_with_the_refusal_at_data(
    small_server: InboxServer, local_client: TempInboxClient
) -> None:
    lines = _failure(small_server, local_client.generate())
    assert lines[4:9] == [
        "    its SMTP conversation ended:",
        "      C: data",
        "      S: 354 End data with <CR><LF>.<CR><LF>",
        f"      C: <{len(BIG)} octets of message data>",
        f"      S: {TOO_BIG}",
    ]


def test_a_refused_recipient_beside_keeps_the_header_blaming_the_recipient(
    small_server: InboxServer, local_client: TempInboxClient
) -> None:
    inbox = local_client.generate()
    lines = _failure(small_server, inbox, (f"nobody-{inbox.address}",))
    assert lines[2].endswith("are right; the recipient is not:")
    assert any(": not a live generated address (no inbox has" in line for line in lines)
    assert any(f": {TOO_BIG} (the server refused the message at the end" in line for line in lines)


AT = datetime(2026, 5, 4, 12, 0, 1, 234000, tzinfo=timezone.utc)


@pytest.mark.parametrize(
    ("reply", "cause"),
    [
        (
            "552 5.2.2 Mailbox full: the inbox's tenant holds 600 of its quota of 500 bytes",
            "the inbox's tenant holds its bytes quota: delete some of its mail or raise the"
            " quota, see docs/tenants.md",
        ),
        (
            "500 Line too long (see RFC5321 4.5.3.1.6)",
            "a line of the message is over the server's line limit, 1,000 octets by default:"
            " wrap long lines, send quoted-printable, or raise --data-line-limit",
        ),
        (
            "554 5.1.1 No live recipients left: the inboxes were deleted",
            "every recipient's inbox was deleted between RCPT TO and the end of DATA",
        ),
        ("552 5.3.4 Message too big for system", "the message is over the server's size limit"),
        ("554 5.7.1 Spam", "its reply says why"),
    ],
    ids=["bytes-quota", "line-too-long", "inboxes-deleted", "too-big", "another"],
)
def test_a_refusal_at_data_is_explained_by_its_reply(
    local_client: TempInboxClient, reply: str, cause: str
) -> None:
    inbox = local_client.generate()
    refusal = Refusal(AT, inbox.address, reply, "127.0.0.1", "app", stage="data")
    (_, line) = refusal_lines(inbox, [refusal], [refusal])
    assert line.startswith(
        f"  - {inbox.address!r} at 12:00:01.234 from 127.0.0.1 (EHLO app): {reply} (the server"
        f" refused the message at the end of DATA: {cause}"
    )


def test_the_plugin_names_a_message_refused_at_data(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import contextlib
        import smtplib


        def test_welcome(tempinbox, tempinbox_server):
            host, port = tempinbox_server.smtp_host, tempinbox_server.smtp_port
            message = b"Subject: Welcome\\r\\n\\r\\n" + b"y" * 1200 + b"\\r\\n"
            with contextlib.suppress(smtplib.SMTPDataError):  # as fail_silently=True
                with smtplib.SMTP(host, port, local_hostname="app.example") as smtp:
                    smtp.sendmail("app@example.com", [tempinbox.address], message)
            tempinbox.wait_for_message(subject="Welcome", timeout=0.2)
        """
    )
    result = pytester.runpytest("-p", "no:randomly")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "E       the inbox received no mail at all.",
            "E       the server refused mail while this test ran*the server refused the message"
            " itself:",
            "E         - '*@tempinbox.test' at * from 127.0.0.1 (EHLO app.example): 500 Line too"
            " long (see RFC5321 4.5.3.1.6) (the server refused the message at the end of DATA:"
            " a line of the message is over the server's line limit*",
            "E           its SMTP conversation ended:",
        ]
    )
    assert "the recipient is not" not in result.stdout.str()
