"""Hostile bodies to Postmark's and Mailgun's endpoints: the provider's error or a limit, no 500."""

from __future__ import annotations

import json

import pytest
import requests

from pytest_tempinbox import InboxServer
from pytest_tempinbox.server.providers import ROOTED
from pytest_tempinbox.server.providers.forms import MAX_FIELDS
from pytest_tempinbox.values import _ROOTED

from .providers_support import answer, post

FORM = "application/x-www-form-urlencoded"


def postmark_url(server: InboxServer, path: str = "/email") -> str:
    return server.provider_url("postmark") + path


def mailgun_url(server: InboxServer, mime: bool = False) -> str:
    return (
        server.provider_url("mailgun") + "/v3/mg.example.com/messages" + (".mime" if mime else "")
    )


def multipart(boundary: str, *parts: bytes) -> bytes:
    """A multipart body of ``parts`` (each its headers, a blank line, its content)."""
    return b"".join(b"--" + boundary.encode() + b"\r\n" + part + b"\r\n" for part in parts) + (
        b"--" + boundary.encode() + b"--\r\n"
    )


def test_the_values_and_the_route_table_agree_on_the_rooted_providers() -> None:
    assert ROOTED == _ROOTED


def test_postmark_is_served_under_its_prefix_too(server: InboxServer, address: str) -> None:
    body = {"From": "a@example.com", "To": address, "Subject": "x", "TextBody": "y"}
    url = server.api_url.removesuffix("/api") + "/providers/postmark/email"
    assert answer(post(url, json.dumps(body)))[1]["ErrorCode"] == 0


def test_postmark_refuses_invalid_json_with_its_code_402(server: InboxServer) -> None:
    status, data = answer(post(postmark_url(server), b'{"From": '))
    assert (status, data["ErrorCode"]) == (422, 402)


def test_postmark_refuses_deep_nesting_as_invalid_json(server: InboxServer) -> None:
    status, data = answer(post(postmark_url(server), b"[" * 100_000 + b"]" * 100_000))
    assert (status, data["ErrorCode"]) == (422, 402)


def test_postmark_refuses_a_body_that_is_not_json_by_its_type(server: InboxServer) -> None:
    status, data = answer(post(postmark_url(server), b"{}", FORM))
    assert (status, data["ErrorCode"]) == (415, 409)


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({"To": "a@tempinbox.test", "TextBody": "x"}, "Invalid 'From'"),
        ({"From": "a@example.com", "TextBody": "x"}, "Zero recipients"),
        ({"From": "a@example.com", "To": "a@tempinbox.test"}, "TextBody or HtmlBody"),
        ({"From": "a@example.com", "To": "not an address", "TextBody": "x"}, "Invalid 'To'"),
        ([1, 2], "JSON object"),
    ],
    ids=["no From", "no recipient", "no body", "bad To", "not an object"],
)
def test_postmark_refuses_an_invalid_email_request_with_300(
    server: InboxServer, body: object, words: str
) -> None:
    status, data = answer(post(postmark_url(server), json.dumps(body)))
    assert (status, data["ErrorCode"]) == (422, 300)
    assert words in data["Message"]


def test_postmark_refuses_an_attachment_that_is_not_base64(
    server: InboxServer, address: str
) -> None:
    attachment = {"Name": "a.pdf", "Content": "%%% no", "ContentType": "application/pdf"}
    body = {"From": "a@example.com", "To": address, "TextBody": "x", "Attachments": [attachment]}
    status, data = answer(post(postmark_url(server), json.dumps(body)))
    assert (status, data["ErrorCode"]) == (422, 300)
    assert "not base64" in data["Message"]


def test_postmark_refuses_a_header_with_a_line_break(server: InboxServer, address: str) -> None:
    headers = [{"Name": "X-Evil", "Value": "a\r\nBcc: evil@example.com"}]
    body = {"From": "a@example.com", "To": address, "TextBody": "x", "Headers": headers}
    status, data = answer(post(postmark_url(server), json.dumps(body)))
    assert (status, data["ErrorCode"]) == (422, 300)


def test_postmark_refuses_a_batch_of_more_than_500_with_410(server: InboxServer) -> None:
    send = {"From": "a@example.com", "To": "a@tempinbox.test", "TextBody": "x"}
    status, data = answer(post(postmark_url(server, "/email/batch"), json.dumps([send] * 501)))
    assert (status, data["ErrorCode"]) == (422, 410)


def test_postmark_refuses_ten_thousand_recipients(server: InboxServer) -> None:
    to = ", ".join(f"user{n}@tempinbox.test" for n in range(10_000))
    body = {"From": "a@example.com", "To": to, "TextBody": "x"}
    status, data = answer(post(postmark_url(server), json.dumps(body)))
    assert (status, data["ErrorCode"]) == (422, 300)
    assert "at most 50" in data["Message"]


def test_a_template_send_without_a_template_is_refused(server: InboxServer, address: str) -> None:
    body = {"From": "a@example.com", "To": address, "TemplateModel": {}}
    status, data = answer(post(postmark_url(server, "/email/withTemplate"), json.dumps(body)))
    assert (status, data["ErrorCode"]) == (422, 1101)


def test_mailgun_refuses_a_body_that_is_not_a_form(server: InboxServer) -> None:
    status, data = answer(post(mailgun_url(server), b"{}"))
    assert status == 400
    assert "must be a form" in data["message"]


def test_mailgun_refuses_a_form_of_too_many_fields(server: InboxServer) -> None:
    body = "&".join(f"to=user{n}@tempinbox.test" for n in range(MAX_FIELDS + 1))
    status, data = answer(post(mailgun_url(server), body, FORM))
    assert status == 400
    assert f"more than {MAX_FIELDS} fields" in data["message"]


def test_mailgun_refuses_ten_thousand_recipients_in_one_field(server: InboxServer) -> None:
    to = ",".join(f"user{n}@tempinbox.test" for n in range(10_000))
    body = f"from=a@example.com&subject=x&text=y&to={to}"
    status, data = answer(post(mailgun_url(server), body, FORM))
    assert status == 400
    assert "Too many recipients" in data["message"]


@pytest.mark.parametrize(
    "body",
    [
        b'--b\r\nContent-Disposition: form-data; name="to"\r\n\r\nx',  # never closed
        b"--b\r\nno headers and no blank line\r\n--b--\r\n",
        b"--b\r\nContent-Disposition: attachment\r\n\r\nx\r\n--b--\r\n",
        b"--b\r\nContent-Disposition: form-data\r\n\r\nx\r\n--b--\r\n",  # no name
    ],
    ids=["unclosed", "no blank line", "not form-data", "no name"],
)
def test_mailgun_refuses_a_malformed_multipart_form(server: InboxServer, body: bytes) -> None:
    status, data = answer(post(mailgun_url(server), body, "multipart/form-data; boundary=b"))
    assert status == 400
    assert "message" in data


def test_mailgun_refuses_a_multipart_form_without_a_boundary(server: InboxServer) -> None:
    status, data = answer(post(mailgun_url(server), b"--b--\r\n", "multipart/form-data"))
    assert status == 400
    assert "boundary" in data["message"]


def test_a_nested_multipart_part_is_a_files_bytes_not_a_tree(
    server: InboxServer, address: str
) -> None:
    nested = b"--x\r\n" * 10_000
    body = multipart(
        "b",
        b'Content-Disposition: form-data; name="from"\r\n\r\na@example.com',
        b'Content-Disposition: form-data; name="to"\r\n\r\n' + address.encode(),
        b'Content-Disposition: form-data; name="subject"\r\n\r\nnested',
        b'Content-Disposition: form-data; name="text"\r\n\r\nx',
        b'Content-Disposition: form-data; name="attachment"; filename="n.eml"\r\n'
        b"Content-Type: multipart/mixed; boundary=x\r\n\r\n" + nested,
    )
    status, data = answer(post(mailgun_url(server), body, "multipart/form-data; boundary=b"))
    assert (status, data["message"]) == (200, "Queued. Thank you.")


def test_mailgun_refuses_invalid_recipient_variables(server: InboxServer, address: str) -> None:
    body = f"from=a@example.com&to={address}&subject=x&text=y&recipient-variables=%7Bnope"
    status, data = answer(post(mailgun_url(server), body, FORM))
    assert status == 400
    assert "recipient-variables" in data["message"]


def test_mailgun_refuses_an_attachment_that_is_not_a_file(
    server: InboxServer, address: str
) -> None:
    body = f"from=a@example.com&to={address}&subject=x&text=y&attachment=plain"
    status, data = answer(post(mailgun_url(server), body, FORM))
    assert status == 400
    assert "must be a file" in data["message"]


def test_a_mime_send_without_its_message_file_is_refused(server: InboxServer, address: str) -> None:
    status, data = answer(post(mailgun_url(server, mime=True), f"to={address}", FORM))
    assert status == 400
    assert "'message' parameter is missing" in data["message"]


def test_mailgun_refuses_a_header_name_with_a_line_break(server: InboxServer, address: str) -> None:
    body = f"from=a@example.com&to={address}&subject=x&text=y&h:X-A%0D%0ABcc:%20e@x.test=1"
    status, data = answer(post(mailgun_url(server), body, FORM))
    assert status == 400
    assert "invalid header" in data["message"]


@pytest.mark.parametrize("path", ["/email", "/email/batch", "/email/withTemplate/"])
def test_a_get_of_postmarks_root_paths_is_a_405(
    server: InboxServer, http: requests.Session, path: str
) -> None:
    assert http.get(postmark_url(server, path), timeout=10).status_code == 405


def test_mailgun_refuses_a_multipart_form_of_a_million_empty_parts(server: InboxServer) -> None:
    body = b"\r\n--b" * 1_000_000 + b"--\r\n"
    status, data = answer(post(mailgun_url(server), body, "multipart/form-data; boundary=b"))
    assert status == 400
    assert f"more than {MAX_FIELDS} fields" in data["message"]
