"""Parsing a message as a whole: the way in, its names, and input that must never make it raise."""

from __future__ import annotations

import dataclasses
import random
import time

import pytest

from pytest_tempinbox.parsing import message as parsing
from pytest_tempinbox.parsing.message import (
    attachment_payload,
    parse_message,
)

from .parse_support import (
    assert_json_safe,
    lines,
    parse,
    text_message,
)

# --- the helpers themselves ----------------------------------------------------


def test_json_check_rejects_a_lone_surrogate() -> None:
    parsed = parse_message(b"Subject: ok\r\n\r\nbody")
    broken = dataclasses.replace(parsed, subject="caf\udce9")
    with pytest.raises(UnicodeEncodeError):
        assert_json_safe(broken)


def test_public_names_are_exported() -> None:
    assert parsing.__all__ == [
        "MAX_ATTACHMENTS",
        "ParsedMessage",
        "attachment_payload",
        "parse_message",
        "served_attachment",
    ]


# --- robustness ------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"\r\n",
        b"\x00\xff\xfe\x80",
        b":",
        b"no header separator at all",
        b"Subject: only headers",
        b'Content-Type: multipart/mixed; boundary=""\r\n\r\n--\r\n--\r\n',
        b'Content-Type: text/plain; charset="a\x00b"\r\n\r\ncaf\xe9',
        b"Content-Type: text/plain; charset=\xff\r\n\r\ncaf\xe9",
        b"Content-Type: message/rfc822\r\n\r\nnot a message",
        b"Content-Type: /\r\nContent-Disposition: ;;;=\r\n\r\nx",
        b"Content-Transfer-Encoding: x-uuencode\r\n\r\nbegin 644 x\r\n!!!\r\nend\r\n",
        b"From: =?utf-8?b?\xff\xfe?= <\xff@\xfe>\r\nTo: <<<>>>,,,;;;:::\r\n\r\n",
        b"Subject: " + b"=?utf-8?q?a?=" * 2000 + b"\r\n\r\n",
        b"Content-Type: text/html\r\n\r\n<a href='\xff'>&#xd800;&#0;<![CDATA[",
    ],
)
def test_malformed_message_does_not_raise(raw: bytes) -> None:
    parse(raw)


@pytest.mark.parametrize("markup", ['<a "x', "<a href=x ", '<p class="', "<!--", "<"])
def test_broken_html_is_read_in_linear_time(markup: str) -> None:
    # html.parser alone needs about a minute for 20,000 unclosed "<a" tags.
    raw = lines("Content-Type: text/html", "", markup * 20_000 + '<a href="https://x.test/">')
    started = time.perf_counter()
    parse(raw)
    assert time.perf_counter() - started < 5


def test_mutated_messages_never_raise() -> None:
    message = text_message("Hi https://example.test/a 654321\n", Subject="Grüße 123456")
    message.add_alternative("<p><a href='https://example.test/b?c=1&amp;d=2'>b</a></p>", "html")
    message.add_attachment(b"\x00" * 64, maintype="application", subtype="pdf", filename="é.pdf")
    message.add_attachment(text_message())
    seed = message.as_bytes()
    noise = [b"=?", b"?=", b'"', b"<", b">", b",", b";", b"\r\n", b"\r\n ", b"\xff", b"\xc3", b"--"]
    rng = random.Random(20261122)
    for _ in range(300):
        raw = bytearray(seed)
        for _ in range(rng.randint(1, 8)):
            position = rng.randrange(len(raw) + 1)
            if rng.random() < 0.5:
                raw[position:position] = rng.choice(noise)
            else:
                del raw[position : position + rng.randint(1, 20)]
        parsed = parse(bytes(raw))
        for attachment in parsed.attachments:
            assert attachment_payload(bytes(raw), attachment.index)[0] == attachment
