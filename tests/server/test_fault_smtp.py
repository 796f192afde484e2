"""Fault injection as real SMTP clients see it: replies, disconnects, order and isolation."""

from __future__ import annotations

import asyncio
import smtplib
import threading
import time
from collections.abc import Iterator

import aiosmtplib
import pytest
import requests

from pytest_tempinbox.server.inbox_server import InboxServer

from ..helpers import CLIENT_NAME, TIMER_SLACK, RawSMTP, run_swaks
from .faults_support import MAIL, TIMEOUT, add, begin, finish, generate, pending, send, stored


@pytest.fixture
def smtp(server: InboxServer) -> Iterator[smtplib.SMTP]:
    """An smtplib client with a socket timeout."""
    with smtplib.SMTP(
        server.smtp_host, server.smtp_port, local_hostname=CLIENT_NAME, timeout=TIMEOUT
    ) as client:
        yield client


# --- what SMTP clients see: replies --------------------------------------------------


def test_a_reply_at_rcpt_refuses_only_that_recipient(
    server: InboxServer, api: str, http: requests.Session, address: str
) -> None:
    other = generate(server)
    add(http, api, address, {"stage": "rcpt", "code": 451, "message": "4.7.1 greylisted"})

    refused = send(server, [address, other])

    assert refused == {address: (451, b"4.7.1 greylisted")}
    assert stored(server, address) == 0
    assert stored(server, other) == 1
    # The other copy's envelope lists the recipients the server accepted.
    (message,) = server.store.messages(other)
    assert message.envelope.rcpt_to == (other,)


def test_a_reply_at_rcpt_with_smtplib_alone(
    server: InboxServer, api: str, http: requests.Session, address: str
) -> None:
    add(http, api, address, {"stage": "rcpt", "code": 550, "message": "5.1.1 no such user"})
    with pytest.raises(smtplib.SMTPRecipientsRefused) as refused:
        send(server, [address])
    assert refused.value.recipients == {address: (550, b"5.1.1 no such user")}
    assert stored(server, address) == 0
    # The fault is used up: the next delivery goes through.
    assert send(server, [address]) == {}
    assert stored(server, address) == 1


def test_a_reply_at_rcpt_with_aiosmtplib(
    server: InboxServer, api: str, http: requests.Session, address: str
) -> None:
    add(http, api, address, {"stage": "rcpt", "code": 452, "message": "4.2.2 mailbox full"})

    async def deliver() -> None:
        async with aiosmtplib.SMTP(
            hostname=server.smtp_host, port=server.smtp_port, local_hostname=CLIENT_NAME
        ) as client:
            with pytest.raises(aiosmtplib.SMTPRecipientsRefused) as refused:
                await client.sendmail("app@example.com", [address], MAIL)
            (error,) = refused.value.recipients
            assert (error.code, error.message) == (452, "4.2.2 mailbox full")
            await client.sendmail("app@example.com", [address], MAIL)

    asyncio.run(deliver())
    assert stored(server, address) == 1


def test_a_reply_at_data_stores_the_message_for_nobody(
    server: InboxServer, api: str, http: requests.Session, address: str
) -> None:
    other = generate(server)
    add(http, api, address, {"stage": "data", "code": 554, "message": "5.7.1 refused"})

    with pytest.raises(smtplib.SMTPDataError) as refused:
        send(server, [other, address])

    assert (refused.value.smtp_code, refused.value.smtp_error) == (554, b"5.7.1 refused")
    assert stored(server, address) == stored(server, other) == 0
    assert pending(http, api, address) == []
    # The client sends it again, to both: each gets one copy.
    assert send(server, [other, address]) == {}
    assert stored(server, address) == stored(server, other) == 1


def test_a_reply_at_data_with_aiosmtplib(
    server: InboxServer, api: str, http: requests.Session, address: str
) -> None:
    add(http, api, address, {"stage": "data", "code": 451})

    async def deliver() -> None:
        async with aiosmtplib.SMTP(
            hostname=server.smtp_host, port=server.smtp_port, local_hostname=CLIENT_NAME
        ) as client:
            with pytest.raises(aiosmtplib.SMTPDataError) as refused:
                await client.sendmail("app@example.com", [address], MAIL)
            assert refused.value.code == 451
            assert refused.value.message.startswith("4.0.0 ")

    asyncio.run(deliver())
    assert stored(server, address) == 0


def test_swaks_sees_the_reply(
    server: InboxServer, api: str, http: requests.Session, address: str
) -> None:
    add(http, api, address, {"stage": "rcpt", "code": 550, "message": "5.1.1 swaks refused"})
    refused = run_swaks(server, address, timeout=TIMEOUT)
    assert refused.returncode == 24, refused.stdout + refused.stderr  # 24: every RCPT refused
    assert "550 5.1.1 swaks refused" in refused.stdout
    delivered = run_swaks(server, address, timeout=TIMEOUT)
    assert delivered.returncode == 0, delivered.stdout + delivered.stderr
    assert stored(server, address) == 1


def test_a_421_is_followed_by_closing_the_connection(
    raw_smtp: RawSMTP, api: str, http: requests.Session, address: str
) -> None:
    add(http, api, address, {"stage": "rcpt", "code": 421, "message": "4.3.2 shutting down"})
    (reply,) = begin(raw_smtp, address)
    assert reply == (421, "4.3.2 shutting down")
    with pytest.raises(ConnectionError):
        raw_smtp.reply()


# --- disconnects -----------------------------------------------------------------------


def test_a_disconnect_at_rcpt_closes_without_an_answer(
    raw_smtp: RawSMTP, server: InboxServer, api: str, http: requests.Session, address: str
) -> None:
    add(http, api, address, {"stage": "rcpt", "disconnect": True})
    assert raw_smtp.command(f"EHLO {CLIENT_NAME}")[0] == 250
    assert raw_smtp.command("MAIL FROM:<app@example.com>")[0] == 250
    raw_smtp.send(f"RCPT TO:<{address}>\r\n".encode())
    assert raw_smtp.file.readline() == b""  # closed, nothing said
    assert send(server, [address]) == {}


def test_a_disconnect_at_data_stores_nothing(
    server: InboxServer, api: str, http: requests.Session, address: str
) -> None:
    other = generate(server)
    add(http, api, address, {"stage": "data", "disconnect": True})
    with pytest.raises(smtplib.SMTPServerDisconnected):
        send(server, [address, other])
    assert stored(server, address) == stored(server, other) == 0
    assert send(server, [address, other]) == {}
    assert stored(server, address) == stored(server, other) == 1


def test_aiosmtplib_sees_a_disconnect(
    server: InboxServer, api: str, http: requests.Session, address: str
) -> None:
    add(http, api, address, {"stage": "data", "disconnect": True})

    async def deliver() -> None:
        client = aiosmtplib.SMTP(
            hostname=server.smtp_host, port=server.smtp_port, local_hostname=CLIENT_NAME
        )
        await client.connect()
        with pytest.raises(aiosmtplib.SMTPServerDisconnected):
            await client.sendmail("app@example.com", [address], MAIL)
        client.close()

    asyncio.run(deliver())
    assert stored(server, address) == 0


# --- order, times and isolation --------------------------------------------------------


def test_times_counts_the_deliveries_a_fault_strikes(
    server: InboxServer, api: str, http: requests.Session, address: str
) -> None:
    add(http, api, address, {"stage": "rcpt", "code": 451, "times": 3})
    for left in (2, 1, 0):
        with pytest.raises(smtplib.SMTPRecipientsRefused):
            send(server, [address])
        assert [fault["times"] for fault in pending(http, api, address)] == [left] * bool(left)
    assert send(server, [address]) == {}
    assert stored(server, address) == 1


def test_faults_strike_in_the_order_they_were_added(
    server: InboxServer, api: str, http: requests.Session, address: str
) -> None:
    add(http, api, address, {"stage": "data", "code": 452})
    add(http, api, address, {"stage": "rcpt", "code": 550})
    add(http, api, address, {"stage": "data", "disconnect": True})

    with pytest.raises(smtplib.SMTPDataError) as first:  # a data fault first: RCPT passes
        send(server, [address])
    assert first.value.smtp_code == 452
    with pytest.raises(smtplib.SMTPRecipientsRefused) as second:
        send(server, [address])
    assert second.value.recipients[address][0] == 550
    with pytest.raises(smtplib.SMTPServerDisconnected):
        send(server, [address])
    assert send(server, [address]) == {}
    assert stored(server, address) == 1


def test_a_transaction_takes_one_fault_per_address(
    server: InboxServer, raw_smtp: RawSMTP, api: str, http: requests.Session, address: str
) -> None:
    add(http, api, address, {"stage": "rcpt", "code": 451, "times": 2})
    add(http, api, address, {"stage": "data", "code": 554})
    # A repeated RCPT of the same address, in the same transaction, takes no second fault.
    assert begin(raw_smtp, address, address)[0][0] == 451
    assert pending(http, api, address)[0]["times"] == 1
    assert raw_smtp.command(f"RCPT TO:<{address}>")[0] == 250
    assert finish(raw_smtp)[0] == 250
    assert [fault["times"] for fault in pending(http, api, address)] == [1, 1]


def test_a_transaction_that_ends_before_data_takes_no_data_fault(
    raw_smtp: RawSMTP, api: str, http: requests.Session, address: str
) -> None:
    add(http, api, address, {"stage": "data", "code": 451})
    assert begin(raw_smtp, address)[0][0] == 250
    assert raw_smtp.command("RSET")[0] == 250
    assert len(pending(http, api, address)) == 1
    begin_again = raw_smtp.command("MAIL FROM:<app@example.com>")
    assert begin_again[0] == 250
    assert raw_smtp.command(f"RCPT TO:<{address}>")[0] == 250
    assert finish(raw_smtp)[0] == 451
    assert pending(http, api, address) == []


def test_other_inboxes_are_untouched_in_other_transactions(
    server: InboxServer, api: str, http: requests.Session, address: str
) -> None:
    other = generate(server)
    add(http, api, address, {"stage": "rcpt", "code": 451})
    add(http, api, address, {"stage": "data", "disconnect": True})
    assert send(server, [other]) == {}
    assert send(server, [other.upper()]) == {}
    assert stored(server, other) == 2
    assert len(pending(http, api, address)) == 2
    assert pending(http, api, other) == []


def test_faults_of_several_recipients_at_data_make_one_answer(
    server: InboxServer, raw_smtp: RawSMTP, api: str, http: requests.Session, address: str
) -> None:
    other = generate(server)
    add(http, api, address, {"stage": "data", "delay": 0.4})
    add(http, api, other, {"stage": "data", "code": 452, "message": "4.2.2 full"})
    begin(raw_smtp, address, other)
    started = time.monotonic()
    assert finish(raw_smtp) == (452, "4.2.2 full")  # after the longest delay
    assert time.monotonic() - started >= 0.4 - TIMER_SLACK
    assert pending(http, api, address) == pending(http, api, other) == []
    assert stored(server, address) == stored(server, other) == 0


def test_an_inbox_deleted_during_a_rcpt_delay_is_refused(
    server: InboxServer, raw_smtp: RawSMTP, api: str, http: requests.Session, address: str
) -> None:
    add(http, api, address, {"stage": "rcpt", "delay": 0.5})
    threading.Timer(0.1, server.store.delete, (address,)).start()
    assert begin(raw_smtp, address)[0][0] == 550
