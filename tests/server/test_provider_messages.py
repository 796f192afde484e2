"""The MIME message a provider send makes, read back with the package's own parser."""

from __future__ import annotations

import binascii
import json
import random
import subprocess
import sys
from datetime import datetime, timezone
from email import message_from_bytes
from email.policy import default

import pytest

from pytest_tempinbox.models import Envelope, Message, ProviderRecord
from pytest_tempinbox.server.providers.send import (
    Part,
    Send,
    SendError,
    _quoted_printable,
    build_message,
    parse_json,
)
from pytest_tempinbox.server.store.stored_message import StoredMessage

RECORD = ProviderRecord("sendgrid", "/v3/mail/send")
SENDER = ("App", "app@example.com")
TO = (("Ada", "ada@tempinbox.test"),)
PNG = b"\x89PNG\r\n\x1a\nfake image"


def read(send: Send, record: ProviderRecord = RECORD) -> Message:
    """The message ``send`` builds, as the server serves it."""
    raw = build_message(send, record, "<abc@sendgrid.tempinbox.invalid>")
    at = datetime.now(timezone.utc)
    envelope = Envelope(send.sender[1], send.recipients)
    return StoredMessage("1", TO[0][1], envelope, raw, at, provider=record).message()


def test_text_and_html_make_an_alternative_whose_link_and_code_read() -> None:
    html = '<p>Your code is 482913</p><a href="https://app.test/confirm">Confirm</a>'
    message = read(Send(SENDER, TO, "Welcome", "Code: 482913", html))
    assert message.link(text="Confirm") == "https://app.test/confirm"
    assert message.code() == "482913"
    assert message.text is not None
    assert message.text.strip() == "Code: 482913"
    assert message.headers["content-type"][0].startswith("multipart/alternative")


def test_the_sender_recipients_and_reply_to_are_written_but_bcc_is_not() -> None:
    cc = (("", "cc@tempinbox.test"),)
    bcc = (("", "hidden@tempinbox.test"),)
    reply_to = (("Support", "help@example.com"),)
    message = read(Send(SENDER, TO, "Hi", "text", cc=cc, bcc=bcc, reply_to=reply_to))
    assert message.sender is not None
    assert message.sender.email == "app@example.com"
    assert [address.email for address in message.to] == ["ada@tempinbox.test"]
    assert [address.email for address in message.cc] == ["cc@tempinbox.test"]
    assert [address.email for address in message.reply_to] == ["help@example.com"]
    assert "hidden@tempinbox.test" not in str(message.headers)


def test_the_message_has_a_message_id_and_a_date() -> None:
    message = read(Send(SENDER, TO, "Hi", "text"))
    assert message.message_id == "<abc@sendgrid.tempinbox.invalid>"
    assert message.date is not None


def test_an_attachment_is_a_part_of_the_mixed_message() -> None:
    part = Part("report.pdf", "application/pdf", b"%PDF-1.4 report")
    message = read(Send(SENDER, TO, "Report", "See attached", attachments=(part,)))
    attachment = message.attachment("report.pdf")
    assert attachment.content_type == "application/pdf"
    assert attachment.size == len(b"%PDF-1.4 report")
    assert message.headers["content-type"][0].startswith("multipart/mixed")


def test_an_inline_image_sits_beside_the_html_in_a_related_part() -> None:
    html = '<img src="cid:logo"><a href="https://app.test/">Open</a>'
    logo = Part("logo.png", "image/png", PNG, "logo")
    raw = build_message(
        Send(SENDER, TO, "Logo", "text", html, attachments=(logo,)), RECORD, "<x@y>"
    )
    parsed = message_from_bytes(raw, policy=default)
    kinds = [part.get_content_type() for part in parsed.walk()]
    assert kinds == [
        "multipart/alternative",
        "text/plain",
        "multipart/related",
        "text/html",
        "image/png",
    ]
    image = read(Send(SENDER, TO, "Logo", "text", html, attachments=(logo,))).attachments[0]
    assert (image.content_id, image.inline) == ("logo", True)


def test_custom_headers_are_written_and_cannot_replace_the_built_ones() -> None:
    headers = (("X-Campaign", "spring"), ("Subject", "forged"))
    message = read(Send(SENDER, TO, "Real subject", "text", headers=headers))
    assert message.headers["x-campaign"] == ("spring",)
    assert message.subject == "Real subject"


def test_a_template_send_without_a_body_says_which_template_and_data() -> None:
    record = ProviderRecord("sendgrid", "/v3/mail/send", "d-welcome", {"name": "Ada"})
    message = read(Send(SENDER, TO, "Welcome"), record)
    assert message.text is not None
    assert "d-welcome" in message.text
    assert '"name": "Ada"' in message.text
    assert message.provider == record


def test_a_line_break_in_the_subject_is_a_send_error() -> None:
    with pytest.raises(SendError, match="line break"):
        build_message(Send(SENDER, TO, "Hi\r\nBcc: evil@example.com", "text"), RECORD, "<x@y>")


def test_a_content_type_that_is_not_one_is_a_send_error() -> None:
    part = Part("a.bin", "not a type", b"x")
    with pytest.raises(SendError, match="not a content type"):
        build_message(Send(SENDER, TO, "Hi", "text", attachments=(part,)), RECORD, "<x@y>")


def test_the_provider_modules_load_only_when_a_send_arrives() -> None:
    script = (
        "import sys, requests\n"
        "from pytest_tempinbox import InboxServer\n"
        "with InboxServer() as server:\n"
        "    requests.get(server.api_url + '/info', timeout=10)\n"
        "    prefix = 'pytest_tempinbox.server.providers.'\n"
        "    print(sorted(name for name in sys.modules if name.startswith(prefix)))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert result.stdout == "[]\n", result.stderr


def test_a_non_ascii_subject_and_name_are_encoded_and_read_back() -> None:
    message = read(Send(("Zoë", "app@example.com"), TO, "Grüße, " + "long " * 200, "text"))
    assert message.subject == ("Grüße, " + "long " * 200).strip()
    assert message.sender is not None
    assert message.sender.name == "Zoë"


def test_long_lines_are_quoted_printable_as_binascii_writes_them() -> None:
    """The soft breaks written without binascii match its own, over generated text."""
    shapes = ["x", "a.", "a= ", " .a", "a\t", "aé", ".", "".join(map(chr, range(32, 127)))]
    rng = random.Random(7)
    for _ in range(3000):
        lines = [
            "".join(
                rng.choice(rng.choice(shapes))
                for _ in range(rng.choice([0, 1, 74, 75, 76, 77, 151, 152, rng.randrange(400)]))
            ).encode()
            for _ in range(rng.randint(1, 3))
        ]
        data = b"\r\n".join(lines) + b"\r\n"
        assert _quoted_printable(lines, data) == binascii.b2a_qp(data, istext=True), lines


def test_a_long_text_line_reads_back_whole() -> None:
    line = "A paragraph written on one line, as templates often do. " * 8
    send = Send(SENDER, TO, "Long", line.strip() + "\n")
    assert b"Content-Transfer-Encoding: quoted-printable" in build_message(send, RECORD, "<a@b>")
    message = read(send)
    assert message.text is not None
    assert message.text.strip() == line.strip()


@pytest.mark.parametrize(
    "body",
    [
        b'{"a": 1}',
        b'[{"a": "\xc3\xa9"}]',
        b'\xef\xbb\xbf{"a": 1}',  # a byte order mark
        '{"a": 1}'.encode("utf-16"),
        b' {"a": 1}',
        b'{"a": "\xed\xa0\x80"}',  # a lone surrogate, as json.loads lets it through
    ],
)
def test_a_json_body_reads_as_json_loads_reads_it(body: bytes) -> None:
    assert parse_json(body) == json.loads(body)


@pytest.mark.parametrize("body", [b'{"a": "\xff"}', b"{", b"[" * 100_000, b"", b"\x00"])
def test_a_body_json_loads_refuses_is_a_send_error(body: bytes) -> None:
    with pytest.raises(SendError, match="not valid JSON"):
        parse_json(body)
