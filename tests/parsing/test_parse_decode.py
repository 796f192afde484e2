"""The text bodies of a parsed message: transfer encodings, charsets, line endings."""

from __future__ import annotations

import base64
import time

import pytest

from .parse_support import (
    lines,
    parse,
    text_message,
)

# --- bodies --------------------------------------------------------------------


def test_plain_text_message_gives_text_and_no_html() -> None:
    parsed = parse(text_message("Hello Bob.\n").as_bytes())
    assert parsed.text == "Hello Bob.\n"
    assert parsed.html is None
    assert parsed.attachments == ()


def test_multipart_alternative_gives_text_and_html() -> None:
    message = text_message("Plain version\n")
    message.add_alternative("<p>HTML version</p>\n", subtype="html")
    parsed = parse(message.as_bytes())
    assert parsed.text == "Plain version\n"
    assert parsed.html == "<p>HTML version</p>\n"
    assert parsed.attachments == ()


def test_html_only_message_gives_html_and_no_text() -> None:
    parsed = parse(lines("Content-Type: text/html", "", "<p>Hi</p>"))
    assert parsed.text is None
    assert parsed.html == "<p>Hi</p>"


def test_message_without_content_type_is_text() -> None:
    parsed = parse(lines("Subject: bare", "", "just text"))
    assert parsed.text == "just text"


def test_empty_body_gives_empty_text() -> None:
    assert parse(lines("Subject: nothing", "", "")).text == ""


def test_message_without_a_text_part_gives_no_text() -> None:
    parsed = parse(lines("Content-Type: application/pdf", "", "%PDF"))
    assert parsed.text is None
    assert parsed.html is None
    assert [a.content_type for a in parsed.attachments] == ["application/pdf"]


def test_crlf_line_endings_become_lf() -> None:
    assert parse(lines("Subject: x", "", "one", "two", "")).text == "one\ntwo\n"


def test_lone_cr_line_endings_become_lf() -> None:
    assert parse(b"Subject: x\r\n\r\none\rtwo\r").text == "one\ntwo\n"


def test_base64_body_is_decoded() -> None:
    message = text_message()
    message.set_content("Grüße aus Köln\n", cte="base64")
    assert b"base64" in message.as_bytes()
    assert parse(message.as_bytes()).text == "Grüße aus Köln\n"


def test_quoted_printable_body_is_decoded() -> None:
    raw = lines(
        "Content-Type: text/plain; charset=utf-8",
        "Content-Transfer-Encoding: quoted-printable",
        "",
        "caf=C3=A9 and a soft=",
        " break",
    )
    assert parse(raw).text == "café and a soft break"


def test_iso_8859_1_body_is_decoded() -> None:
    raw = lines("Content-Type: text/plain; charset=iso-8859-1", "", b"caf\xe9")
    assert parse(raw).text == "café"


def test_utf8_body_is_decoded() -> None:
    raw = lines("Content-Type: text/plain; charset=utf-8", "", "café ☕")
    assert parse(raw).text == "café ☕"


def test_unknown_charset_falls_back_to_utf8() -> None:
    raw = lines("Content-Type: text/plain; charset=x-no-such-charset", "", "café")
    assert parse(raw).text == "café"


def test_unknown_charset_with_latin1_bytes_falls_back_to_latin1() -> None:
    raw = lines("Content-Type: text/plain; charset=x-no-such-charset", "", b"caf\xe9")
    assert parse(raw).text == "café"


def test_undeclared_8bit_latin1_body_is_decoded_as_latin1() -> None:
    assert parse(lines("Subject: x", "", b"caf\xe9")).text == "café"


def test_us_ascii_declared_over_utf8_bytes_is_read_as_utf8() -> None:
    raw = lines("Content-Type: text/plain; charset=us-ascii", "", "café")
    assert parse(raw).text == "café"


def test_gb2312_text_holding_gbk_characters_is_read_as_gbk() -> None:
    # "屄" is in GBK, not in GB 2312: mail labelled gb2312 often holds such characters.
    subject = "=?gb2312?b?" + base64.b64encode("这是什么屄".encode("gbk")).decode() + "?="
    body = "你好屄".encode("gbk")
    content_type = "Content-Type: text/plain; charset=gb2312"
    parsed = parse(lines(f"Subject: {subject}", content_type, "", body))
    assert (parsed.subject, parsed.text) == ("这是什么屄", "你好屄")
    assert parsed.defects == ()


@pytest.mark.parametrize(
    ("charset", "text"),
    [("euc-kr", "똠방각하"), ("shift_jis", "①髙"), ("big5", "嘅")],
)
def test_legacy_cjk_labels_read_their_windows_supersets(charset: str, text: str) -> None:
    superset = {"euc-kr": "cp949", "shift_jis": "cp932", "big5": "big5hkscs"}[charset]
    body = text.encode(superset)
    parsed = parse(lines(f"Content-Type: text/plain; charset={charset}", "", body))
    assert parsed.text == text
    assert parsed.defects == ()


@pytest.mark.parametrize("label", ["windows-31j", "Windows-31J", "WINDOWS_31J"])
def test_windows_31j_reads_as_cp932_on_every_python(label: str) -> None:
    # IANA's name for Microsoft's Shift_JIS; Python knows it only from 3.13 on.
    text = "テスト①"
    subject = f"=?{label}?b?" + base64.b64encode(text.encode("cp932")).decode() + "?="
    content_type = f"Content-Type: text/plain; charset={label}"
    parsed = parse(lines(f"Subject: {subject}", content_type, "", text.encode("cp932")))
    assert (parsed.subject, parsed.text) == (text, text)
    assert parsed.defects == ()


def test_a_windows_31j_filename_reads_as_cp932_on_every_python() -> None:
    name = "%".join(["", *(f"{byte:02X}" for byte in "請求書.pdf".encode("cp932"))])
    disposition = f"Content-Disposition: attachment; filename*=windows-31j''{name}"
    raw = lines("Content-Type: application/pdf", disposition, "", "%PDF")
    assert [attachment.filename for attachment in parse(raw).attachments] == ["請求書.pdf"]


def test_utf8_with_a_damaged_byte_keeps_the_rest_as_utf8() -> None:
    body = "Привет, ".encode() + b"\xd1f" + " мир".encode()
    parsed = parse(lines("Content-Type: text/plain; charset=utf-8", "", body))
    assert parsed.text == "Привет, Ñf мир"
    assert parsed.defects == (
        "the body is not valid 'utf-8', decoded as UTF-8, its other bytes as latin-1",
    )
    undeclared = parse(lines("Subject: x", "", "déjà ".encode() + b"vu \xe9t\xe9"))
    assert undeclared.text == "déjà vu été"


def test_text_with_many_runs_of_non_utf8_bytes_is_read_as_latin1() -> None:
    body = "é".encode() + b" caf\xe9" * 5000
    started = time.perf_counter()
    parsed = parse(lines("Subject: x", "", body))
    assert time.perf_counter() - started < 1
    assert parsed.text == "Ã©" + " café" * 5000
    assert parsed.defects == ("undeclared 8-bit text in the body, decoded as latin-1",)


def test_non_text_charset_codec_is_not_applied() -> None:
    # "rot13" is a Python codec but not a text encoding; it must not be used.
    raw = lines("Content-Type: text/plain; charset=rot13", "", "uryyb")
    assert parse(raw).text == "uryyb"
