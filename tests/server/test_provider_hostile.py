"""Hostile bodies to the provider endpoints: the provider's error or the server's limit, no 500."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
from collections.abc import Iterator

import pytest
import requests

from pytest_tempinbox import InboxServer, TempInboxClient
from pytest_tempinbox.client.inbox import Inbox
from pytest_tempinbox.server.api.endpoints import send_body_limit

from .providers_support import answer, post

SMALL = 32 * 1024


@pytest.fixture(scope="module")
def small_server() -> Iterator[InboxServer]:
    """A server whose messages may hold at most :data:`SMALL` bytes."""
    with InboxServer(message_size_limit=SMALL) as server:
        yield server


def sendgrid_url(server: InboxServer) -> str:
    return server.provider_url("sendgrid") + "/v3/mail/send"


def resend_url(server: InboxServer) -> str:
    return server.provider_url("resend") + "/emails"


def sendgrid_send(to: str, **fields: object) -> dict[str, object]:
    """A minimal valid SendGrid request body to ``to``."""
    return {
        "personalizations": [{"to": [{"email": to}]}],
        "from": {"email": "app@example.com"},
        "subject": "Hi",
        "content": [{"type": "text/plain", "value": "Hello"}],
        **fields,
    }


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"personalizations": [{"to": [{"email": "a@tempinbox.test"}]}]}, "from"),
        ({"from": {"email": "app@example.com"}, "subject": "x"}, "personalizations"),
        ({"from": {"email": "app@example.com"}, "personalizations": []}, "personalizations"),
    ],
    ids=["no from", "no personalizations", "empty personalizations"],
)
def test_sendgrid_refuses_a_send_without_its_required_fields(
    server: InboxServer, body: dict[str, object], field: str
) -> None:
    status, data = answer(post(sendgrid_url(server), json.dumps(body)))
    assert status == 400
    assert data["errors"][0]["field"] == field


def test_sendgrid_refuses_invalid_json_in_its_own_shape(server: InboxServer) -> None:
    status, data = answer(post(sendgrid_url(server), b'{"from": '))
    assert status == 400
    assert data == {
        "errors": [{"message": "the request body is not valid JSON", "field": None, "help": None}]
    }


def test_sendgrid_refuses_deep_nesting_as_invalid_json(server: InboxServer) -> None:
    status, data = answer(post(sendgrid_url(server), b"[" * 100_000 + b"]" * 100_000))
    assert status == 400
    assert "not valid JSON" in data["errors"][0]["message"]


def test_sendgrid_refuses_an_attachment_that_is_not_base64(
    server: InboxServer, address: str
) -> None:
    attachment = {"content": "%%% not base64 %%%", "filename": "a.pdf", "type": "application/pdf"}
    body = sendgrid_send(address, attachments=[attachment])
    status, data = answer(post(sendgrid_url(server), json.dumps(body)))
    assert status == 400
    assert data["errors"][0]["field"] == "attachments.0.content"


def test_an_attachment_type_with_parameters_is_its_bare_type(
    server: InboxServer, address: str
) -> None:
    # As django-anymail sends a text attachment; a type that is no type is still refused.
    content = base64.b64encode(b"Total: 7 EUR").decode()
    attachment = {"content": content, "filename": "a.txt", "type": 'text/plain; charset="utf-8"'}
    body = sendgrid_send(address, attachments=[attachment])
    assert post(sendgrid_url(server), json.dumps(body)).status_code == 202
    (message,) = server.store.messages(address)
    assert [part.content_type for part in message.message().attachments] == ["text/plain"]

    body = sendgrid_send(address, attachments=[{**attachment, "type": "text; plain"}])
    assert answer(post(sendgrid_url(server), json.dumps(body)))[0] == 400


def test_sendgrid_refuses_a_body_that_is_not_json_by_its_type(
    server: InboxServer, address: str
) -> None:
    body = json.dumps(sendgrid_send(address))
    status, data = answer(post(sendgrid_url(server), body, "application/x-www-form-urlencoded"))
    assert status == 415
    assert "application/json" in data["errors"][0]["message"]


def test_sendgrid_refuses_ten_thousand_recipients(server: InboxServer) -> None:
    to = [{"email": f"user{n}@tempinbox.test"} for n in range(10_000)]
    body = sendgrid_send("x@tempinbox.test", personalizations=[{"to": to}])
    status, data = answer(post(sendgrid_url(server), json.dumps(body)))
    assert status == 400
    assert "10000 recipients" in data["errors"][0]["message"]


def test_more_recipients_than_the_server_takes_is_refused(
    server: InboxServer, address: str
) -> None:
    to = [{"email": f"user{n}@tempinbox.test"} for n in range(101)]
    body = sendgrid_send(address, personalizations=[{"to": to}])
    status, data = answer(post(sendgrid_url(server), json.dumps(body)))
    assert status == 400
    assert "at most 100 per message" in data["errors"][0]["message"]


def test_a_body_within_the_send_limit_but_over_the_apis_is_read(
    small_server: InboxServer,
) -> None:
    # 64 KiB of white space before the JSON: past /api's limit, inside a send's.
    response = post(sendgrid_url(small_server), b" " * (64 * 1024) + b"{}")
    assert response.status_code == 400
    assert response.json()["errors"][0]["field"] == "from"


def test_a_body_over_the_send_limit_gets_the_servers_413(small_server: InboxServer) -> None:
    response = post(sendgrid_url(small_server), b" " * (send_body_limit(SMALL) + 1))
    assert response.status_code == 413
    assert response.json()["code"] == "payload_too_large"


def test_a_message_over_the_size_limit_is_sendgrids_413(small_server: InboxServer) -> None:
    with TempInboxClient(small_server.api_url) as client:
        address = client.generate().address
    text = "x" * (SMALL + 1)
    body = sendgrid_send(address, content=[{"type": "text/plain", "value": text}])
    status, data = answer(post(sendgrid_url(small_server), json.dumps(body)))
    assert status == 413
    assert "over the server's limit" in data["errors"][0]["message"]


def test_a_header_with_a_line_break_is_refused(server: InboxServer, address: str) -> None:
    body = sendgrid_send(address, headers={"X-Evil": "a\r\nBcc: evil@example.com"})
    status, data = answer(post(sendgrid_url(server), json.dumps(body)))
    assert status == 400
    assert data["errors"][0]["field"] == "headers"


def test_resend_refuses_invalid_json_in_its_own_shape(server: InboxServer) -> None:
    status, data = answer(post(resend_url(server), b"{nope"))
    assert status == 400
    assert data["name"] == "validation_error"
    assert data["statusCode"] == 400


def test_resend_refuses_an_attachment_that_is_not_base64(server: InboxServer, address: str) -> None:
    attachment = {"filename": "a.pdf", "content": "***"}
    body = {"from": "a@example.com", "to": address, "subject": "x", "text": "y"}
    status, data = answer(
        post(resend_url(server), json.dumps({**body, "attachments": [attachment]}))
    )
    assert (status, data["name"]) == (422, "invalid_attachment")


def test_resend_refuses_a_batch_of_more_than_100(server: InboxServer, address: str) -> None:
    send = {"from": "a@example.com", "to": address, "subject": "x", "text": "y"}
    url = server.provider_url("resend") + "/emails/batch"
    status, data = answer(post(url, json.dumps([send] * 101)))
    assert (status, data["name"]) == (422, "validation_error")


def test_a_get_of_a_send_endpoint_is_a_405(server: InboxServer, http: requests.Session) -> None:
    assert http.get(sendgrid_url(server), timeout=10).status_code == 405


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
def test_curl_sends_through_sendgrids_endpoint(server: InboxServer, inbox: Inbox) -> None:
    body = json.dumps(sendgrid_send(inbox.address, subject="From curl"))
    command = ["curl", "-sS", "-i", "--noproxy", "*", "-H", "Authorization: Bearer SG.key"]
    command += ["-H", "Content-Type: application/json", "-d", body, sendgrid_url(server)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=30, check=True)
    assert result.stdout.startswith("HTTP/1.1 202")
    assert "x-message-id:" in result.stdout.lower()
    assert inbox.wait_for_message(timeout=10).subject == "From curl"
