"""Hostile requests to SES's endpoints: SES's own error, v2's JSON or v1's XML, never a 500."""

from __future__ import annotations

import base64
import json
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from urllib.parse import urlencode

import pytest
import requests

from pytest_tempinbox import InboxServer, TempInboxClient
from pytest_tempinbox.server.api.request import Request
from pytest_tempinbox.server.providers.ses import credential, error_reply, request_error_reply
from pytest_tempinbox.server.providers.ses_query import NAMESPACE, query_error_reply

from .providers_support import post

FORM = "application/x-www-form-urlencoded"
V1 = {"ses": NAMESPACE}


def v2_send(server: InboxServer, body: bytes | str) -> requests.Response:
    return post(server.provider_url("ses") + "/v2/email/outbound-emails", body)


def v1(server: InboxServer, **form: str) -> requests.Response:
    return post(server.provider_url("ses"), urlencode(form), FORM)


def v2_error(response: requests.Response) -> tuple[int, str, str]:
    """The status, the ``x-amzn-ErrorType`` and the message of a v2 error."""
    assert response.headers["x-amzn-RequestId"]
    return response.status_code, response.headers["x-amzn-ErrorType"], response.json()["message"]


def v1_error(response: requests.Response) -> tuple[int, str | None, str | None]:
    """The status, the code and the type of a v1 ``ErrorResponse``, its request id checked."""
    root = ET.fromstring(response.content)
    assert root.tag == f"{{{NAMESPACE}}}ErrorResponse"
    assert root.findtext("ses:RequestId", namespaces=V1)
    error = root.find("ses:Error", V1)
    assert error is not None
    return (
        response.status_code,
        error.findtext("ses:Code", namespaces=V1),
        error.findtext("ses:Type", namespaces=V1),
    )


def simple_send(*to: str) -> dict[str, object]:
    return {
        "FromEmailAddress": "app@example.com",
        "Destination": {"ToAddresses": list(to)},
        "Content": {"Simple": {"Subject": {"Data": "Hi"}, "Body": {"Text": {"Data": "Hello"}}}},
    }


@pytest.mark.parametrize("body", ["{not json", "[" * 100_000, "[]"], ids=["bad", "deep", "array"])
def test_v2_refuses_a_body_that_is_not_a_json_object(server: InboxServer, body: str) -> None:
    status, code, _ = v2_error(v2_send(server, body))
    assert (status, code) == (400, "BadRequestException")


def test_v2_refuses_raw_data_that_is_not_base64(server: InboxServer, address: str) -> None:
    body = {"Destination": {"ToAddresses": [address]}, "Content": {"Raw": {"Data": "!!!"}}}
    status, code, message = v2_error(v2_send(server, json.dumps(body)))
    assert (status, code, message) == (400, "BadRequestException", "Content.Raw.Data is not base64")


def test_v2_refuses_content_of_two_kinds(server: InboxServer, address: str) -> None:
    body = simple_send(address)
    body["Content"] = {"Simple": {}, "Template": {"TemplateName": "t"}}
    status, code, message = v2_error(v2_send(server, json.dumps(body)))
    assert (status, code) == (400, "BadRequestException")
    assert "exactly one of Simple, Raw and Template" in message


def test_v2_refuses_a_send_without_recipients(server: InboxServer) -> None:
    status, code, message = v2_error(v2_send(server, json.dumps(simple_send())))
    assert (status, code, message) == (400, "BadRequestException", "the send has no recipient")


def test_v2_refuses_a_raw_message_without_recipients(server: InboxServer) -> None:
    raw = base64.b64encode(b"From: app@example.com\r\nSubject: x\r\n\r\nbody\r\n").decode()
    status, code, _ = v2_error(v2_send(server, json.dumps({"Content": {"Raw": {"Data": raw}}})))
    assert (status, code) == (400, "MessageRejected")


def test_v2_refuses_ten_thousand_recipients_quickly(server: InboxServer) -> None:
    many = [f"user{n}@tempinbox.test" for n in range(10_000)]
    started = time.monotonic()
    status, code, message = v2_error(v2_send(server, json.dumps(simple_send(*many))))
    assert (status, code) == (400, "MessageRejected")
    assert "Recipient count exceeds 50" in message
    assert time.monotonic() - started < 5


@pytest.fixture(scope="module")
def small_server() -> Iterator[InboxServer]:
    """A server whose messages may hold at most 32 KiB."""
    with InboxServer(message_size_limit=32 * 1024) as server:
        yield server


def test_a_raw_message_over_the_size_limit_is_message_rejected(small_server: InboxServer) -> None:
    with TempInboxClient(small_server.api_url) as client:
        to = client.generate().address
    raw = f"From: app@example.com\r\nTo: {to}\r\n\r\n".encode() + b"x" * 40_000
    body = {"Content": {"Raw": {"Data": base64.b64encode(raw).decode()}}}
    status, code, message = v2_error(v2_send(small_server, json.dumps(body)))
    assert (status, code) == (400, "MessageRejected")
    assert "over the server's limit of 32768 bytes" in message


def test_v1_refuses_an_unknown_action(server: InboxServer) -> None:
    assert v1_error(v1(server, Action="DeleteEverything")) == (400, "InvalidAction", "Sender")


def test_v1_refuses_a_request_without_an_action(server: InboxServer) -> None:
    assert v1_error(v1(server, Source="app@example.com")) == (400, "MissingAction", "Sender")


def test_v1_refuses_a_body_that_is_not_a_form(server: InboxServer) -> None:
    response = post(server.provider_url("ses"), b"\xff\xfe\x00", FORM)
    assert v1_error(response) == (400, "MalformedQueryString", "Sender")


def test_v1_refuses_raw_data_that_is_not_base64(server: InboxServer, address: str) -> None:
    response = v1(server, Action="SendRawEmail", **{"RawMessage.Data": "not base64!"})
    assert v1_error(response) == (400, "InvalidParameterValue", "Sender")


def test_v1_refuses_ten_thousand_destinations(server: InboxServer) -> None:
    many = {f"Destinations.member.{n}": f"u{n}@tempinbox.test" for n in range(1, 10_001)}
    raw = base64.b64encode(b"From: app@example.com\r\n\r\nbody\r\n").decode()
    response = v1(server, Action="SendRawEmail", **{"RawMessage.Data": raw}, **many)
    assert v1_error(response) == (400, "MessageRejected", "Sender")


def test_v1_refuses_a_send_without_recipients(server: InboxServer) -> None:
    form = {"Source": "app@example.com", "Message.Subject.Data": "x", "Message.Body.Text.Data": "y"}
    response = v1(server, Action="SendEmail", **form)
    assert v1_error(response) == (400, "InvalidParameterValue", "Sender")


def test_v1_is_served_at_the_endpoint_url_with_a_trailing_slash_too(server: InboxServer) -> None:
    response = post(server.provider_url("ses") + "/", "Action=GetSendQuota", FORM)
    assert response.status_code == 200
    assert b"<MaxSendRate>" in response.content


@pytest.mark.parametrize(
    ("status", "code"),
    [
        (400, "BadRequestException"),
        (401, "UnrecognizedClientException"),
        (403, "AccessDeniedException"),
        (404, "NotFoundException"),
        (413, "MessageRejected"),
        (429, "TooManyRequestsException"),
        (500, "InternalFailure"),
        (503, "ServiceUnavailable"),
    ],
)
def test_error_reply_is_ses_v2s_error_for_each_status(status: int, code: str) -> None:
    reply = error_reply(status, "no")
    assert (reply.status, reply.headers["x-amzn-ErrorType"]) == (status, code)
    assert json.loads(reply.body) == {"message": "no"}


@pytest.mark.parametrize(
    ("status", "code", "kind"),
    [
        (403, "AccessDenied", "Sender"),
        (429, "Throttling", "Sender"),
        (503, "ServiceUnavailable", "Receiver"),
    ],
)
def test_query_error_reply_is_ses_v1s_error_response(status: int, code: str, kind: str) -> None:
    reply = query_error_reply(status, "a <b> & c")
    error = ET.fromstring(reply.body).find("ses:Error", V1)
    assert error is not None
    assert (reply.status, error.findtext("ses:Code", namespaces=V1)) == (status, code)
    assert (
        error.findtext("ses:Type", namespaces=V1),
        error.findtext("ses:Message", namespaces=V1),
    ) == (
        kind,
        "a <b> & c",
    )


def test_credential_is_the_access_key_id_of_the_signature(server: InboxServer) -> None:
    signed = "AWS4-HMAC-SHA256 Credential=AKIAXYZ/20261127/us-east-1/ses/aws4_request, Signature=ab"
    assert credential(Request(server.store, {}, {}, headers={"authorization": signed})) == "AKIAXYZ"
    assert credential(Request(server.store, {}, {})) is None


def test_request_error_reply_answers_each_api_in_its_own_shape(server: InboxServer) -> None:
    form = Request(server.store, {}, {}, headers={"content-type": f"{FORM}; charset=utf-8"})
    v1_reply = request_error_reply(form, 429, "slow down")
    v2_reply = request_error_reply(Request(server.store, {}, {}), 429, "slow down")
    assert (v1_reply.content_type, v2_reply.headers["x-amzn-ErrorType"]) == (
        "text/xml",
        "TooManyRequestsException",
    )
