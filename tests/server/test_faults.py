"""Fault injection per inbox: the API, the Python calls, and the parts behind them."""

from __future__ import annotations

import asyncio
import smtplib
import socket
import time
from typing import Any

import pytest
import requests

from pytest_tempinbox.client.inbox import Inbox
from pytest_tempinbox.errors import InboxNotFound, InvalidRequest, TooManyFaults
from pytest_tempinbox.models import Fault
from pytest_tempinbox.server.inbox_server import InboxServer
from pytest_tempinbox.server.store.faults import FaultQueue, data_answer
from pytest_tempinbox.server.store.memory.store import Store

from ..helpers import record
from .faults_support import TIMEOUT, add, assert_problem, generate, pending, send, stored
from .store_support import take_fault

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
    inbox = record(server, address)
    add(http, api, address, {"stage": "rcpt", "code": 451, "times": 5})
    assert http.delete(f"{api}/delete/{address}").status_code == 200
    assert_problem(http.get(f"{api}/faults/{address}"), 404, "inbox_not_found")
    assert inbox.faults.pending() == []


def test_an_expired_inbox_drops_its_faults(
    server: InboxServer, api: str, http: requests.Session
) -> None:
    address = http.post(api + "/generate", json={"ttl": 0.3}).json()["email"]
    inbox = record(server, address)
    add(http, api, address, {"stage": "data", "disconnect": True})
    time.sleep(0.35)
    assert_problem(http.get(f"{api}/faults/{address}"), 404, "inbox_not_found")
    assert inbox.faults.pending() == []


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
    assert take_fault(store, address.upper(), "rcpt") is not None
    assert take_fault(store, "nobody@tempinbox.test", "rcpt") is None
    store.delete(address)
    assert take_fault(store, address, "rcpt") is None


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
