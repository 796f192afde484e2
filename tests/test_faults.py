"""Fault injection per inbox: the API, the Python calls, and what real SMTP clients see."""

from __future__ import annotations

import asyncio
import smtplib
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import aiosmtplib
import pytest
import requests

from pytest_tempinbox.client.inbox import Inbox
from pytest_tempinbox.errors import InboxNotFound, InvalidRequest, TooManyFaults
from pytest_tempinbox.models import Fault
from pytest_tempinbox.server.faults import FaultQueue, data_answer
from pytest_tempinbox.server.inbox_server import InboxServer
from pytest_tempinbox.server.store import Store

from .helpers import CLIENT_NAME, RawSMTP, run_swaks

TIMEOUT = 10.0
MAIL = b"From: app@example.com\r\nSubject: Hello\r\n\r\nHi there.\r\n"
PROBLEM_KEYS = {"type", "title", "status", "detail", "code"}


def add(http: requests.Session, api: str, address: str, body: Any) -> requests.Response:
    """POST /api/faults/{address} with ``body`` as JSON."""
    return http.post(f"{api}/faults/{address}", json=body, timeout=TIMEOUT)


def pending(http: requests.Session, api: str, address: str) -> list[dict[str, Any]]:
    """The inbox's pending faults, as JSON."""
    response = http.get(f"{api}/faults/{address}", timeout=TIMEOUT)
    assert response.status_code == 200, response.text
    faults: list[dict[str, Any]] = response.json()
    return faults


def stored(server: InboxServer, address: str) -> int:
    """How many messages the inbox holds."""
    return len(server.store.messages(address))


def generate(server: InboxServer) -> str:
    """Another fresh address."""
    return server.store.generate().address


def assert_problem(response: requests.Response, status: int, code: str) -> None:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    assert set(response.json()) == PROBLEM_KEYS
    assert response.json()["code"] == code


@pytest.fixture
def smtp(server: InboxServer) -> Iterator[smtplib.SMTP]:
    """An smtplib client with a socket timeout."""
    with smtplib.SMTP(
        server.smtp_host, server.smtp_port, local_hostname=CLIENT_NAME, timeout=TIMEOUT
    ) as client:
        yield client


def send(server: InboxServer, to: list[str], timeout: float = TIMEOUT) -> dict[str, Any]:
    """One transaction over a new smtplib connection; what sendmail returns."""
    with smtplib.SMTP(
        server.smtp_host, server.smtp_port, local_hostname=CLIENT_NAME, timeout=timeout
    ) as client:
        refused: dict[str, Any] = client.sendmail("app@example.com", to, MAIL)
        return refused


def begin(raw: RawSMTP, *recipients: str) -> list[tuple[int, str]]:
    """EHLO and MAIL, then RCPT for each recipient; the RCPT replies."""
    assert raw.command(f"EHLO {CLIENT_NAME}")[0] == 250
    assert raw.command("MAIL FROM:<app@example.com>")[0] == 250
    return [raw.command(f"RCPT TO:<{recipient}>") for recipient in recipients]


def finish(raw: RawSMTP) -> tuple[int, str]:
    """DATA with the message; the reply to its end."""
    assert raw.command("DATA")[0] == 354
    raw.send(MAIL + b".\r\n")
    return raw.reply()


# --- the API: adding, listing, clearing ----------------------------------------------


def test_a_fault_is_answered_as_queued_with_an_enhanced_status_code(
    api: str, http: requests.Session, address: str
) -> None:
    body = {"stage": "rcpt", "code": 451, "message": "try later", "times": 2}
    response = add(http, api, address, body)
    assert response.status_code == 201, response.text
    assert response.headers["content-type"] == "application/json"
    assert response.json() == {**body, "message": "4.0.0 try later"}


@pytest.mark.parametrize(
    ("body", "listed"),
    [
        ({"stage": "rcpt", "code": 550}, {"message": "5.0.0 Permanent failure (injected fault)"}),
        (
            {"stage": "data", "code": 421},
            {"message": "4.0.0 Temporary failure, try again later (injected fault)"},
        ),
        ({"stage": "rcpt", "code": 452, "message": "4.2.2 full"}, {}),
        ({"stage": "rcpt", "code": 550, "message": "5.1.1"}, {}),
        ({"stage": "data", "code": 559, "message": "x" * 200}, {"message": "5.0.0 " + "x" * 200}),
        ({"stage": "rcpt", "code": 400, "message": " ~!"}, {"message": "4.0.0  ~!"}),
        ({"stage": "rcpt", "code": 451, "message": "4.5"}, {"message": "4.0.0 4.5"}),
        ({"stage": "data", "delay": 60}, {"delay": 60.0}),
        ({"stage": "rcpt", "delay": 0.001}, {}),
        ({"stage": "data", "disconnect": True, "times": 1000}, {}),
        ({"stage": "data", "disconnect": True, "times": 2.0}, {"times": 2}),
        ({"stage": "rcpt", "code": 451.0, "message": "x"}, {"code": 451, "message": "4.0.0 x"}),
    ],
)
def test_valid_faults_are_accepted(
    api: str, http: requests.Session, address: str, body: dict[str, Any], listed: dict[str, Any]
) -> None:
    response = add(http, api, address, body)
    assert response.status_code == 201, response.text
    assert response.json() == {"times": 1, **body, **listed}
    assert pending(http, api, address) == [response.json()]


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"not json",
        b"[1]",
        b'"stage"',
        b"{}",
        b'{"code": 451}',
        b'{"stage": "mail", "code": 451}',
        b'{"stage": "RCPT", "code": 451}',
        b'{"stage": null, "code": 451}',
        b'{"stage": "rcpt"}',
        b'{"stage": "rcpt", "code": 451, "delay": 1}',
        b'{"stage": "rcpt", "delay": 1, "disconnect": true}',
        b'{"stage": "rcpt", "code": 451, "disconnect": true}',
        b'{"stage": "rcpt", "code": 399}',
        b'{"stage": "rcpt", "code": 250}',
        b'{"stage": "rcpt", "code": 460}',
        b'{"stage": "rcpt", "code": 499}',
        b'{"stage": "rcpt", "code": 560}',
        b'{"stage": "rcpt", "code": 600}',
        b'{"stage": "rcpt", "code": "451"}',
        b'{"stage": "rcpt", "code": true}',
        b'{"stage": "rcpt", "code": 451.5}',
        b'{"stage": "rcpt", "code": null}',
        b'{"stage": "rcpt", "code": 451, "message": ""}',
        b'{"stage": "rcpt", "code": 451, "message": "two\\r\\nlines"}',
        b'{"stage": "rcpt", "code": 451, "message": "new\\nline"}',
        b'{"stage": "rcpt", "code": 451, "message": "tab\\there"}',
        b'{"stage": "rcpt", "code": 451, "message": "caf\\u00e9"}',
        b'{"stage": "rcpt", "code": 451, "message": "nul\\u0000"}',
        b'{"stage": "rcpt", "code": 451, "message": 5}',
        b'{"stage": "rcpt", "code": 451, "message": "' + b"x" * 201 + b'"}',
        b'{"stage": "rcpt", "code": 451, "message": "5.1.1 wrong class"}',
        b'{"stage": "rcpt", "code": 550, "message": "4.2.2 wrong class"}',
        b'{"stage": "rcpt", "delay": 1, "message": "no code"}',
        b'{"stage": "data", "delay": 0}',
        b'{"stage": "data", "delay": -1}',
        b'{"stage": "data", "delay": 60.001}',
        b'{"stage": "data", "delay": "1"}',
        b'{"stage": "data", "delay": true}',
        b'{"stage": "data", "delay": null}',
        b'{"stage": "data", "delay": NaN}',
        b'{"stage": "data", "delay": Infinity}',
        b'{"stage": "data", "disconnect": false}',
        b'{"stage": "data", "disconnect": 1}',
        b'{"stage": "data", "disconnect": "yes"}',
        b'{"stage": "data", "disconnect": true, "times": 0}',
        b'{"stage": "data", "disconnect": true, "times": 1001}',
        b'{"stage": "data", "disconnect": true, "times": 1.5}',
        b'{"stage": "data", "disconnect": true, "times": true}',
        b'{"stage": "data", "disconnect": true, "times": "2"}',
        b'{"stage": "data", "disconnect": true, "when": "now"}',
    ],
)
def test_bad_faults_are_refused_with_400(
    api: str, http: requests.Session, address: str, body: bytes
) -> None:
    response = http.post(f"{api}/faults/{address}", data=body, timeout=TIMEOUT)
    assert_problem(response, 400, "invalid_request")
    assert pending(http, api, address) == []


def test_a_body_over_64_kib_is_refused(api: str, http: requests.Session, address: str) -> None:
    body = b'{"stage": "rcpt", "code": 451, "message": "' + b"x" * 70_000 + b'"}'
    assert_problem(http.post(f"{api}/faults/{address}", data=body), 413, "payload_too_large")


@pytest.mark.parametrize("method", ["GET", "POST", "DELETE"])
def test_faults_of_an_unknown_inbox_are_404(api: str, http: requests.Session, method: str) -> None:
    body = {"stage": "rcpt", "code": 451}
    response = http.request(method, f"{api}/faults/nobody@tempinbox.test", json=body)
    assert_problem(response, 404, "inbox_not_found")
    response = http.request(method, f"{api}/faults/not-an-address", json=body)
    assert_problem(response, 400, "invalid_address")


def test_other_methods_are_405(api: str, http: requests.Session, address: str) -> None:
    response = http.put(f"{api}/faults/{address}")
    assert_problem(response, 405, "method_not_allowed")
    assert set(response.headers["allow"].split(", ")) >= {"GET", "POST", "DELETE"}


def test_faults_are_listed_in_order_and_cleared(
    api: str, http: requests.Session, address: str
) -> None:
    bodies = [
        {"stage": "rcpt", "code": 451, "message": "4.7.1 greylisted", "times": 2},
        {"stage": "data", "delay": 1.5, "times": 1},
        {"stage": "data", "disconnect": True, "times": 3},
    ]
    for body in bodies:
        assert add(http, api, address, body).status_code == 201
    assert pending(http, api, address) == bodies
    # Any spelling of the address names the same inbox.
    cleared = http.delete(f"{api}/faults/{address.upper()}")
    assert cleared.status_code == 200
    assert cleared.json() == {"email": address, "cleared": 3}
    assert pending(http, api, address) == []
    assert http.delete(f"{api}/faults/{address}").json()["cleared"] == 0


def test_a_listed_fault_is_a_body_that_adds_it_again(
    api: str, http: requests.Session, address: str
) -> None:
    add(http, api, address, {"stage": "rcpt", "code": 550, "message": "no such user"})
    (listed,) = pending(http, api, address)
    assert add(http, api, address, listed).json() == listed
    assert pending(http, api, address) == [listed, listed]


def test_an_inbox_holds_at_most_100_pending_faults(
    api: str, http: requests.Session, address: str
) -> None:
    for _ in range(100):
        assert add(http, api, address, {"stage": "rcpt", "code": 451}).status_code == 201
    assert_problem(add(http, api, address, {"stage": "rcpt", "code": 451}), 409, "too_many_faults")
    assert len(pending(http, api, address)) == 100


def test_deleting_the_inbox_drops_its_faults(
    server: InboxServer, api: str, http: requests.Session, address: str
) -> None:
    inbox = server.store.get(address)
    add(http, api, address, {"stage": "rcpt", "code": 451, "times": 5})
    assert http.delete(f"{api}/delete/{address}").status_code == 200
    assert_problem(http.get(f"{api}/faults/{address}"), 404, "inbox_not_found")
    assert inbox.faults.pending() == []


def test_an_expired_inbox_drops_its_faults(
    server: InboxServer, api: str, http: requests.Session
) -> None:
    address = http.post(api + "/generate", json={"ttl": 0.3}).json()["email"]
    inbox = server.store.get(address)
    add(http, api, address, {"stage": "data", "disconnect": True})
    time.sleep(0.35)
    assert_problem(http.get(f"{api}/faults/{address}"), 404, "inbox_not_found")
    assert inbox.faults.pending() == []


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


# --- delays ----------------------------------------------------------------------------


def test_a_delay_at_rcpt_holds_the_answer_then_accepts(
    server: InboxServer, raw_smtp: RawSMTP, api: str, http: requests.Session, address: str
) -> None:
    add(http, api, address, {"stage": "rcpt", "delay": 0.4})
    started = time.monotonic()
    (reply,) = begin(raw_smtp, address)
    assert time.monotonic() - started >= 0.4
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
    assert time.monotonic() - started >= 0.4
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
    assert time.monotonic() - started >= 0.4
    assert pending(http, api, address) == pending(http, api, other) == []
    assert stored(server, address) == stored(server, other) == 0


def test_an_inbox_deleted_during_a_rcpt_delay_is_refused(
    server: InboxServer, raw_smtp: RawSMTP, api: str, http: requests.Session, address: str
) -> None:
    add(http, api, address, {"stage": "rcpt", "delay": 0.5})
    threading.Timer(0.1, server.store.delete, (address,)).start()
    assert begin(raw_smtp, address)[0][0] == 550


# --- the Python calls ------------------------------------------------------------------


def test_fail_next_refuses_the_next_deliveries(server: InboxServer, inbox: Inbox) -> None:
    fault = inbox.fail_next(451, "try later", times=2)
    assert fault == Fault(stage="rcpt", code=451, message="4.0.0 try later", times=2)
    assert fault.kind == "reply"
    for _ in range(2):
        with pytest.raises(smtplib.SMTPRecipientsRefused):
            send(server, [inbox.address])
    send(server, [inbox.address])
    assert len(inbox.messages()) == 1


def test_delay_next_and_disconnect_next_default_to_data(inbox: Inbox) -> None:
    assert inbox.delay_next(2.5) == Fault(stage="data", delay=2.5)
    assert inbox.disconnect_next(times=2) == Fault(stage="data", disconnect=True, times=2)
    assert inbox.delay_next(1, stage="rcpt").stage == "rcpt"
    assert [fault.kind for fault in inbox.faults()] == ["delay", "disconnect", "delay"]
    assert inbox.clear_faults() == 3
    assert inbox.faults() == []


def test_the_calls_have_awaitable_twins(server: InboxServer, inbox: Inbox) -> None:
    async def inject() -> list[Fault]:
        await inbox.fail_next_async(550, stage="data")
        await inbox.delay_next_async(0.1)
        await inbox.disconnect_next_async(stage="rcpt")
        faults = await inbox.faults_async()
        assert await inbox.clear_faults_async() == 3
        return faults

    faults = asyncio.run(inject())
    assert faults == [
        Fault(stage="data", code=550, message="5.0.0 Permanent failure (injected fault)"),
        Fault(stage="data", delay=0.1),
        Fault(stage="rcpt", disconnect=True),
    ]
    assert inbox.faults() == []


def test_bad_faults_raise_invalid_request(inbox: Inbox) -> None:
    with pytest.raises(InvalidRequest, match="code"):
        inbox.fail_next(250)
    with pytest.raises(InvalidRequest, match="message"):
        inbox.fail_next(451, "two\r\nlines")
    with pytest.raises(InvalidRequest, match="delay"):
        inbox.delay_next(61)
    with pytest.raises(InvalidRequest, match="times"):
        inbox.disconnect_next(times=0)
    assert inbox.faults() == []


def test_too_many_faults_raise(inbox: Inbox) -> None:
    for _ in range(100):
        inbox.disconnect_next()
    with pytest.raises(TooManyFaults):
        inbox.disconnect_next()


def test_faults_of_a_deleted_inbox_raise_inbox_not_found(inbox: Inbox) -> None:
    inbox.delete()
    with pytest.raises(InboxNotFound):
        inbox.fail_next()
    with pytest.raises(InboxNotFound):
        inbox.faults()


# --- the parts ---------------------------------------------------------------------------


def test_a_fault_round_trips_through_json() -> None:
    for fault in (
        Fault(stage="rcpt", code=451, message="4.0.0 x", times=3),
        Fault(stage="data", delay=0.5),
        Fault(stage="data", disconnect=True),
    ):
        assert Fault.from_json(fault.to_json()) == fault
    assert Fault(stage="data", delay=2).to_json() == {"stage": "data", "delay": 2, "times": 1}


def test_the_queue_gives_the_first_fault_only_at_its_stage() -> None:
    queue = FaultQueue()
    queue.add(Fault(stage="data", code=451, message="4.0.0 x", times=2))
    queue.add(Fault(stage="rcpt", disconnect=True))
    assert queue.take("rcpt") is None  # the data fault comes first
    assert queue.take("data") == Fault(stage="data", code=451, message="4.0.0 x")
    assert queue.pending()[0].times == 1
    assert queue.take("data") is not None
    assert queue.take("data") is None
    assert queue.take("rcpt") == Fault(stage="rcpt", disconnect=True)
    assert queue.pending() == []


def test_one_answer_to_data_for_several_faults() -> None:
    late = Fault(stage="data", delay=0.5)
    later = Fault(stage="data", delay=2.0)
    full = Fault(stage="data", code=452, message="4.2.2 full")
    refused = Fault(stage="data", code=554, message="5.7.1 no")
    gone = Fault(stage="data", disconnect=True)
    assert data_answer([late]) == late
    assert data_answer([late, later]) == later
    assert data_answer([full, refused]) == full
    assert data_answer([full, gone]) == gone
    assert data_answer([late, full, later]) == Fault(
        stage="data", code=452, message="4.2.2 full", delay=2.0
    )


def test_the_store_takes_faults_only_of_live_inboxes() -> None:
    store = Store()
    address = store.generate().address
    store.get(address).faults.add(Fault(stage="rcpt", code=451, message="4.0.0 x", times=5))
    assert store.take_fault(address.upper(), "rcpt") is not None
    assert store.take_fault("nobody@tempinbox.test", "rcpt") is None
    store.delete(address)
    assert store.take_fault(address, "rcpt") is None


def test_dropped_sessions_do_not_count_against_the_connection_limit(
    http: requests.Session,
) -> None:
    with InboxServer(max_connections=2) as server:
        address = generate(server)
        add(http, server.api_url, address, {"stage": "data", "disconnect": True, "times": 5})
        for _ in range(5):
            with pytest.raises(smtplib.SMTPServerDisconnected):
                send(server, [address])
        with socket.create_connection((server.smtp_host, server.smtp_port), timeout=TIMEOUT):
            assert send(server, [address]) == {}  # the second of two connections allowed
        assert stored(server, address) == 1
