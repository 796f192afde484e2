"""The defects a parsed message tells: what was broken, and how it was read anyway."""

from __future__ import annotations

from email.errors import NonPrintableDefect
from email.feedparser import BytesFeedParser
from email.message import Message

import pytest

from pytest_tempinbox.parsing import decode as _decode
from pytest_tempinbox.parsing.message import (
    parse_message,
)

from .parse_support import (
    lines,
    many_parts,
    nested,
    parse,
)

# --- defects ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "defect"),
    [
        (lines("Content-Type: multipart/mixed", "", "x"), "multipart without boundary"),
        (
            lines("Content-Type: multipart/mixed; boundary=b", "", "x"),
            "multipart whose boundary never occurs",
        ),
        (
            lines("Content-Type: multipart/mixed; boundary=b", "", "--b", "", "x"),
            "multipart without its closing boundary",
        ),
        (lines(" folded", "Subject: x", "", "x"), "first header line is a continuation line"),
        (lines("Subject: x", "From nobody", "X: y", "", "x"), "'From ' line among the headers"),
        (
            lines("Subject: x", "no colon", "", "x"),
            "a header line without a colon ends the headers",
        ),
        (
            lines(
                "Content-Type: multipart/mixed; boundary=b",
                "Content-Transfer-Encoding: base64",
                "",
                "--b",
                "",
                "x",
                "--b--",
            ),
            "multipart with a transfer encoding other than 7bit, 8bit or binary",
        ),
        (lines("Content-Transfer-Encoding: base64", "", "aGVsbG8*"), "invalid base64 in the body"),
        (
            lines(
                "Content-Type: multipart/mixed; boundary=b",
                "",
                "--b",
                "",
                "text",
                "--b",
                "Content-Type: multipart/alternative; boundary=c",
                "",
                "--c",
                "Content-Transfer-Encoding: base64",
                "",
                "QUJD!!R",
                "--c--",
                "--b--",
            ),
            "invalid base64 in part 2.1",
        ),
        (
            lines(
                "Content-Type: multipart/mixed; boundary=b",
                "",
                "--b",
                "Content-Type: multipart/mixed",
                "",
                "x",
                "--b--",
            ),
            "multipart without boundary in part 1",
        ),
        (
            lines("Content-Type: text/plain; charset=x-foo", "", "caf\u00e9"),
            "unknown charset 'x-foo', decoded as UTF-8",
        ),
        (
            lines("Content-Type: text/plain; charset=x-foo", "", b"caf\xe9"),
            "unknown charset 'x-foo', decoded as latin-1",
        ),
        (
            lines("Subject: =?x-foo?q?caf=C3=A9?=", "", ""),
            "unknown charset 'x-foo', decoded as UTF-8",
        ),
        (
            lines("Content-Type: text/plain; charset=punycode", "", "abc"),
            "unsupported charset 'punycode', decoded as UTF-8",
        ),
        (
            lines("Content-Type: text/plain; charset=us-ascii", "", "caf\u00e9"),
            "the body is not valid 'us-ascii', decoded as UTF-8",
        ),
        (
            lines(
                "Content-Type: multipart/mixed; boundary=b",
                "",
                "--b",
                "Content-Type: text/plain; charset=utf-8",
                "",
                b"caf\xe9",
                "--b--",
            ),
            "part 1 is not valid 'utf-8', decoded as latin-1",
        ),
        (
            lines("Content-Type: text/plain; charset=utf-8", "", "é ".encode() + b"\xe9"),
            "the body is not valid 'utf-8', decoded as UTF-8, its other bytes as latin-1",
        ),
        (lines("", b"caf\xe9"), "undeclared 8-bit text in the body, decoded as latin-1"),
        (
            lines(b"Subject: caf\xe9", "", ""),
            "undeclared 8-bit text in header 'Subject', decoded as latin-1",
        ),
        (lines(b"Subject: a\x00b", "", ""), "NUL bytes in the message"),
        (lines('To: "', "", ""), "header 'To' could not be parsed, served raw"),
        (lines("Cc: <<<>>>", "", ""), "header 'Cc' could not be parsed, served raw"),
        (
            lines("To: " + "a" * 70_000, "", ""),
            "header 'To' holds over 64 KiB without a comma, not read as addresses",
        ),
    ],
)
def test_defect_is_told(raw: bytes, defect: str) -> None:
    assert parse(raw).defects == (defect,)


@pytest.mark.parametrize(
    "raw",
    [
        lines("To: undisclosed-recipients:;", "", ""),
        lines("Cc: a@example.test,", "", ""),
        lines("Subject: =?utf-8?q?caf=C3=A9?=", "", ""),
        lines("Subject: caf\u00e9", "", ""),  # raw UTF-8 (RFC 6532)
        lines("", "caf\u00e9"),  # undeclared UTF-8 is read as such
        lines("Subject: only headers"),
        nested(60),
    ],
)
def test_no_defect_is_told_for_what_is_fine(raw: bytes) -> None:
    assert parse(raw).defects == ()


def test_header_the_decoder_fails_on_is_served_raw(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(value: str, *args: object) -> str:
        raise ValueError(value)

    monkeypatch.setattr(_decode, "decode_words", broken)
    parsed = parse(lines("Subject: =?utf-8?q?caf=C3=A9?=", "", ""))
    assert parsed.subject == "=?utf-8?q?caf=C3=A9?="
    assert parsed.defects == ("header 'Subject' could not be decoded, served raw",)


def test_parser_failure_serves_the_body_as_text(monkeypatch: pytest.MonkeyPatch) -> None:
    def feed(self: BytesFeedParser[Message], data: bytes) -> None:
        raise ValueError("a bug")

    monkeypatch.setattr(BytesFeedParser, "feed", feed)
    parsed = parse(lines("Subject: s", "Content-Type: multipart/mixed; boundary=b", "", "--b"))
    assert (parsed.subject, parsed.text) == ("s", "--b")
    assert parsed.defects == ("structure could not be parsed: the body is served as one text part",)


def test_other_email_package_defects_are_told_in_words(monkeypatch: pytest.MonkeyPatch) -> None:
    close = BytesFeedParser.close

    def close_with_defect(self: BytesFeedParser[Message]) -> Message:
        root = close(self)
        root.defects.append(NonPrintableDefect("\x01"))
        return root

    monkeypatch.setattr(BytesFeedParser, "close", close_with_defect)
    # An encoded word: a message the email package parses (see the shortcut's tests).
    assert parse(lines("Subject: =?utf-8?q?s?=", "", "x")).defects == ("non printable",)


def test_defects_are_unique() -> None:
    word = "=?x-foo?q?caf=C3=A9?="
    raw = lines(f"Subject: {word}", f"X-One: {word}", f"X-Two: {word} {word}", "", "")
    assert parse(raw).defects == ("unknown charset 'x-foo', decoded as UTF-8",)


def test_defects_are_capped_at_twenty() -> None:
    part = "--b\r\nContent-Transfer-Encoding: base64\r\n\r\nQUJD!!R"
    raw = lines("Content-Type: multipart/mixed; boundary=b", "", *[part] * 25, "--b--", "")
    defects = parse(raw).defects
    assert defects == (
        *(f"invalid base64 in part {number}" for number in range(1, 20)),
        "6 more defects not listed",
    )


def test_cutting_the_input_short_is_not_blamed_on_the_sender() -> None:
    defects = parse_message(many_parts(2000), budget=1e-6).defects
    assert len(defects) == 1
    assert "closing boundary" not in defects[0]
