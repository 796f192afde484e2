"""The HTTP API over real sockets: one message, its raw bytes and its attachments."""

from __future__ import annotations

import smtplib
import socket
import time
from urllib.parse import urlsplit

import requests

from pytest_tempinbox.client.http import HTTPTransport
from pytest_tempinbox.server.inbox_server import InboxServer

from ..helpers import CLIENT_NAME, make_message, send
from .api_support import assert_problem

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


def test_a_message_list_answers_with_the_common_headers_first(
    server: InboxServer, api: str, address: str
) -> None:
    url = urlsplit(f"{api}/messages/{address}")
    with socket.create_connection((url.hostname, url.port), timeout=10) as sock:
        sock.sendall(f"GET {url.path} HTTP/1.1\r\nHost: {url.netloc}\r\n\r\n".encode("ascii"))
        answer = b""
        while not answer.endswith(b"\r\n\r\n[]"):
            chunk = sock.recv(65536)
            assert chunk, answer
            answer += chunk
    assert answer == (
        b"HTTP/1.1 200 OK\r\n"
        b"x-content-type-options: nosniff\r\n"
        b"cache-control: no-store\r\n"
        b"content-length: 2\r\n"
        b"content-type: application/json\r\n"
        b"\r\n[]"
    )


# --- GET /api/messages/{email}: the long-poll's lane past the router (lanes.py) ---


def test_head_of_a_message_list_has_the_head_of_its_get_and_no_body(
    server: InboxServer, api: str, http: requests.Session, address: str
) -> None:
    send(server, make_message(address, subject="head"))
    got, head = http.get(f"{api}/messages/{address}"), http.head(f"{api}/messages/{address}")
    assert head.status_code == 200
    assert head.content == b""
    assert head.headers["content-type"] == got.headers["content-type"]
    assert head.headers["content-length"] == got.headers["content-length"]


def test_a_message_list_of_an_unknown_inbox_is_404_waiting_or_not(
    api: str, http: requests.Session
) -> None:
    for query in ("", "?wait=1"):
        response = http.get(f"{api}/messages/nobody@tempinbox.test{query}")
        assert_problem(response, 404, "inbox_not_found")


def test_a_message_list_path_with_a_trailing_slash_is_no_route(
    api: str, http: requests.Session, address: str
) -> None:
    body = assert_problem(http.get(f"{api}/messages/{address}/"), 404, "not_found")
    assert body["detail"] == f"no such route: /api/messages/{address}/"


def test_an_inbox_deleted_during_a_long_poll_ends_it_with_404(
    server: InboxServer, api: str, http: requests.Session
) -> None:
    address = server.store.generate().address
    where = urlsplit(api)
    with socket.create_connection((where.hostname, where.port), timeout=10) as sock:
        request = f"GET /api/messages/{address}?wait=10 HTTP/1.1\r\nHost: {where.netloc}\r\n\r\n"
        sock.sendall(request.encode())
        deadline = time.monotonic() + 10
        while server.counters.long_polls < 1 and time.monotonic() < deadline:
            time.sleep(0.005)
        assert http.delete(f"{api}/delete/{address}").status_code == 200
        with sock.makefile("rb") as reader:
            assert reader.readline().startswith(b"HTTP/1.1 404")
