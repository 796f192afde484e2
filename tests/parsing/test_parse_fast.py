"""The shortcut for the usual message, and what takes the full path instead."""

from __future__ import annotations

import pytest

from pytest_tempinbox.parsing.fast import SIMPLE_LIMIT, simple_message
from pytest_tempinbox.parsing.message import (
    parse_message,
)

from .parse_support import (
    lines,
    text_message,
)

# --- the shortcut for the usual message ------------------------------------------
# That it parses as the full parser does is a property test (test_fast_properties.py).


def test_an_application_s_plain_text_mail_takes_the_shortcut() -> None:
    message = text_message("Your code is 123456.\n", Date="Mon, 23 Nov 2026 10:00:00 +0000")
    message["Message-ID"] = "<abc@example.test>"
    simple = simple_message(message.as_bytes(policy=message.policy.clone(linesep="\r\n")))
    assert simple is not None
    assert simple.text is not None
    assert (simple.text.path, simple.text.charset) == ("", "utf-8")
    assert simple.text.data == b"Your code is 123456.\r\n"
    assert simple.html is None
    assert ("Subject", "Hello") in simple.headers


def test_a_bare_smtplib_message_takes_the_shortcut() -> None:
    simple = simple_message(lines("From: a@example.test", "To: b@example.test", "", "Hi.", ""))
    assert simple is not None
    assert simple.text is not None
    assert simple.headers == [("From", "a@example.test"), ("To", "b@example.test")]
    assert (simple.text.data, simple.text.charset) == (b"Hi.\r\n", None)


def test_an_application_s_text_and_html_mail_takes_the_shortcut() -> None:
    message = text_message("Your code is 123456.\n")
    message.add_alternative("<p>Your code is <b>123456</b>.</p>\n", subtype="html")
    simple = simple_message(message.as_bytes(policy=message.policy.clone(linesep="\r\n")))
    assert simple is not None
    assert simple.text is not None
    assert simple.html is not None
    assert (simple.text.path, simple.text.data) == ("1", b"Your code is 123456.\r\n")
    assert simple.html.path == "2"
    assert simple.html.data == b"<p>Your code is <b>123456</b>.</p>\r\n"
    assert (simple.text.charset, simple.html.charset, simple.html_first) == (
        "utf-8",
        "utf-8",
        False,
    )
    parsed = parse_message(message.as_bytes())
    assert (parsed.codes, parsed.attachments, parsed.defects) == (("123456",), (), ())


def test_an_html_first_alternative_is_read_in_that_order() -> None:
    raw = lines(
        'Content-Type: multipart/alternative; boundary="=_b"',
        "",
        "preamble",
        "--=_b",
        "Content-Type: text/html",
        "",
        '<a href="https://example.test/h">h</a>',
        "--=_b  ",
        "Content-Type: text/plain; charset=us-ascii",
        "",
        "https://example.test/t",
        "",
        "--=_b--",
        "epilogue",
    )
    simple = simple_message(raw)
    assert simple is not None
    assert simple.text is not None
    assert simple.html is not None
    assert simple.html_first
    assert simple.text.data == b"https://example.test/t\r\n"
    parsed = parse_message(raw)
    assert parsed.links == ("https://example.test/h", "https://example.test/t")
    assert parsed.text == "https://example.test/t\n"


def test_an_html_only_mail_takes_the_shortcut() -> None:
    simple = simple_message(lines("Content-Type: text/html; charset=utf-8", "", "<p>x</p>"))
    assert simple is not None
    assert simple.html is not None
    assert (simple.text, simple.html.data, simple.html_first) == (None, b"<p>x</p>", True)


@pytest.mark.parametrize(
    "raw",
    [
        lines(" continued", "Subject: s", "", "x"),
        lines("Subject: =?utf-8?q?caf=C3=A9?=", "", "x"),
        lines("Subject: caf\xe9", "", "x"),
        lines("Content-Type: text/plain; format=flowed", "", "x"),
        lines("Content-Type: multipart/mixed; boundary=b", "", "--b", "", "x", "--b--"),
        lines("Content-Type: multipart/mixed; boundary=b", "", "--b", "Subject: x", "", "x"),
        lines("Content-Type: multipart/mixed; boundary=b", "", "--b", "--b", "", "x", "--b--"),
        lines(
            "Content-Type: multipart/mixed; boundary=b",
            "",
            *("--b", "Content-Type: text/plain", "", "x") * 2,
            "--b--",
        ),
        lines(
            "Content-Type: multipart/mixed; boundary=b",
            "",
            *("--b", "Content-Type: text/plain", "Content-Transfer-Encoding: base64"),
            *("", "eA==", "--b--"),
        ),
        lines(
            "Content-Type: multipart/mixed; boundary=b",
            "",
            *("--b", "Content-Type: multipart/alternative; boundary=c", "", "--c--"),
            "--b--",
        ),
        lines("Content-Type: multipart/mixed; boundary=b", "", "--b", "S: x", "", "a\rb", "--b--"),
        lines("Content-Type: multipart/mixed; boundary=b; charset=x", "", "--b--"),
        lines("Content-Type: multipart/digest; boundary=b", "", "--b--"),
        lines("Content-Transfer-Encoding: base64", "", "eA=="),
        lines("Content-Disposition: inline", "", "x"),
        lines("Content-Type: text/plain", "Content-Type: text/plain; charset=koi8-r", "", "x"),
        lines("From a@example.test Mon Nov 23 10:00:00 2026", "Subject: s", "", "x"),
        lines("Subject: no body"),
        lines("Subject: big", "", "x" * SIMPLE_LIMIT),
    ],
    ids=[
        "continuation line first",
        "encoded word",
        "8-bit header",
        "format=flowed",
        "part without headers",
        "no closing boundary",
        "two boundary lines in a row",
        "two text parts",
        "base64 part",
        "nested multipart",
        "lone CR",
        "multipart parameter",
        "multipart/digest",
        "base64",
        "disposition",
        "two content types",
        "unix from line",
        "no empty line",
        "over the limit",
    ],
)
def test_other_messages_take_the_full_path(raw: bytes) -> None:
    assert simple_message(raw) is None
