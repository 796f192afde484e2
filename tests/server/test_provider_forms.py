"""Forms read with the standard library, and Postmark's and Mailgun's keys and error shapes."""

from __future__ import annotations

import base64
import json

import pytest

from pytest_tempinbox.server.api.request import Request
from pytest_tempinbox.server.providers import mailgun, postmark
from pytest_tempinbox.server.providers.forms import Field, FormError, read_form
from pytest_tempinbox.server.store.memory.store import Store
from pytest_tempinbox.values import provider_url


def request(headers: dict[str, str]) -> Request:
    """A request with only ``headers``."""
    return Request(Store(), {}, {}, headers=headers)


def test_a_urlencoded_form_keeps_repeated_fields_in_order() -> None:
    fields = read_form(
        b"to=a%40x.test&to=b%40x.test&subject=Caf%C3%A9", "application/x-www-form-urlencoded"
    )
    assert fields == [Field("to", "a@x.test"), Field("to", "b@x.test"), Field("subject", "Café")]


def test_a_multipart_files_bytes_arrive_untouched() -> None:
    content = b"\x00\r\n--not-the-boundary\r\n\xff mid-line --B\r\n"
    body = (
        b'--B\r\nContent-Disposition: form-data; name="text"\r\n\r\nhello\r\n'
        b'--B\r\nContent-Disposition: form-data; name="attachment"; filename="a.bin"\r\n'
        b"Content-Type: application/octet-stream\r\n\r\n" + content + b"\r\n--B--\r\n"
    )
    text, attachment = read_form(body, "multipart/form-data; boundary=B")
    assert text == Field("text", "hello")
    assert (attachment.filename, attachment.content) == ("a.bin", content)
    assert attachment.content_type == "application/octet-stream"


def test_a_file_without_a_content_type_has_none() -> None:
    body = (
        b'--B\r\nContent-Disposition: form-data; name="f"; filename="a.txt"\r\n\r\nx\r\n--B--\r\n'
    )
    assert read_form(body, "multipart/form-data; boundary=B")[0].content_type is None


def test_a_body_of_another_type_is_a_form_error() -> None:
    with pytest.raises(FormError, match="must be a form"):
        read_form(b"{}", "application/json")


def test_postmarks_credential_is_its_server_token_header() -> None:
    assert postmark.credential(request({"x-postmark-server-token": "T"})) == "T"
    assert postmark.credential(request({})) is None


def test_mailguns_credential_is_the_basic_password_of_user_api() -> None:
    basic = "Basic " + base64.b64encode(b"api:key-1").decode()
    assert mailgun.credential(request({"authorization": basic})) == "key-1"
    other = "Basic " + base64.b64encode(b"root:key-1").decode()
    assert mailgun.credential(request({"authorization": other})) is None
    assert mailgun.credential(request({"authorization": "Basic %%%"})) is None
    assert mailgun.credential(request({})) is None


@pytest.mark.parametrize(
    ("status", "code"), [(401, 10), (422, 300), (415, 409), (429, 429), (503, 503)]
)
def test_postmarks_error_reply_carries_its_error_code(status: int, code: int) -> None:
    reply = postmark.error_reply(status, "nope")
    assert reply.status == status
    assert json.loads(reply.body) == {"ErrorCode": code, "Message": "nope"}


def test_mailguns_error_reply_is_a_message() -> None:
    reply = mailgun.error_reply(401, "Invalid private key")
    assert (reply.status, json.loads(reply.body)) == (401, {"message": "Invalid private key"})


def test_postmarks_url_is_the_origin_and_mailguns_keeps_its_prefix() -> None:
    assert provider_url("http://127.0.0.1:8025/api", "postmark") == "http://127.0.0.1:8025"
    mailgun_url = provider_url("http://127.0.0.1:8025/api", "mailgun")
    assert mailgun_url == "http://127.0.0.1:8025/providers/mailgun"
