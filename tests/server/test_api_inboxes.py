"""The HTTP API over real sockets: making, listing, waiting on and deleting inboxes."""

from __future__ import annotations

import smtplib
import threading
import time
from collections.abc import Iterator
from datetime import datetime, timezone

import jsonschema
import pytest
import requests

from pytest_tempinbox.server.inbox_server import InboxServer

from ..helpers import TIMER_SLACK, make_message, send
from .api_support import assert_problem, message_schema

# --- POST /api/generate ---------------------------------------------------------------


def test_generate_answers_201_with_the_new_address(api: str, http: requests.Session) -> None:
    response = http.post(api + "/generate")
    assert response.status_code == 201
    body = response.json()
    assert set(body) == {"email", "created_at", "expires_at", "messages_url", "password"}
    assert body["email"].endswith("@tempinbox.test")
    assert response.headers["location"] == f"/api/messages/{body['email']}"
    assert body["messages_url"] == f"{api}/messages/{body['email']}"
    created = datetime.fromisoformat(body["created_at"].replace("Z", "+00:00"))
    assert created.tzinfo is not None
    assert abs((datetime.now(timezone.utc) - created).total_seconds()) < 60
    assert body["expires_at"] is None


def test_generated_addresses_are_all_different(api: str, http: requests.Session) -> None:
    addresses = {http.post(api + "/generate").json()["email"] for _ in range(50)}
    assert len(addresses) == 50


def test_generate_takes_prefix_and_domain(api: str, http: requests.Session) -> None:
    response = http.post(api + "/generate", json={"prefix": "reset", "domain": "other.test"})
    assert response.status_code == 201
    email = response.json()["email"]
    assert email.startswith("reset-")
    assert email.endswith("@other.test")


def test_generate_takes_a_ttl(api: str, http: requests.Session) -> None:
    body = http.post(api + "/generate", json={"ttl": 90}).json()
    created = datetime.fromisoformat(body["created_at"].replace("Z", "+00:00"))
    expires = datetime.fromisoformat(body["expires_at"].replace("Z", "+00:00"))
    assert 89 <= (expires - created).total_seconds() <= 91


def test_an_expired_inbox_answers_404_and_refuses_mail(api: str, http: requests.Session) -> None:
    address = http.post(api + "/generate", json={"ttl": 0.2}).json()["email"]
    assert http.get(f"{api}/messages/{address}").status_code == 200
    time.sleep(0.25)
    assert_problem(http.get(f"{api}/messages/{address}"), 404, "inbox_not_found")


def test_a_pending_wait_ends_when_its_inbox_expires(api: str, http: requests.Session) -> None:
    address = http.post(api + "/generate", json={"ttl": 0.3}).json()["email"]
    started = time.monotonic()
    response = http.get(f"{api}/messages/{address}", params={"wait": 30})
    assert_problem(response, 404, "inbox_not_found")
    assert time.monotonic() - started < 5


@pytest.mark.parametrize("body", [b"", b"{}", b"  \n"])
def test_generate_accepts_an_empty_body(api: str, http: requests.Session, body: bytes) -> None:
    assert http.post(api + "/generate", data=body).status_code == 201


@pytest.mark.parametrize(
    "body",
    [
        b"not json",
        b"[1, 2]",
        b'"prefix"',
        b'{"prefix": 5}',
        b'{"domain": null}',
        b'{"prefix": "UPPER"}',
        b'{"prefix": "a..b"}',
        b'{"domain": "example.com"}',
        b'{"prefx": "typo"}',
        b'{"ttl": "60"}',
        b'{"ttl": true}',
        b'{"ttl": 0}',
        b'{"ttl": 1e9}',
        b"\xff\xfe",
        b"\x0b",  # white space to Python, not to JSON
        b"[" * 100_00,
    ],
)
def test_generate_refuses_a_bad_body(api: str, http: requests.Session, body: bytes) -> None:
    assert_problem(http.post(api + "/generate", data=body), 400, "invalid_request")


def test_generate_refuses_a_body_over_64_kib(api: str, http: requests.Session) -> None:
    body = b'{"prefix": "' + b"a" * 70_000 + b'"}'
    assert_problem(http.post(api + "/generate", data=body), 413, "payload_too_large")


def test_generate_refuses_a_chunked_body_over_64_kib(api: str, http: requests.Session) -> None:
    def chunks() -> Iterator[bytes]:
        for _ in range(20):
            yield b" " * 8192

    assert_problem(http.post(api + "/generate", data=chunks()), 413, "payload_too_large")


# --- GET /api/messages/{email} ----------------------------------------------------------


def test_a_new_inbox_has_no_messages(api: str, http: requests.Session, address: str) -> None:
    response = http.get(f"{api}/messages/{address}")
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert response.json() == []


def test_messages_are_listed_oldest_first_as_full_objects(
    server: InboxServer, api: str, http: requests.Session, address: str
) -> None:
    for subject in ("first", "second", "third"):
        send(server, make_message(address, subject=subject))
    messages = http.get(f"{api}/messages/{address}").json()
    assert [message["subject"] for message in messages] == ["first", "second", "third"]
    for message in messages:
        jsonschema.validate(message, message_schema())
        assert message["inbox"] == address
        assert message["envelope"] == {"mail_from": "app@example.com", "rcpt_to": [address]}
        assert message["from"] == {"name": None, "email": "app@example.com"}
        assert message["to"] == [{"name": None, "email": address}]
        assert message["text"] == "Hi there.\n"
        assert message["received_at"].endswith("Z")
        assert len(message["received_at"]) == len("2026-01-01T00:00:00.000Z")


def test_message_object_carries_links_codes_and_attachments(
    server: InboxServer, api: str, http: requests.Session, address: str
) -> None:
    message = make_message(
        address, subject="Your code is 482913", body="Confirm: https://app.test/confirm?t=abc\n"
    )
    message.add_alternative(
        '<p><a href="https://app.test/confirm?t=abc&amp;x=1">go</a></p>', "html"
    )
    message.add_attachment(b"PDFDATA", maintype="application", subtype="pdf", filename="r.pdf")
    send(server, message)
    (got,) = http.get(f"{api}/messages/{address}").json()
    jsonschema.validate(got, message_schema())
    assert got["codes"] == ["482913"]
    assert got["links"] == ["https://app.test/confirm?t=abc", "https://app.test/confirm?t=abc&x=1"]
    assert got["html"].startswith("<p><a href")
    assert got["attachments"] == [
        {
            "index": 0,
            "filename": "r.pdf",
            "content_type": "application/pdf",
            "size": 7,
            "content_id": None,
            "inline": False,
        }
    ]


def test_messages_address_matching_is_case_insensitive(
    server: InboxServer, api: str, http: requests.Session, address: str
) -> None:
    send(server, make_message(address))
    assert len(http.get(f"{api}/messages/{address.upper()}").json()) == 1


def test_messages_of_an_unknown_inbox_is_404(api: str, http: requests.Session) -> None:
    response = http.get(f"{api}/messages/nobody@tempinbox.test")
    assert_problem(response, 404, "inbox_not_found")


@pytest.mark.parametrize(
    "segment", ["no-at-sign", "@tempinbox.test", "user@", "a" * 250 + "@tempinbox.test"]
)
def test_messages_of_something_that_is_not_an_address_is_400(
    api: str, http: requests.Session, segment: str
) -> None:
    assert_problem(http.get(f"{api}/messages/{segment}"), 400, "invalid_address")


@pytest.mark.parametrize("path", ["a%2Fb@tempinbox.test", "..", "a%00b@tempinbox.test", "%2e%2e"])
def test_hostile_paths_never_cause_a_server_error(
    api: str, http: requests.Session, path: str
) -> None:
    response = http.get(f"{api}/messages/{path}")
    assert 400 <= response.status_code < 500
    assert response.headers["content-type"] == "application/problem+json"


def test_a_10_kib_address_is_refused(api: str, http: requests.Session) -> None:
    assert_problem(http.get(f"{api}/messages/{'a' * 10_240}@x.test"), 400, "invalid_address")


def test_wait_returns_as_soon_as_a_message_arrives(
    server: InboxServer, api: str, http: requests.Session, address: str
) -> None:
    sender = threading.Timer(0.3, send, args=(server, make_message(address, subject="late")))
    started = time.monotonic()
    sender.start()
    try:
        response = http.get(f"{api}/messages/{address}", params={"wait": 30})
    finally:
        sender.join()
    elapsed = time.monotonic() - started
    assert response.status_code == 200
    assert [message["subject"] for message in response.json()] == ["late"]
    # Woken by the delivery, not by the 30 s timeout.
    assert elapsed < 10


def test_wait_answers_an_empty_list_when_time_is_up(
    api: str, http: requests.Session, address: str
) -> None:
    started = time.monotonic()
    response = http.get(f"{api}/messages/{address}", params={"wait": 0.2})
    assert response.status_code == 200
    assert response.json() == []
    assert time.monotonic() - started >= 0.2 - TIMER_SLACK


@pytest.mark.parametrize("wait", ["", "soon", "-1", "60.5", "nan", "inf", "1e400"])
def test_wait_must_be_a_number_from_0_to_60(
    api: str, http: requests.Session, address: str, wait: str
) -> None:
    response = http.get(f"{api}/messages/{address}", params={"wait": wait})
    assert_problem(response, 400, "invalid_request")


def test_after_returns_only_later_messages(
    server: InboxServer, api: str, http: requests.Session, address: str
) -> None:
    for subject in ("one", "two", "three"):
        send(server, make_message(address, subject=subject))
    first = http.get(f"{api}/messages/{address}").json()[0]
    later = http.get(f"{api}/messages/{address}", params={"after": first["id"]}).json()
    assert [message["subject"] for message in later] == ["two", "three"]


def test_wait_with_after_holds_until_a_newer_message(
    server: InboxServer, api: str, http: requests.Session, address: str
) -> None:
    send(server, make_message(address, subject="old"))
    (old,) = http.get(f"{api}/messages/{address}").json()
    sender = threading.Timer(0.2, send, args=(server, make_message(address, subject="new")))
    sender.start()
    try:
        response = http.get(f"{api}/messages/{address}", params={"after": old["id"], "wait": 30})
    finally:
        sender.join()
    assert [message["subject"] for message in response.json()] == ["new"]


def test_after_an_unknown_id_is_400(api: str, http: requests.Session, address: str) -> None:
    response = http.get(f"{api}/messages/{address}", params={"after": "nope"})
    assert_problem(response, 400, "invalid_request")


def test_delete_ends_a_pending_wait_with_404(
    api: str, http: requests.Session, address: str
) -> None:
    deleter = threading.Timer(0.2, lambda: requests.delete(f"{api}/delete/{address}", timeout=5))
    started = time.monotonic()
    deleter.start()
    try:
        response = http.get(f"{api}/messages/{address}", params={"wait": 30})
    finally:
        deleter.join()
    assert_problem(response, 404, "inbox_not_found")
    assert time.monotonic() - started < 10


# --- DELETE /api/delete/{email} ---------------------------------------------------------


def test_delete_purges_the_inbox(
    server: InboxServer, api: str, http: requests.Session, address: str
) -> None:
    send(server, make_message(address))
    send(server, make_message(address))
    response = http.delete(f"{api}/delete/{address.upper()}")
    assert response.status_code == 200
    assert response.json() == {"email": address, "deleted": True, "purged": 2}
    assert_problem(http.get(f"{api}/messages/{address}"), 404, "inbox_not_found")
    assert_problem(http.delete(f"{api}/delete/{address}"), 404, "inbox_not_found")


def test_delete_of_something_that_is_not_an_address_is_400(
    api: str, http: requests.Session
) -> None:
    assert_problem(http.delete(f"{api}/delete/nobody"), 400, "invalid_address")


def test_a_deleted_address_refuses_mail(
    server: InboxServer, api: str, http: requests.Session, address: str
) -> None:
    http.delete(f"{api}/delete/{address}")
    with pytest.raises(smtplib.SMTPRecipientsRefused) as refused:
        send(server, make_message(address))
    assert refused.value.recipients[address][0] == 550
