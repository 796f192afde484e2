"""The Python client and the inbox handle, against a real server."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
from datetime import timezone
from typing import Any

import aiosmtplib
import pytest

from pytest_tempinbox.client.http import TempInboxClient
from pytest_tempinbox.client.inbox import Inbox
from pytest_tempinbox.errors import (
    InboxNotFound,
    InvalidAddress,
    InvalidRequest,
    MessageNotFound,
    ServerUnavailable,
    TempInboxError,
    WaitTimeout,
)
from pytest_tempinbox.models import Address, Message
from pytest_tempinbox.server.inbox_server import InboxServer

from ..helpers import CLIENT_NAME, TIMER_SLACK, make_message, record, send


def send_later(server: InboxServer, delay: float, to: str, subject: str) -> threading.Timer:
    timer = threading.Timer(delay, send, args=(server, make_message(to, subject=subject)))
    timer.start()
    return timer


def test_generate_returns_an_inbox_whose_str_is_its_address(client: TempInboxClient) -> None:
    inbox = client.generate(prefix="welcome", domain="other.test")
    assert str(inbox) == inbox.address
    assert inbox.address.startswith("welcome-")
    assert inbox.address.endswith("@other.test")


def test_messages_are_typed(server: InboxServer, inbox: Inbox) -> None:
    send(server, make_message(inbox.address, subject="Typed", sender="Ann <ann@example.com>"))
    (message,) = inbox.messages()
    assert isinstance(message, Message)
    assert message.sender == Address(name="Ann", email="ann@example.com")
    assert message.to == (Address(name=None, email=inbox.address),)
    assert message.subject == "Typed"
    assert message.received_at.tzinfo is not None
    assert message.received_at.utcoffset() == timezone.utc.utcoffset(None)
    assert message.headers["subject"] == ("Typed",)


def test_message_by_id_equals_the_listed_one(
    server: InboxServer, client: TempInboxClient, inbox: Inbox
) -> None:
    send(server, make_message(inbox.address))
    (listed,) = inbox.messages()
    assert client.message(inbox.address, listed.id) == listed


def test_raw_and_attachment_bytes_download(server: InboxServer, inbox: Inbox) -> None:
    message = make_message(inbox.address)
    message.add_attachment(b"\x00\x01binary", maintype="application", subtype="octet-stream")
    send(server, message)
    (got,) = inbox.messages()
    assert got.raw().startswith(b"From: app@example.com\r\n")
    (attachment,) = got.attachments
    assert attachment.content() == b"\x00\x01binary"


def test_server_errors_become_package_errors(client: TempInboxClient, inbox: Inbox) -> None:
    with pytest.raises(InvalidRequest, match="prefix"):
        client.generate(prefix="Not Valid")
    with pytest.raises(InvalidAddress):
        client.messages("not-an-address")
    with pytest.raises(MessageNotFound):
        client.message(inbox.address, "0000")
    assert inbox.delete() == 0
    with pytest.raises(InboxNotFound) as not_found:
        inbox.messages()
    assert not_found.value.status == 404
    assert isinstance(not_found.value, TempInboxError)


def test_an_unreachable_server_is_server_unavailable() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with (
        TempInboxClient(f"http://127.0.0.1:{port}/api", timeout=2) as client,
        pytest.raises(ServerUnavailable, match=str(port)),
    ):
        client.generate()


def test_wait_for_message_returns_a_message_already_there(
    server: InboxServer, inbox: Inbox
) -> None:
    send(server, make_message(inbox.address, subject="Welcome, Ann"))
    assert inbox.wait_for_message(subject="Welcome", timeout=5).subject == "Welcome, Ann"


def test_wait_for_message_waits_for_a_later_message(server: InboxServer, inbox: Inbox) -> None:
    timer = send_later(server, 0.3, inbox.address, "Reset your password")
    started = time.monotonic()
    try:
        message = inbox.wait_for_message(subject="Reset", timeout=20)
    finally:
        timer.join()
    assert message.subject == "Reset your password"
    assert time.monotonic() - started < 10


def test_wait_for_message_skips_messages_that_do_not_match(
    server: InboxServer, inbox: Inbox
) -> None:
    send(server, make_message(inbox.address, subject="Newsletter"))
    timer = send_later(server, 0.3, inbox.address, "Welcome")
    try:
        message = inbox.wait_for_message(subject="Welcome", timeout=20)
    finally:
        timer.join()
    assert message.subject == "Welcome"
    assert len(inbox.messages()) == 2


def test_wait_for_message_filters_by_sender_and_match(server: InboxServer, inbox: Inbox) -> None:
    send(server, make_message(inbox.address, subject="one", sender="noreply@shop.test"))
    send(server, make_message(inbox.address, subject="two", sender="Billing <BILLING@shop.test>"))
    send(server, make_message(inbox.address, subject="three", sender="billing@shop.test"))
    assert inbox.wait_for_message(sender="billing@", timeout=5).subject == "two"
    found = inbox.wait_for_message(sender="billing", match=lambda m: m.subject == "three")
    assert found.subject == "three"


def test_wait_timeout_lists_what_arrived(server: InboxServer, inbox: Inbox) -> None:
    send(server, make_message(inbox.address, subject="Something else", sender="bot@shop.test"))
    started = time.monotonic()
    with pytest.raises(WaitTimeout) as timed_out:
        inbox.wait_for_message(subject="Welcome", timeout=0.3)
    assert time.monotonic() - started >= 0.3 - TIMER_SLACK
    assert isinstance(timed_out.value, TimeoutError)
    text = str(timed_out.value)
    assert "subject containing 'Welcome'" in text
    assert inbox.address in text
    assert "bot@shop.test" in text
    assert "'Something else'" in text


def test_wait_timeout_on_an_empty_inbox_says_so(inbox: Inbox) -> None:
    with pytest.raises(WaitTimeout, match="no mail at all"):
        inbox.wait_for_message(timeout=0.1)


def test_wait_for_messages_waits_for_the_count(server: InboxServer, inbox: Inbox) -> None:
    send(server, make_message(inbox.address, subject="first"))
    timer = send_later(server, 0.3, inbox.address, "second")
    try:
        messages = inbox.wait_for_messages(2, timeout=20)
    finally:
        timer.join()
    assert [message.subject for message in messages] == ["first", "second"]


def test_wait_for_messages_times_out_when_too_few_arrive(server: InboxServer, inbox: Inbox) -> None:
    send(server, make_message(inbox.address, subject="only"))
    with pytest.raises(WaitTimeout, match="fewer than 2 messages"):
        inbox.wait_for_messages(2, timeout=0.2)


def test_a_message_built_from_json_without_a_client_cannot_download() -> None:
    data: dict[str, Any] = {
        "id": "1",
        "inbox": "a@b.test",
        "subaddress": None,
        "envelope": {"mail_from": "", "rcpt_to": ["a@b.test"]},
        "message_id": None,
        "from": None,
        "to": [],
        "cc": [],
        "reply_to": [],
        "subject": "",
        "date": None,
        "received_at": "2026-01-01T00:00:00.000Z",
        "text": None,
        "html": None,
        "headers": {},
        "attachments": [],
        "links": [],
        "link_details": [],
        "codes": [],
        "size": 0,
        "defects": [],
        "unsubscribe": None,
        "dkim": None,
        "provider": None,
    }
    message = Message.from_json(data)
    assert message.to_json() == data
    with pytest.raises(TempInboxError, match="no source"):
        message.raw()


# --- the awaitable twins -----------------------------------------------------------------


async def send_async(server: InboxServer, to: str, subject: str, delay: float = 0.0) -> None:
    """Send from a task on the caller's own loop, as an async application does."""
    await asyncio.sleep(delay)
    await aiosmtplib.send(
        make_message(to, subject=subject),
        hostname=server.smtp_host,
        port=server.smtp_port,
        local_hostname=CLIENT_NAME,
    )


def test_wait_for_message_async_lets_the_loop_send_the_mail(
    server: InboxServer, inbox: Inbox
) -> None:
    async def scenario() -> Message:
        sender = asyncio.create_task(send_async(server, inbox.address, "Welcome", delay=0.2))
        message = await inbox.wait_for_message_async(subject="Welcome", timeout=20)
        await sender
        return message

    assert asyncio.run(scenario()).subject == "Welcome"


def test_wait_for_messages_async_and_downloads(server: InboxServer, inbox: Inbox) -> None:
    message = make_message(inbox.address, subject="with file")
    message.add_attachment(b"\x00bytes", maintype="application", subtype="octet-stream")

    async def scenario() -> tuple[list[Message], bytes, bytes, list[Message]]:
        sender = asyncio.create_task(asyncio.to_thread(send, server, message))
        received = await inbox.wait_for_messages_async(1, timeout=20)
        await sender
        raw = await received[0].raw_async()
        content = await received[0].attachments[0].content_async()
        return received, raw, content, await inbox.messages_async()

    received, raw, content, listed = asyncio.run(scenario())
    assert [m.subject for m in received] == ["with file"]
    assert raw.startswith(b"From: app@example.com")
    assert content == b"\x00bytes"
    assert listed == received


def test_async_timeouts_say_the_same_as_sync_ones(server: InboxServer, inbox: Inbox) -> None:
    send(server, make_message(inbox.address, subject="Other", sender="bot@shop.test"))
    with pytest.raises(WaitTimeout) as sync_error:
        inbox.wait_for_message(subject="Welcome", timeout=0.2)
    with pytest.raises(WaitTimeout) as async_error:
        asyncio.run(inbox.wait_for_message_async(subject="Welcome", timeout=0.2))
    assert str(async_error.value) == str(sync_error.value)


def test_async_errors_are_the_package_errors(client: TempInboxClient, inbox: Inbox) -> None:
    async def scenario() -> None:
        assert await inbox.delete_async() == 0
        await client.messages_async(inbox.address)

    with pytest.raises(InboxNotFound):
        asyncio.run(scenario())
    with pytest.raises(InvalidRequest):
        asyncio.run(client.generate_async(prefix="Bad Prefix"))


def test_cancelling_an_async_wait_ends_it_at_once(
    server: InboxServer, client: TempInboxClient, inbox: Inbox
) -> None:
    async def scenario() -> float:
        started = time.monotonic()
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(inbox.wait_for_message_async(timeout=30), 0.3)
        return time.monotonic() - started

    assert asyncio.run(scenario()) < 2
    # Nothing is left waiting on the server: the local transport cancels the
    # request itself; over HTTP, the last long-poll is at most a second long.
    deadline = time.monotonic() + 3
    while record(server, inbox.address).waiters and time.monotonic() < deadline:
        time.sleep(0.05)
    assert record(server, inbox.address).waiters == set()
