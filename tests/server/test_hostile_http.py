"""The HTTP API against hostile requests: odd paths, bodies, headers and races get clear answers.

Requests the ``requests`` library would tidy up (dot segments, bare ``%``) go
out through :mod:`http.client`, which sends the request target as written.
"""

from __future__ import annotations

import http.client
import logging
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlsplit

import pytest
import requests

from pytest_tempinbox.server.inbox_server import InboxServer

from ..helpers import make_message, send

# Seconds: every request gives up after this instead of hanging the run.
TIMEOUT = 10.0
PROBLEM_KEYS = {"type", "title", "status", "detail", "code"}
KELVIN_SIGN = "\u212a"  # lowercases to an ASCII "k"


@dataclass(frozen=True)
class Answer:
    """The parts of an HTTP answer that the tests look at."""

    status: int
    headers: http.client.HTTPMessage
    body: bytes


def raw_request(
    server: InboxServer,
    method: str,
    target: str,
    headers: dict[str, str] | None = None,
    body: bytes | None = None,
) -> Answer:
    """Send one request with ``target`` exactly as written and read the whole answer."""
    host = urlsplit(server.api_url).hostname
    assert host is not None
    connection = http.client.HTTPConnection(host, server.api_port, timeout=TIMEOUT)
    try:
        connection.request(method, target, body=body, headers=headers or {})
        response = connection.getresponse()
        return Answer(response.status, response.headers, response.read())
    finally:
        connection.close()


def fresh_session() -> requests.Session:
    """A session of its own (one per thread), ignoring proxy settings from the environment."""
    session = requests.Session()
    session.trust_env = False
    return session


def generate(http: requests.Session, api: str, **options: str) -> str:
    """Generate a fresh address."""
    response = http.post(api + "/generate", json=options or None, timeout=TIMEOUT)
    assert response.status_code == 201, response.text
    email: str = response.json()["email"]
    return email


def listed(http: requests.Session, api: str, address: str) -> list[dict[str, Any]]:
    """The inbox's messages, fetched at once."""
    response = http.get(f"{api}/messages/{address}", timeout=TIMEOUT)
    assert response.status_code == 200, response.text
    found: list[dict[str, Any]] = response.json()
    return found


def assert_client_error_problem(status: int, content_type: str | None, body: bytes) -> None:
    """A 4xx answer that is a problem document."""
    assert 400 <= status < 500, (status, body[:300])
    assert content_type == "application/problem+json", (status, content_type, body[:300])
    assert b'"code"' in body


@dataclass(frozen=True)
class Bystanders:
    """Two inboxes with one message each, which hostile requests must never touch."""

    first: str
    second: str
    ids: tuple[str, str]


@pytest.fixture(scope="module")
def bystanders(server: InboxServer, http: requests.Session) -> Bystanders:
    """Two inboxes of one message each, shared by the tests of this module."""
    api = server.api_url
    first, second = generate(http, api), generate(http, api)
    send(server, make_message(first, subject="first"))
    send(server, make_message(second, subject="second"))
    (one,) = listed(http, api, first)
    (two,) = listed(http, api, second)
    return Bystanders(first, second, (one["id"], two["id"]))


def assert_untouched(http: requests.Session, api: str, bystanders: Bystanders) -> None:
    """Both bystander inboxes still hold exactly their one message."""
    for address, message_id in zip(
        (bystanders.first, bystanders.second), bystanders.ids, strict=True
    ):
        assert [found["id"] for found in listed(http, api, address)] == [message_id]


# --- hostile paths --------------------------------------------------------------------------


HOSTILE_TARGETS = [
    ("GET", "/api/messages/%2F"),
    ("GET", "/api/messages/{first}%2F..%2F{second}"),
    ("GET", "/api/messages/{first}/..%2F..%2F{second}"),
    ("GET", "/api/messages/.."),
    ("GET", "/api/messages/../generate"),
    ("GET", "/api/messages/../messages/{first}"),
    ("GET", "/api/messages/%00"),
    ("GET", "/api/messages/{first}%00"),
    ("GET", "/api/messages/{first}%0D%0AX-Injected:%201"),
    ("GET", "/api/messages/" + "a" * 10240 + "@tempinbox.test"),
    ("GET", "/api/messages/%"),
    ("GET", "/api/messages/%zz"),
    ("GET", "/api/messages/{first}%"),
    ("GET", "/api/messages/" + quote("jöhn@tempinbox.test")),
    ("GET", "/api/messages/" + quote("\ufeff") + "{first}"),
    ("DELETE", "/api/delete/..%2F{first}"),
    ("DELETE", "/api/delete/{first}%2F..%2F{second}"),
    ("DELETE", "/api/delete/{first}%00"),
    ("DELETE", "/api/delete/{first}%20"),
    ("DELETE", "/api/delete/%20{first}"),
    ("DELETE", "/api/delete/%25"),
    ("DELETE", "/api/delete/" + quote("jöhn@tempinbox.test")),
    ("DELETE", "/api/delete/" + "a" * 10240 + "@tempinbox.test"),
]


@pytest.mark.parametrize(("method", "target"), HOSTILE_TARGETS, ids=lambda value: value[:60])
def test_a_hostile_path_gets_a_4xx_problem_and_touches_no_inbox(
    server: InboxServer, http: requests.Session, bystanders: Bystanders, method: str, target: str
) -> None:
    target = target.format(first=bystanders.first, second=bystanders.second)
    answer = raw_request(server, method, target)
    assert_client_error_problem(answer.status, answer.headers["content-type"], answer.body)
    assert answer.headers["x-content-type-options"] == "nosniff"
    assert_untouched(http, server.api_url, bystanders)


def test_a_unicode_lookalike_of_an_address_reaches_no_inbox(
    server: InboxServer, http: requests.Session
) -> None:
    api = server.api_url
    address = generate(http, api, prefix="kk")
    send(server, make_message(address))
    # "\u212a".lower() == "k": a Unicode case fold must not alias another inbox.
    lookalike = quote(address.replace("k", KELVIN_SIGN), safe="@")
    read = http.get(f"{api}/messages/{lookalike}", timeout=TIMEOUT)
    assert_client_error_problem(read.status_code, read.headers["content-type"], read.content)
    deleted = http.delete(f"{api}/delete/{lookalike}", timeout=TIMEOUT)
    assert_client_error_problem(
        deleted.status_code, deleted.headers["content-type"], deleted.content
    )
    assert len(listed(http, api, address)) == 1


# --- hostile bodies on POST /api/generate ------------------------------------------------


HOSTILE_BODIES = {
    "arrays-nested-100000-deep": b"[" * 100_000 + b"]" * 100_000,
    "arrays-nested-60000-deep-under-64-kib": b"[" * 60_000,
    "objects-nested-6000-deep": b'{"prefix":' * 6000,
    "string-of-1-mib": b'{"prefix": "' + b"a" * 1024 * 1024 + b'"}',
    "null-prefix": b'{"prefix": null}',
    "number-body": b"42",
    "huge-number-body": b"1e999999",
    "nan-prefix": b'{"prefix": NaN}',
    "invalid-utf8-value": b'{"prefix": "\xff\xfe"}',
    "invalid-utf8-body": b"\xc3\x28",
    "nul-byte": b"\x00",
    "lone-surrogate-value": b'{"prefix": "\\ud800"}',
    "lone-surrogate-domain": b'{"domain": "\\udfff"}',
    "lone-surrogate-key": b'{"\\ud800": "x"}',
    "list-domain": b'{"domain": ["tempinbox.test"]}',
}


@pytest.mark.parametrize("body", HOSTILE_BODIES.values(), ids=HOSTILE_BODIES.keys())
def test_generate_answers_a_hostile_body_with_400_or_413(
    server: InboxServer, body: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    # Should the server fail here, its log may quote lone surrogates from the body,
    # which pytest-xdist cannot send between processes; the status tells enough.
    for logger in ("pytest_tempinbox", "uvicorn"):
        caplog.set_level(logging.CRITICAL, logger=logger)
    # A connection of its own: a refused body may leave it unusable for the next request.
    with fresh_session() as session:
        response = session.post(server.api_url + "/generate", data=body, timeout=TIMEOUT)
    assert response.status_code in (400, 413), response.text[:300]
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["code"] in ("invalid_request", "payload_too_large")


def test_a_10_mib_body_is_413(server: InboxServer) -> None:
    with fresh_session() as session:
        response = session.post(
            server.api_url + "/generate", data=b" " * (10 * 1024 * 1024), timeout=TIMEOUT
        )
    assert response.status_code == 413
    assert response.json()["code"] == "payload_too_large"


def test_a_10_mib_chunked_body_is_413(server: InboxServer) -> None:
    def chunks() -> Iterator[bytes]:
        chunk = b" " * (1024 * 1024)
        for _ in range(10):
            yield chunk

    with fresh_session() as session:
        response = session.post(server.api_url + "/generate", data=chunks(), timeout=TIMEOUT)
    assert response.status_code == 413
    assert response.json()["code"] == "payload_too_large"


# --- wait junk ----------------------------------------------------------------------------


WAIT_JUNK = [
    "wait=1e309",
    "wait=-0",
    "wait=0x10",
    "wait=%00",
    "wait=1&wait=2",
    "wait=",
    "wait=nan",
    "wait=inf",
    "wait=-inf",
    "wait=1e-400",
    "wait=%E2%80%8B1",
    "wait=" + "9" * 5000,
    "wait=%",
]


@pytest.mark.parametrize("query", WAIT_JUNK)
def test_wait_junk_gets_a_clear_answer_at_once(
    server: InboxServer, http: requests.Session, bystanders: Bystanders, query: str
) -> None:
    started = time.monotonic()
    answer = raw_request(server, "GET", f"/api/messages/{bystanders.first}?{query}")
    elapsed = time.monotonic() - started
    assert answer.status in (200, 400), answer.body[:300]
    if answer.status == 400:
        assert_client_error_problem(answer.status, answer.headers["content-type"], answer.body)
    # The inbox already holds a message, so no valid wait has anything to wait for.
    assert elapsed < 2.0
    assert_untouched(http, server.api_url, bystanders)


# --- a DELETE racing a long-poll --------------------------------------------------------


def test_a_delete_racing_a_long_poll_ends_it_promptly(
    server: InboxServer, http: requests.Session, bystanders: Bystanders
) -> None:
    api = server.api_url

    def long_poll(address: str) -> tuple[int, float]:
        started = time.monotonic()
        with fresh_session() as session:
            response = session.get(
                f"{api}/messages/{address}", params={"wait": 10}, timeout=TIMEOUT + 5
            )
        return response.status_code, time.monotonic() - started

    with ThreadPoolExecutor(max_workers=1) as pool:
        for round_number in range(20):
            address = generate(http, api)
            poll = pool.submit(long_poll, address)
            # Vary the delay so the DELETE lands before, while and after the wait starts.
            time.sleep((round_number % 5) * 0.005)
            assert http.delete(f"{api}/delete/{address}", timeout=TIMEOUT).status_code == 200
            status, elapsed = poll.result(timeout=TIMEOUT + 5)
            assert status in (200, 404), (round_number, status)
            assert elapsed < 3.0, (round_number, elapsed)
    assert_untouched(http, api, bystanders)


# --- header sizes -------------------------------------------------------------------------


def refused_or_closed(server: InboxServer, headers: dict[str, str]) -> int | None:
    """The status of a GET /api/info with ``headers``, or None when the server hung up."""
    try:
        return raw_request(server, "GET", "/api/info", headers=headers).status
    except (ConnectionError, http.client.HTTPException):
        return None


@pytest.mark.parametrize(
    "headers",
    [{"X-Big": "a" * 100 * 1024}, {f"X-Header-{n}": "v" for n in range(10_000)}],
    ids=["one-100-kib-value", "10000-headers"],
)
def test_oversized_headers_are_refused_and_the_server_keeps_serving(
    server: InboxServer, http: requests.Session, headers: dict[str, str]
) -> None:
    status = refused_or_closed(server, headers)
    assert status is None or 400 <= status < 500, status
    assert http.get(server.api_url + "/info", timeout=TIMEOUT).status_code == 200


# --- DNS rebinding: the Host header ------------------------------------------------------


def allowed_loopback_hosts(port: int) -> list[str]:
    """Host header values a loopback server answers: its names, with and without the port."""
    return [
        f"localhost:{port}",
        f"127.0.0.1:{port}",
        f"[::1]:{port}",
        "localhost",
        "127.0.0.1",
        "[::1]",
        f"LocalHost:{port}",
    ]


def test_loopback_host_names_are_served(server: InboxServer, http: requests.Session) -> None:
    for host in allowed_loopback_hosts(server.api_port):
        response = http.get(server.api_url + "/info", headers={"Host": host}, timeout=TIMEOUT)
        assert response.status_code == 200, (host, response.text[:300])


@pytest.mark.parametrize(
    "host",
    [
        "evil.example",
        "evil.example:{port}",
        "localhost.evil.example",
        "127.0.0.1.evil.example:{port}",
        "tempinbox.internal",
    ],
)
def test_a_foreign_host_name_is_refused_with_421(
    server: InboxServer, http: requests.Session, host: str
) -> None:
    host = host.format(port=server.api_port)
    response = http.get(server.api_url + "/info", headers={"Host": host}, timeout=TIMEOUT)
    assert response.status_code == 421, response.text[:300]
    assert response.headers["content-type"] == "application/problem+json"
    assert response.headers["x-content-type-options"] == "nosniff"
    body = response.json()
    assert set(body) == PROBLEM_KEYS
    assert body["code"] == "host_not_allowed"


def test_a_foreign_host_name_cannot_generate_or_delete(
    server: InboxServer, http: requests.Session, bystanders: Bystanders
) -> None:
    api = server.api_url
    evil = {"Host": "evil.example"}
    assert http.post(api + "/generate", headers=evil, timeout=TIMEOUT).status_code == 421
    deleted = http.delete(f"{api}/delete/{bystanders.first}", headers=evil, timeout=TIMEOUT)
    assert deleted.status_code == 421
    assert_untouched(http, api, bystanders)


@pytest.fixture(scope="module")
def internal_server() -> Iterator[InboxServer]:
    """A loopback server that also answers for the host name tempinbox.internal."""
    with InboxServer(hostname="mx.tempinbox.test", allowed_hosts=["tempinbox.internal"]) as srv:
        yield srv


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        ("tempinbox.internal", 200),
        ("tempinbox.internal:{port}", 200),
        ("localhost:{port}", 200),
        ("evil.example", 421),
    ],
)
def test_allowed_hosts_extends_the_loopback_names(
    internal_server: InboxServer, http: requests.Session, host: str, expected: int
) -> None:
    host = host.format(port=internal_server.api_port)
    response = http.get(internal_server.api_url + "/info", headers={"Host": host}, timeout=TIMEOUT)
    assert response.status_code == expected, (host, response.text[:300])


# --- nosniff and attachments ----------------------------------------------------------


@dataclass(frozen=True)
class HtmlMail:
    """An inbox whose one message carries HTML attachments."""

    address: str
    message_id: str


@pytest.fixture(scope="module")
def html_mail(server: InboxServer, http: requests.Session) -> HtmlMail:
    """A message with an HTML attachment, and one marked to be shown inline."""
    api = server.api_url
    address = generate(http, api)
    message = make_message(address, subject="html attachments")
    script = b"<html><script>alert(document.cookie)</script></html>"
    message.add_attachment(script, maintype="text", subtype="html", filename="page.html")
    message.add_attachment(
        script, maintype="text", subtype="html", filename="inline.html", disposition="inline"
    )
    send(server, message)
    (found,) = listed(http, api, address)
    assert len(found["attachments"]) == 2
    return HtmlMail(address, found["id"])


@pytest.mark.parametrize("index", [0, 1])
def test_an_html_attachment_is_never_served_inline(
    server: InboxServer, http: requests.Session, html_mail: HtmlMail, index: int
) -> None:
    url = f"{server.api_url}/messages/{html_mail.address}/{html_mail.message_id}"
    response = http.get(f"{url}/attachments/{index}", timeout=TIMEOUT)
    assert response.status_code == 200
    assert response.headers["content-disposition"].startswith("attachment;")
    assert response.headers["x-content-type-options"] == "nosniff"


NOSNIFF_REQUESTS = {
    "generate-201": ("POST", "/generate", {}),
    "messages-200": ("GET", "/messages/{address}", {}),
    "message-200": ("GET", "/messages/{address}/{id}", {}),
    "raw-200": ("GET", "/messages/{address}/{id}/raw", {}),
    "attachment-200": ("GET", "/messages/{address}/{id}/attachments/0", {}),
    "info-200": ("GET", "/info", {}),
    "openapi-200": ("GET", "/openapi.json", {}),
    "invalid-address-400": ("GET", "/messages/nobody", {}),
    "invalid-wait-400": ("GET", "/messages/{address}?wait=x", {}),
    "inbox-not-found-404": ("GET", "/messages/nobody@tempinbox.test", {}),
    "message-not-found-404": ("GET", "/messages/{address}/nope", {}),
    "attachment-not-found-404": ("GET", "/messages/{address}/{id}/attachments/9", {}),
    "route-404": ("GET", "/nope", {}),
    "method-405": ("GET", "/generate", {}),
    "too-large-413": ("POST", "/generate", {"data": b" " * 70_000}),
    "host-421": ("GET", "/info", {"headers": {"Host": "evil.example"}}),
}


@pytest.mark.parametrize(
    ("method", "path", "options"), NOSNIFF_REQUESTS.values(), ids=NOSNIFF_REQUESTS.keys()
)
def test_every_answer_carries_nosniff(
    server: InboxServer,
    html_mail: HtmlMail,
    method: str,
    path: str,
    options: dict[str, Any],
) -> None:
    path = path.format(address=html_mail.address, id=html_mail.message_id)
    with fresh_session() as session:
        response = session.request(method, server.api_url + path, timeout=TIMEOUT, **options)
    assert response.status_code < 500
    assert response.headers.get("x-content-type-options") == "nosniff", response.status_code
