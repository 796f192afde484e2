"""The HTTP API over real sockets: every endpoint, status code and problem answer."""

from __future__ import annotations

import smtplib
import socket
import threading
import time
from collections.abc import Iterator
from datetime import datetime, timezone
from typing import Any
from urllib.parse import urlsplit

import jsonschema
import pytest
import requests

from pytest_tempinbox import __version__
from pytest_tempinbox.client.http import HTTPTransport
from pytest_tempinbox.config import ServerConfig
from pytest_tempinbox.server.inbox_server import InboxServer
from pytest_tempinbox.server.openapi import openapi_document

from .helpers import CLIENT_NAME, make_message, send

PROBLEM_KEYS = {"type", "title", "status", "detail", "code"}


def assert_problem(response: requests.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    body: dict[str, Any] = response.json()
    assert set(body) == PROBLEM_KEYS
    assert body["status"] == status
    assert body["code"] == code
    assert body["detail"]
    return body


def message_schema() -> dict[str, Any]:
    document = openapi_document(__version__)
    return {"$ref": "#/components/schemas/Message", "components": document["components"]}


# --- POST /api/generate ---------------------------------------------------------------


def test_generate_answers_201_with_the_new_address(api: str, http: requests.Session) -> None:
    response = http.post(api + "/generate")
    assert response.status_code == 201
    body = response.json()
    assert set(body) == {"email", "created_at", "expires_at", "messages_url"}
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
    assert time.monotonic() - started >= 0.2


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


# --- GET /api/messages/{email}/{id}, /raw, /attachments/{index} -------------------------


def test_one_message_by_id(
    server: InboxServer, api: str, http: requests.Session, address: str
) -> None:
    send(server, make_message(address, subject="only"))
    (listed,) = http.get(f"{api}/messages/{address}").json()
    response = http.get(f"{api}/messages/{address}/{listed['id']}")
    assert response.status_code == 200
    assert response.json() == listed


def test_a_missing_message_is_404(api: str, http: requests.Session, address: str) -> None:
    response = http.get(f"{api}/messages/{address}/01a2000000000000ffff")
    assert_problem(response, 404, "message_not_found")
    assert_problem(http.get(f"{api}/messages/{address}/x/raw"), 404, "message_not_found")


def test_a_message_of_an_unknown_inbox_is_404(api: str, http: requests.Session) -> None:
    response = http.get(f"{api}/messages/nobody@tempinbox.test/01a2000000000000ffff")
    assert_problem(response, 404, "inbox_not_found")


def test_raw_is_the_message_exactly_as_received(
    server: InboxServer, api: str, http: requests.Session, address: str
) -> None:
    message = make_message(address, body="line one\n.dotted line\n")
    send(server, message)
    (listed,) = http.get(f"{api}/messages/{address}").json()
    response = http.get(f"{api}/messages/{address}/{listed['id']}/raw")
    assert response.status_code == 200
    assert response.headers["content-type"] == "message/rfc822"
    expected = message.as_bytes().replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
    assert response.content == expected
    assert listed["size"] == len(expected)


def test_attachment_bytes_type_and_filename(
    server: InboxServer, api: str, http: requests.Session, address: str
) -> None:
    message = make_message(address)
    payload = bytes(range(256)) * 4
    message.add_attachment(payload, maintype="image", subtype="png", filename="naïve pic.png")
    message.add_attachment(b"a,b\n", maintype="text", subtype="csv", filename="../../etc/passwd")
    send(server, message)
    (listed,) = http.get(f"{api}/messages/{address}").json()
    base = f"{api}/messages/{address}/{listed['id']}/attachments"

    first = http.get(f"{base}/0")
    assert first.status_code == 200
    assert first.content == payload
    assert first.headers["content-type"] == "image/png"
    assert first.headers["x-content-type-options"] == "nosniff"
    disposition = first.headers["content-disposition"]
    assert disposition.startswith("attachment;")
    assert "filename*=UTF-8''na%C3%AFve%20pic.png" in disposition

    second = http.get(f"{base}/1")
    assert second.content == b"a,b\n"
    assert 'filename="passwd"' in second.headers["content-disposition"]


def _attachment_url(server: InboxServer, http: requests.Session, address: str) -> str:
    (listed,) = http.get(f"{server.api_url}/messages/{address}").json()
    return f"{server.api_url}/messages/{address}/{listed['id']}/attachments"


CSV_1252 = "café;€ 5\n".encode("windows-1252")


def test_a_text_attachment_is_served_with_its_own_charset_only(
    server: InboxServer, http: requests.Session, address: str
) -> None:
    message = make_message(address)
    params = {"charset": "windows-1252"}
    message.add_attachment(CSV_1252, maintype="text", subtype="csv", params=params)
    send(server, message)
    response = http.get(f"{_attachment_url(server, http, address)}/0")
    assert response.headers["content-type"] == "text/csv; charset=windows-1252"
    assert response.encoding == "windows-1252"
    assert response.text == "café;€ 5\n"
    # The JSON description gives the bare type.
    (listed,) = http.get(f"{server.api_url}/messages/{address}").json()
    assert listed["attachments"][0]["content_type"] == "text/csv"


def test_a_text_attachment_without_a_charset_is_served_without_one(
    server: InboxServer, http: requests.Session, address: str
) -> None:
    message = make_message(address)
    message.add_attachment(b"a,b\n", maintype="text", subtype="csv", filename="a.csv")
    send(server, message)
    response = http.get(f"{_attachment_url(server, http, address)}/0")
    # No charset=utf-8 added, and the name is left to Content-Disposition.
    assert response.headers["content-type"] == "text/csv"
    assert 'filename="a.csv"' in response.headers["content-disposition"]


def test_an_attachment_keeps_its_other_parameters_in_the_raw_header(
    server: InboxServer, http: requests.Session, address: str
) -> None:
    message = make_message(address)
    message.add_attachment(
        b"flowed \nlines\n",
        maintype="text",
        subtype="plain",
        filename="notes.txt",
        params={"format": "flowed", "charset": "ISO-8859-15", "delsp": "yes"},
    )
    send(server, message)
    url = urlsplit(f"{_attachment_url(server, http, address)}/0")
    with socket.create_connection((url.hostname, url.port), timeout=10) as sock:
        request = f"GET {url.path} HTTP/1.1\r\nHost: {url.netloc}\r\nConnection: close\r\n\r\n"
        sock.sendall(request.encode("ascii"))
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    head = answer.split(b"\r\n\r\n", 1)[0].split(b"\r\n")
    assert head[0] == b"HTTP/1.1 200 OK"
    types = [line for line in head if line.lower().startswith(b"content-type:")]
    assert types == [b"content-type: text/plain; format=flowed; charset=ISO-8859-15; delsp=yes"]


def test_the_in_process_transport_serves_an_attachment_as_http_does(
    server: InboxServer, http: requests.Session, address: str
) -> None:
    message = make_message(address)
    params = {"charset": "windows-1252"}
    message.add_attachment(CSV_1252, maintype="text", subtype="csv", params=params)
    send(server, message)
    path = urlsplit(_attachment_url(server, http, address)).path.removeprefix("/api") + "/0"
    local = server.local_transport().request("GET", path, timeout=10)
    over_http = HTTPTransport(server.api_url).request("GET", path, timeout=10)
    assert local == over_http
    assert (local.status, local.content_type, local.content) == (200, "text/csv", CSV_1252)


def test_an_attachment_of_an_unservable_type_is_octet_stream(
    server: InboxServer, http: requests.Session, address: str
) -> None:
    raw = (
        f"From: a@example.test\r\nTo: {address}\r\nSubject: odd\r\n"
        'Content-Type: multipart/mixed; boundary="b"\r\n\r\n'
        "--b\r\nContent-Type: text/plain\r\n\r\nhello\r\n"
        "--b\r\nContent-Type: application/x\u20acy; charset=utf-8\r\n"
        "Content-Disposition: attachment\r\n\r\ndata\r\n--b--\r\n"
    ).encode()
    with smtplib.SMTP(server.smtp_host, server.smtp_port, local_hostname=CLIENT_NAME) as smtp:
        smtp.sendmail("a@example.test", [address], raw)
    response = http.get(f"{_attachment_url(server, http, address)}/0")
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/octet-stream"
    assert response.content == b"data"


def test_an_attachment_index_out_of_range_is_404(
    server: InboxServer, api: str, http: requests.Session, address: str
) -> None:
    send(server, make_message(address))
    (listed,) = http.get(f"{api}/messages/{address}").json()
    base = f"{api}/messages/{address}/{listed['id']}/attachments"
    assert_problem(http.get(f"{base}/0"), 404, "attachment_not_found")
    assert_problem(http.get(f"{base}/-1"), 404, "not_found")
    assert_problem(http.get(f"{base}/first"), 404, "not_found")


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


# --- /api/info, /api/openapi.json, routing --------------------------------------------


def test_info_tells_where_the_smtp_listener_is(
    server: InboxServer, api: str, http: requests.Session
) -> None:
    info = http.get(api + "/info").json()
    assert info["version"] == __version__
    assert info["smtp"] == {
        "host": "127.0.0.1",
        "port": server.smtp_port,
        "tls": "off",
        "auth": "any",
    }
    assert info["domains"] == ["tempinbox.test", "other.test"]
    assert info["limits"] == {
        "message_size": 10 * 1024 * 1024,
        "recipients": 100,
        "command_line": 512,
        "data_line": 1000,
        "connections": 100,
        "idle_timeout": 300.0,
        "messages_per_inbox": 1000,
        "stored_bytes": 256 * 1024 * 1024,
        "inbox_ttl": None,
        "request_body": 64 * 1024,
        "wait": 60.0,
        "faults_per_inbox": 100,
        "fault_delay": 60.0,
        "streams": 100,
        "streams_per_inbox": 10,
        "heartbeat": 15.0,
    }
    assert set(info["stats"]) == {"inboxes", "messages", "stored_bytes", "evictions", "streams"}


def test_info_counts_what_is_stored(
    server: InboxServer, api: str, http: requests.Session, address: str
) -> None:
    before = http.get(api + "/info").json()["stats"]
    send(server, make_message(address))
    after = http.get(api + "/info").json()["stats"]
    assert after["messages"] == before["messages"] + 1
    assert after["stored_bytes"] > before["stored_bytes"]


def test_openapi_document_lists_every_route(
    server: InboxServer, api: str, http: requests.Session
) -> None:
    from starlette.routing import Route

    from pytest_tempinbox.server.app import ApiSettings, create_app

    document = http.get(api + "/openapi.json").json()
    assert document["openapi"].startswith("3.")
    app = create_app(server.store, ApiSettings(ServerConfig(), 25))
    # The inbox viewer's routes, outside /api, are a web page, not API.
    served = {
        (route.path.replace("{index:int}", "{index}"), method.lower())
        for route in app.routes
        if isinstance(route, Route) and route.path.startswith("/api/")
        for method in route.methods or ()
        if method != "HEAD"
    }
    documented = {(path, method) for path, item in document["paths"].items() for method in item}
    assert served == documented


def test_requests_for_another_host_name_are_refused(api: str, http: requests.Session) -> None:
    # A page on evil.example, rebound to 127.0.0.1, must not read the inboxes.
    response = http.get(api + "/info", headers={"Host": "evil.example"})
    assert_problem(response, 421, "host_not_allowed")
    port = api.split(":")[2].split("/")[0]
    for host in (f"localhost:{port}", f"127.0.0.1:{port}", "localhost"):
        assert http.get(api + "/info", headers={"Host": host}).status_code == 200


def test_allowed_hosts_extend_the_names_a_server_answers_to() -> None:
    with InboxServer(allowed_hosts=["TempInbox.Internal"]) as server:
        response = requests.get(
            server.api_url + "/info", headers={"Host": "tempinbox.internal:80"}, timeout=5
        )
    assert response.status_code == 200


def test_unknown_routes_answer_404_problem(api: str, http: requests.Session) -> None:
    assert_problem(http.get(api + "/nope"), 404, "not_found")
    assert_problem(http.get(api.removesuffix("/api") + "/nope"), 404, "not_found")


def test_wrong_methods_answer_405_problem(api: str, http: requests.Session, address: str) -> None:
    response = http.get(api + "/generate")
    assert_problem(response, 405, "method_not_allowed")
    assert response.headers["allow"] == "POST"
    assert_problem(http.post(f"{api}/messages/{address}"), 405, "method_not_allowed")
    assert_problem(http.get(f"{api}/delete/{address}"), 405, "method_not_allowed")


def test_a_message_with_raw_utf8_headers_is_served_as_json(
    server: InboxServer, api: str, http: requests.Session, address: str
) -> None:
    raw = (
        f"From: Jöhn <jöhn@exämple.com>\r\nTo: {address}\r\nSubject: Grüße\r\n\r\nHallo\r\n"
    ).encode()
    with smtplib.SMTP(server.smtp_host, server.smtp_port, local_hostname=CLIENT_NAME) as client:
        client.sendmail("sender@example.com", [address], raw, mail_options=["SMTPUTF8"])
    (got,) = http.get(f"{api}/messages/{address}").json()
    assert got["from"] == {"name": "Jöhn", "email": "jöhn@exämple.com"}
    assert got["subject"] == "Grüße"
