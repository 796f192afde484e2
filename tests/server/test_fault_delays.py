"""Fault injection as real SMTP clients see it: delays held before an answer."""

from __future__ import annotations

import asyncio
import smtplib
import threading
import time

import aiosmtplib
import pytest
import requests

from pytest_tempinbox.server.inbox_server import InboxServer

from ..helpers import CLIENT_NAME, TIMER_SLACK, RawSMTP
from .faults_support import MAIL, add, begin, finish, generate, pending, send, stored

# --- delays ----------------------------------------------------------------------------


def test_a_delay_at_rcpt_holds_the_answer_then_accepts(
    server: InboxServer, raw_smtp: RawSMTP, api: str, http: requests.Session, address: str
) -> None:
    add(http, api, address, {"stage": "rcpt", "delay": 0.4})
    started = time.monotonic()
    (reply,) = begin(raw_smtp, address)
    assert time.monotonic() - started >= 0.4 - TIMER_SLACK
    assert reply[0] == 250
    # The transaction took its fault at RCPT: DATA is answered at once.
    started = time.monotonic()
    assert finish(raw_smtp)[0] == 250
    assert time.monotonic() - started < 0.4
    assert stored(server, address) == 1


def test_a_delay_at_data_holds_the_answer_then_stores(
    server: InboxServer, raw_smtp: RawSMTP, api: str, http: requests.Session, address: str
) -> None:
    add(http, api, address, {"stage": "data", "delay": 0.4})
    begin(raw_smtp, address)
    started = time.monotonic()
    code, text = finish(raw_smtp)
    assert time.monotonic() - started >= 0.4 - TIMER_SLACK
    assert code == 250
    assert stored(server, address) == 1
    assert server.store.messages(address)[0].id in text


def test_a_client_that_times_out_during_a_delay_gets_nothing_stored(
    server: InboxServer, api: str, http: requests.Session, address: str
) -> None:
    add(http, api, address, {"stage": "data", "delay": 2.0})
    started = time.monotonic()
    with pytest.raises(smtplib.SMTPServerDisconnected, match="timed out"):
        send(server, [address], timeout=0.3)
    assert time.monotonic() - started < 2.0
    time.sleep(2.0)  # past the delay's end: still nothing
    assert stored(server, address) == 0
    assert pending(http, api, address) == []  # the fault is used up all the same
    assert send(server, [address]) == {}
    assert stored(server, address) == 1


def test_aiosmtplib_times_out_during_a_delay(
    server: InboxServer, api: str, http: requests.Session, address: str
) -> None:
    add(http, api, address, {"stage": "data", "delay": 1.5})

    async def deliver() -> None:
        client = aiosmtplib.SMTP(
            hostname=server.smtp_host, port=server.smtp_port, local_hostname=CLIENT_NAME
        )
        await client.connect()
        with pytest.raises(aiosmtplib.SMTPTimeoutError):
            await client.sendmail("app@example.com", [address], MAIL, timeout=0.3)
        client.close()

    asyncio.run(deliver())
    time.sleep(1.5)
    assert stored(server, address) == 0


def test_a_delay_does_not_hold_up_other_sessions(
    server: InboxServer, api: str, http: requests.Session, address: str
) -> None:
    other = generate(server)
    add(http, api, address, {"stage": "data", "delay": 1.0})
    slow = threading.Thread(target=send, args=(server, [address]))
    slow.start()
    time.sleep(0.1)
    started = time.monotonic()
    send(server, [other])
    assert time.monotonic() - started < 0.8
    assert stored(server, address) == 0  # still waiting
    slow.join()
    assert stored(server, address) == 1


def test_a_delay_longer_than_the_idle_timeout_is_waited_out(http: requests.Session) -> None:
    with InboxServer(smtp_timeout=0.5) as server:
        address = generate(server)
        add(http, server.api_url, address, {"stage": "data", "delay": 1.0})
        assert send(server, [address]) == {}
        assert stored(server, address) == 1


def test_a_stopping_server_ends_a_pending_delay(http: requests.Session) -> None:
    server = InboxServer()
    server.start()
    try:
        address = generate(server)
        add(http, server.api_url, address, {"stage": "data", "delay": 30})
        raw = RawSMTP(server.smtp_host, server.smtp_port)
        begin(raw, address)
        assert raw.command("DATA")[0] == 354
        raw.send(MAIL + b".\r\n")
        time.sleep(0.2)
        started = time.monotonic()
    finally:
        server.stop()
    assert time.monotonic() - started < 3
    assert not server.running
    with pytest.raises(ConnectionError):
        raw.reply()
    raw.close()
