from __future__ import annotations

import base64
import dataclasses
import functools
import json
import random
import time
from datetime import datetime, timedelta, timezone
from email.errors import NonPrintableDefect
from email.feedparser import BytesFeedParser
from email.message import EmailMessage, Message
from email.utils import getaddresses
from typing import Any

import pytest

from pytest_tempinbox.errors import AttachmentNotFound
from pytest_tempinbox.models import Address, Attachment
from pytest_tempinbox.parsing import codes as _codes
from pytest_tempinbox.parsing import decode as _decode
from pytest_tempinbox.parsing import extract as _extract
from pytest_tempinbox.parsing import html as _html
from pytest_tempinbox.parsing import message as parsing
from pytest_tempinbox.parsing.fast import SIMPLE_LIMIT, simple_message
from pytest_tempinbox.parsing.message import (
    ParsedMessage,
    attachment_payload,
    parse_message,
    served_attachment,
)


def assert_json_safe(parsed: ParsedMessage) -> None:
    # ensure_ascii=False, or json.dumps would escape a lone surrogate as "\udce9"
    # and the check could never fail.
    json.dumps(dataclasses.asdict(parsed), default=str, ensure_ascii=False).encode("utf-8")


def parse(raw: bytes) -> ParsedMessage:
    # A budget no stalled CI machine runs out of: the clock decides only the
    # tests of the budget, which pass their own (its headroom is in the bench).
    parsed = parse_message(raw, budget=30)
    assert_json_safe(parsed)
    return parsed


def lines(*parts: str | bytes) -> bytes:
    """Join header and body lines with CRLF, as they arrive over SMTP."""
    return b"\r\n".join(part.encode("utf-8") if isinstance(part, str) else part for part in parts)


def text_message(body: str = "Hello.\n", **headers: str) -> EmailMessage:
    message = EmailMessage()
    defaults = {"From": "Alice <alice@example.test>", "To": "bob@example.test", "Subject": "Hello"}
    for name, value in (defaults | headers).items():
        message[name.replace("_", "-")] = value
    message.set_content(body)
    return message


def with_attachments(*attachments: tuple[bytes, str, str, str | None]) -> bytes:
    message = text_message()
    for data, maintype, subtype, filename in attachments:
        message.add_attachment(data, maintype=maintype, subtype=subtype, filename=filename)
    return message.as_bytes()


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


# --- headers -------------------------------------------------------------------


def test_rfc2047_subject_is_decoded() -> None:
    raw = lines("Subject: =?utf-8?q?Gr=C3=BC=C3=9Fe?= und =?iso-8859-1?b?Y2Fm6Q==?=", "", "")
    assert parse(raw).subject == "Grüße und café"


def test_adjacent_encoded_words_join_a_split_character() -> None:
    # "€" is E2 82 AC; the encoder split it across two words.
    raw = lines("Subject: =?utf-8?b?4oI=?= =?utf-8?b?rA==?=", "", "")
    assert parse(raw).subject == "€"


def test_an_encoded_word_holding_unencoded_utf8_is_decoded_and_noted() -> None:
    # Zitadel writes its subjects so: raw UTF-8 and spaces inside "=?utf-8?q?...?=".
    raw = b"Subject: =?utf-8?q?Passwort zur\xc3\xbccksetzen?= =?utf-8?q?caf=C3=A9?=\r\n\r\nhi\r\n"
    parsed = parse(raw)
    assert parsed.subject == "Passwort zurücksetzen café"
    assert parsed.defects == ("an encoded word holding unencoded text in header 'Subject'",)


def test_an_unencoded_encoded_word_keeps_its_declared_charset() -> None:
    raw = b"Subject: =?iso-8859-1?q?zur\xfcck_jetzt?=\r\n\r\nhi\r\n"
    assert parse(raw).subject == "zurück jetzt"


def test_bad_encoded_word_does_not_raise() -> None:
    raw = lines("Subject: =?utf-8?b?!!!?= =?no-such-charset?q?caf=E9?= end", "", "")
    assert parse(raw).subject == "café end"


def test_rfc2047_display_name_is_decoded() -> None:
    raw = lines("From: =?utf-8?q?Zo=C3=AB_Smith?= <zoe@example.test>", "", "")
    assert parse(raw).sender == Address(name="Zoë Smith", email="zoe@example.test")


def test_raw_utf8_from_header_decodes_to_text() -> None:
    parsed = parse(lines("From: Jöhn <jöhn@exämple.com>", "Subject: Grüße", "", ""))
    assert parsed.sender == Address(name="Jöhn", email="jöhn@exämple.com")
    assert parsed.subject == "Grüße"
    assert parsed.headers["from"] == ("Jöhn <jöhn@exämple.com>",)


def test_raw_latin1_subject_falls_back_to_latin1() -> None:
    assert parse(lines(b"Subject: caf\xe9", "", "")).subject == "café"


def test_folded_subject_is_unfolded() -> None:
    raw = lines("Subject: a long", " subject that", "\twas folded", "", "")
    assert parse(raw).subject == "a long subject that\twas folded"


def test_missing_subject_is_empty() -> None:
    assert parse(lines("From: a@example.test", "", "")).subject == ""


def test_headers_keep_every_value_in_order_under_lowercase_names() -> None:
    raw = lines(
        "Received: from one",
        "X-Note: =?utf-8?q?caf=C3=A9?=",
        "RECEIVED: from two",
        "  (folded)",
        "",
        "",
    )
    headers = parse(raw).headers
    assert headers["received"] == ("from one", "from two  (folded)")
    assert headers["x-note"] == ("café",)


def test_header_values_are_stripped() -> None:
    assert parse(lines("X-Padded:    value   ", "", "")).headers["x-padded"] == ("value",)


def test_message_id_is_stripped() -> None:
    assert parse(lines("Message-ID:  <abc@example.test> ", "", "")).message_id == (
        "<abc@example.test>"
    )


def test_missing_message_id_is_none() -> None:
    assert parse(lines("Subject: x", "", "")).message_id is None


# --- addresses -----------------------------------------------------------------


def test_address_headers_give_names_and_emails() -> None:
    raw = lines(
        'To: "Doe, Jane" <Jane.Doe@Example.test>, plain@example.test',
        "Cc: Carol <carol@example.test>",
        "Reply-To: replies@example.test",
        "",
        "",
    )
    parsed = parse(raw)
    assert parsed.to == (
        Address(name="Doe, Jane", email="Jane.Doe@Example.test"),
        Address(name=None, email="plain@example.test"),
    )
    assert parsed.cc == (Address(name="Carol", email="carol@example.test"),)
    assert parsed.reply_to == (Address(name=None, email="replies@example.test"),)


def test_repeated_to_headers_are_combined() -> None:
    raw = lines("To: a@example.test", "To: b@example.test", "", "")
    assert [address.email for address in parse(raw).to] == ["a@example.test", "b@example.test"]


def test_sender_is_first_from_mailbox() -> None:
    parsed = parse(lines("From: first@example.test, second@example.test", "", ""))
    assert parsed.sender == Address(name=None, email="first@example.test")


def test_missing_from_gives_no_sender() -> None:
    parsed = parse(lines("To: a@example.test", "", ""))
    assert parsed.sender is None
    assert parsed.cc == ()


def test_group_syntax_gives_its_members() -> None:
    raw = lines("To: Team: a@example.test, B <b@example.test>;, c@example.test", "", "")
    assert [address.email for address in parse(raw).to] == [
        "a@example.test",
        "b@example.test",
        "c@example.test",
    ]


def test_empty_group_gives_no_addresses() -> None:
    assert parse(lines("To: undisclosed-recipients:;", "", "")).to == ()


def test_to_with_a_lone_quote_does_not_raise() -> None:
    parsed = parse(lines('To: "', "", ""))
    assert parsed.to == ()
    assert parsed.headers["to"] == ('"',)


def test_trailing_comma_in_cc_keeps_the_address() -> None:
    assert parse(lines("Cc: a@example.test,", "", "")).cc == (
        Address(name=None, email="a@example.test"),
    )


UNQUOTED_NOTE = "unquoted address as display name in header {!r}"


@pytest.mark.parametrize("name", ["From", "Cc", "Reply-To"])
def test_an_unquoted_address_as_display_name_is_the_name(name: str) -> None:
    raw = lines(f"{name}: alice@example.test <bob@example.test>", "Subject: x", "", "hi")
    parsed = parse(raw)
    read = {"From": (parsed.sender,), "Cc": parsed.cc, "Reply-To": parsed.reply_to}[name]
    assert read == (Address(name="alice@example.test", email="bob@example.test"),)
    assert parsed.defects == (UNQUOTED_NOTE.format(name),)


def test_an_unquoted_address_as_display_name_among_others() -> None:
    raw = lines(
        "To: c@example.test, Alice alice@example.test<a@example.test> (work), d@example.test",
        "Cc: Team: x@example.test <y@example.test>;, z@example.test",
        "",
        "",
    )
    parsed = parse(raw)
    assert parsed.to == (
        Address(name=None, email="c@example.test"),
        Address(name="Alice alice@example.test", email="a@example.test"),
        Address(name=None, email="d@example.test"),
    )
    assert parsed.cc == (
        Address(name="x@example.test", email="y@example.test"),
        Address(name=None, email="z@example.test"),
    )
    assert parsed.defects == (UNQUOTED_NOTE.format("To"), UNQUOTED_NOTE.format("Cc"))


def test_an_encoded_word_holding_an_address_is_the_display_name() -> None:
    raw = lines(
        "From: =?utf-8?q?alice@example.test?= <bob@example.test>",
        "To: =?utf-8?q?=C3=A9lise=40example.test?= <e@example.test>",
        "",
        "",
    )
    parsed = parse(raw)
    assert parsed.sender == Address(name="alice@example.test", email="bob@example.test")
    # Encoded as RFC 2047 says: nothing is wrong with it.
    assert parsed.to == (Address(name="élise@example.test", email="e@example.test"),)
    assert parsed.defects == (UNQUOTED_NOTE.format("From"),)


@pytest.mark.parametrize(
    ("header", "read"),
    [
        ("a@example.test (a,b) < b@example.test >", ("a@example.test", "b@example.test")),
        ("a@example.test (c <d@x.test>) <b@example.test>", ("a@example.test", "b@example.test")),
        ("a@example.test < (note) b@example.test (tail) >", ("a@example.test", "b@example.test")),
        ('a@example.test <"b c"@example.test>', ("a@example.test", '"b c"@example.test')),
        ("a@example.test <b@[IPv6:2001:db8::1]>", ("a@example.test", "b@[IPv6:2001:db8::1]")),
        ("a@example.test <\tb@example.test >", ("a@example.test", "b@example.test")),
    ],
)
def test_an_unquoted_address_as_display_name_with_comments_and_blanks(
    header: str, read: tuple[str, str]
) -> None:
    parsed = parse(lines(f"From: {header}", "", ""))
    assert parsed.sender == Address(name=read[0], email=read[1])
    assert parsed.defects == (UNQUOTED_NOTE.format("From"),)


@pytest.mark.parametrize(
    "header",
    [
        "a@example.test <b@example.test> <c@example.test>",
        "a@example.test <b@example.test> c@example.test",
        "a@example.test <b@example.test",
        "a@example.test <>",
    ],
)
def test_an_ambiguous_address_list_is_read_as_before(header: str) -> None:
    parsed = parse(lines(f"To: {header}", "", ""))
    assert parsed.to == tuple(
        Address(name=name or None, email=email) for name, email in getaddresses([header]) if email
    )
    assert UNQUOTED_NOTE.format("To") not in parsed.defects


@pytest.mark.parametrize(
    "header",
    [
        '"alice@example.test" <bob@example.test>',
        "Alice <bob@example.test>",
        "bob@example.test (alice@example.test)",
        '"a b"@example.test',
        "<bob@example.test>",
        "Team: <bob@example.test>;",
    ],
)
def test_well_formed_addresses_read_as_getaddresses_reads_them(header: str) -> None:
    parsed = parse(lines(f"To: {header}", "", ""))
    expected = tuple(
        Address(name=name or None, email=email) for name, email in getaddresses([header])
    )
    assert parsed.to == expected
    assert parsed.defects == ()


# --- dates ---------------------------------------------------------------------


def test_date_with_offset_is_aware() -> None:
    parsed = parse(lines("Date: Sat, 22 Nov 2025 10:00:00 +0130", "", ""))
    assert parsed.date == datetime(2025, 11, 22, 10, 0, tzinfo=timezone(timedelta(minutes=90)))
    assert parsed.date is not None
    assert parsed.date.utcoffset() == timedelta(minutes=90)


@pytest.mark.parametrize("zone", ["-0000", ""])
def test_date_without_known_offset_is_utc(zone: str) -> None:
    parsed = parse(lines(f"Date: Sat, 22 Nov 2025 10:00:00 {zone}", "", ""))
    assert parsed.date == datetime(2025, 11, 22, 10, 0, tzinfo=timezone.utc)
    assert parsed.date is not None
    assert parsed.date.tzinfo is timezone.utc


@pytest.mark.parametrize(
    "value",
    ["next tuesday", "", "Sat, 22 Nov 99999 10:00:00 +0000", "Sat, 22 Nov 2025 10:00:00 +9999"],
)
def test_unparseable_date_is_none(value: str) -> None:
    assert parse(lines(f"Date: {value}", "", "")).date is None


def test_missing_date_is_none() -> None:
    assert parse(lines("Subject: x", "", "")).date is None


# --- attachments ---------------------------------------------------------------


def test_attachment_is_described() -> None:
    parsed = parse(with_attachments((b"%PDF-1.4 data", "application", "pdf", "report.pdf")))
    assert parsed.text == "Hello.\n"
    assert parsed.attachments == (
        Attachment(
            index=0,
            filename="report.pdf",
            content_type="application/pdf",
            size=13,
            content_id=None,
            inline=False,
        ),
    )


def test_inline_image_has_content_id_and_is_inline() -> None:
    message = text_message()
    message.add_alternative("<p><img src='cid:logo@example.test'></p>", subtype="html")
    parts = message.get_payload()
    assert isinstance(parts, list)
    html_part = parts[1]
    assert isinstance(html_part, EmailMessage)
    html_part.add_related(b"\x89PNG", "image", "png", cid="<logo@example.test>")
    parsed = parse(message.as_bytes())
    assert parsed.html is not None
    assert parsed.attachments == (
        Attachment(
            index=0,
            filename=None,
            content_type="image/png",
            size=4,
            content_id="logo@example.test",
            inline=True,
        ),
    )


def test_attachments_are_indexed_in_document_order() -> None:
    raw = with_attachments(
        (b"one", "application", "octet-stream", "1.bin"),
        (b"two", "image", "gif", "2.gif"),
        (b"three", "application", "zip", "3.zip"),
    )
    attachments = parse(raw).attachments
    assert [(a.index, a.filename) for a in attachments] == [
        (0, "1.bin"),
        (1, "2.gif"),
        (2, "3.zip"),
    ]


def test_content_type_is_lowercased() -> None:
    raw = lines(
        "Content-Type: multipart/mixed; boundary=b",
        "",
        "--b",
        "Content-Type: Application/PDF",
        "",
        "x",
        "--b--",
        "",
    )
    assert parse(raw).attachments[0].content_type == "application/pdf"


def test_rfc2231_filename_is_decoded() -> None:
    raw = with_attachments((b"x", "application", "pdf", "résumé.pdf"))
    assert b"filename*=utf-8''r%C3%A9sum%C3%A9.pdf" in raw
    assert parse(raw).attachments[0].filename == "résumé.pdf"


def test_rfc2231_filename_with_wrong_charset_falls_back() -> None:
    raw = lines(
        "Content-Type: application/pdf",
        "Content-Disposition: attachment; filename*=no-such-charset''r%C3%A9sum%C3%A9.pdf",
        "",
        "x",
    )
    assert parse(raw).attachments[0].filename == "résumé.pdf"


def test_rfc2047_filename_is_decoded() -> None:
    raw = lines(
        "Content-Type: application/pdf",
        'Content-Disposition: attachment; filename="=?utf-8?q?r=C3=A9sum=C3=A9.pdf?="',
        "",
        "x",
    )
    assert parse(raw).attachments[0].filename == "résumé.pdf"


def test_raw_utf8_filename_is_decoded() -> None:
    raw = lines(
        'Content-Type: application/pdf; name="résumé.pdf"',
        'Content-Disposition: attachment; filename="résumé.pdf"',
        "",
        "x",
    )
    assert parse(raw).attachments[0].filename == "résumé.pdf"


def test_content_type_name_is_a_filename() -> None:
    raw = lines("Content-Type: application/pdf; name=invoice.pdf", "", "x")
    assert parse(raw).attachments[0].filename == "invoice.pdf"


def test_path_like_filename_is_kept_as_a_plain_string() -> None:
    parsed = parse(with_attachments((b"root", "text", "plain", "../../etc/passwd")))
    assert parsed.attachments[0].filename == "../../etc/passwd"
    assert parsed.text == "Hello.\n"


def test_content_type_name_star_without_value_does_not_raise() -> None:
    parsed = parse(lines("Content-Type: text/plain; name*", "", "hi"))
    assert parsed.text == "hi"
    assert parsed.attachments == ()


def test_text_part_with_attachment_disposition_is_not_the_body() -> None:
    raw = lines(
        "Content-Type: multipart/mixed; boundary=b",
        "",
        "--b",
        "Content-Type: text/plain",
        "Content-Disposition: attachment",
        "",
        "notes",
        "--b",
        "Content-Type: text/plain",
        "",
        "the body",
        "--b--",
        "",
    )
    parsed = parse(raw)
    assert parsed.text == "the body"
    assert [(a.content_type, a.filename, a.size) for a in parsed.attachments] == [
        ("text/plain", None, 5)
    ]


def test_second_text_part_is_an_attachment() -> None:
    raw = lines(
        "Content-Type: multipart/mixed; boundary=b",
        "",
        "--b",
        "Content-Type: text/plain",
        "",
        "first",
        "--b",
        "Content-Type: text/plain",
        "",
        "second",
        "--b--",
        "",
    )
    parsed = parse(raw)
    assert parsed.text == "first"
    assert [a.content_type for a in parsed.attachments] == ["text/plain"]


INNER = lines(
    "From: inner@example.test",
    "Subject: inner",
    "Content-Type: multipart/mixed; boundary=inner",
    "",
    "--inner",
    "Content-Type: text/plain",
    "",
    "Inner body https://inner.example.test/",
    "--inner",
    "Content-Type: application/pdf",
    "Content-Disposition: attachment; filename=inner.pdf",
    "",
    "pdf",
    "--inner--",
)
WITH_RFC822 = lines(
    "From: outer@example.test",
    "Content-Type: multipart/mixed; boundary=outer",
    "",
    "--outer",
    "Content-Type: text/plain",
    "",
    "Outer body",
    "--outer",
    "Content-Type: message/rfc822",
    "",
    INNER,
    "--outer--",
    "",
)


def test_message_rfc822_is_one_attachment_not_descended_into() -> None:
    parsed = parse(WITH_RFC822)
    assert parsed.text == "Outer body"
    assert parsed.links == ()
    assert [(a.content_type, a.filename) for a in parsed.attachments] == [("message/rfc822", None)]


def test_message_rfc822_payload_is_the_embedded_message() -> None:
    attachment, data = attachment_payload(WITH_RFC822, 0)
    # Re-serialised by the email package, which ends it with a line break.
    assert data.rstrip(b"\r\n") == INNER
    assert attachment.size == len(data)
    inner = parse(data)
    assert (inner.subject, inner.text) == ("inner", "Inner body https://inner.example.test/")


def test_bad_base64_is_decoded_leniently() -> None:
    raw = lines(
        "Content-Type: application/octet-stream",
        "Content-Transfer-Encoding: base64",
        "",
        "QUJD!!R",
    )
    attachment, data = attachment_payload(raw, 0)
    assert data == b"ABC"
    assert attachment.size == 3
    assert parse(raw).attachments == (attachment,)


def test_bad_base64_text_body_does_not_raise() -> None:
    raw = lines("Content-Transfer-Encoding: base64", "", "aGVsbG8*")
    assert parse(raw).text == "hello"


def test_multipart_without_boundary_is_served_as_text() -> None:
    parsed = parse(lines("Content-Type: multipart/mixed", "", "hello"))
    assert parsed.text == "hello"
    assert parsed.attachments == ()


def test_an_empty_multipart_that_cannot_be_split_is_no_body() -> None:
    # Real mail: a multipart/alternative reusing its parent's boundary, so that its
    # text and HTML parts become its parent's.
    raw = lines(
        'Content-Type: multipart/mixed; boundary="b"',
        "",
        "--b",
        'Content-Type: multipart/alternative; boundary="b"',
        "",
        "--b",
        "Content-Type: text/plain",
        "",
        "the text",
        "--b",
        "Content-Type: text/html",
        "",
        "<p>the html</p>",
        "--b--",
        "",
    )
    parsed = parse(raw)
    assert (parsed.text, parsed.html) == ("the text", "<p>the html</p>")
    assert parsed.attachments == ()
    assert parsed.defects == ("multipart whose boundary never occurs in part 1",)


def nested(depth: int) -> bytes:
    head = [
        f"Content-Type: multipart/mixed; boundary=b{level}\r\n\r\n--b{level}"
        for level in range(depth)
    ]
    tail = [f"--b{level}--" for level in reversed(range(depth))]
    return lines("Subject: deep", *head, "Content-Type: text/plain", "", "deep 123456", *tail, "")


def test_sixty_nested_multiparts_find_the_text() -> None:
    parsed = parse(nested(60))
    assert parsed.text == "deep 123456"
    assert parsed.attachments == ()


def test_nesting_too_deep_for_the_parser_keeps_headers_and_body() -> None:
    # Time enough to reach the depth where the parser gives up (about 0.4 s).
    parsed = parse_message(nested(3000), budget=30)
    assert_json_safe(parsed)
    assert parsed.subject == "deep"
    assert parsed.text is not None
    assert "deep 123456" in parsed.text
    assert parsed.defects == ("nested too deeply to parse: the body is served as one text part",)


def test_nesting_too_deep_to_read_in_time_keeps_headers() -> None:
    started = time.perf_counter()
    parsed = parse_message(nested(3000), budget=0.01)
    assert time.perf_counter() - started < 1
    assert_json_safe(parsed)
    assert parsed.subject == "deep"
    assert parsed.defects[0].startswith("parse budget of 0.01 s exceeded: message read only to")


def many_parts(count: int) -> bytes:
    parts = [
        f"--b\r\nContent-Type: application/octet-stream\r\n"
        f"Content-Disposition: attachment; filename=f{index}.bin\r\n\r\n{index}"
        for index in range(count)
    ]
    return lines("Content-Type: multipart/mixed; boundary=b", "", *parts, "--b--", "")


def test_two_thousand_parts_are_all_attachments() -> None:
    attachments = parse(many_parts(2000)).attachments
    assert len(attachments) == 2000
    assert attachments[1999] == Attachment(
        index=1999,
        filename="f1999.bin",
        content_type="application/octet-stream",
        size=4,
        content_id=None,
        inline=False,
    )


def test_attachment_payload_gives_decoded_bytes() -> None:
    data = bytes(range(256))
    raw = with_attachments(
        (b"first", "application", "octet-stream", "a.bin"),
        (data, "application", "octet-stream", "b.bin"),
    )
    attachment, payload = attachment_payload(raw, 1)
    assert payload == data
    assert attachment == parse(raw).attachments[1]


@pytest.mark.parametrize("index", [1, 2, -1])
def test_attachment_payload_out_of_range_raises(index: int) -> None:
    raw = with_attachments((b"only", "application", "octet-stream", "a.bin"))
    with pytest.raises(AttachmentNotFound):
        attachment_payload(raw, index)


def test_attachment_payload_of_message_without_attachments_raises() -> None:
    with pytest.raises(AttachmentNotFound):
        attachment_payload(text_message().as_bytes(), 0)


def _served_type(content_type: str) -> str:
    raw = lines(
        'Content-Type: multipart/mixed; boundary="b"',
        "",
        "--b",
        "Content-Type: text/plain",
        "",
        "body",
        "--b",
        f"Content-Type: {content_type}",
        "Content-Disposition: attachment",
        "",
        "data",
        "--b--",
        "",
    )
    attachment, served, payload = served_attachment(raw, 0)
    assert payload.rstrip() == b"data"
    assert attachment == parse(raw).attachments[0]
    return served


@pytest.mark.parametrize(
    ("content_type", "served"),
    [
        ("text/csv; charset=windows-1252", "text/csv; charset=windows-1252"),
        ("text/csv", "text/csv"),
        ('Text/Plain; Format=flowed; charset="UTF-8"', "text/plain; format=flowed; charset=UTF-8"),
        ('application/pdf; name="report.pdf"', "application/pdf"),
        ("text/plain; charset*=utf-8''iso-8859-15", "text/plain; charset=iso-8859-15"),
        ('text/plain; title="a \\"b\\"; c"', 'text/plain; title="a \\"b\\"; c"'),
        ('text/plain; title="caf\u00e9"; charset=utf-8', "text/plain; charset=utf-8"),
        ("text/plain; charset=utf-8; charset=latin-1; flag", "text/plain; charset=utf-8"),
        ("text/plain; x=" + "y" * 2000 + "; charset=utf-8", "text/plain"),
        ("multipart/mixed; charset=utf-8", "text/plain"),  # no boundary: served as text
        ("application/x y", "application/octet-stream"),
    ],
)
def test_an_attachment_is_served_with_its_own_type_and_parameters(
    content_type: str, served: str
) -> None:
    assert _served_type(content_type) == served


# --- links ---------------------------------------------------------------------


def test_links_are_found_in_text() -> None:
    parsed = parse(text_message("Go to https://example.test/a?b=1 now\n").as_bytes())
    assert parsed.links == ("https://example.test/a?b=1",)


def test_trailing_punctuation_is_not_part_of_a_link() -> None:
    body = (
        "See https://example.test/a, then (https://example.test/b). "
        "Really: https://example.test/c! <https://example.test/d> "
        '"https://example.test/e" https://example.test/f?'
    )
    assert parse(text_message(body).as_bytes()).links == tuple(
        f"https://example.test/{name}" for name in "abcdef"
    )


def test_balanced_parentheses_stay_in_a_link() -> None:
    body = "Read https://example.test/wiki/Foo_(bar)."
    assert parse(text_message(body).as_bytes()).links == ("https://example.test/wiki/Foo_(bar)",)


def test_html_links_have_entities_decoded() -> None:
    raw = lines(
        "Content-Type: text/html",
        "",
        '<a href="https://example.test/?a=1&amp;b=2">x</a>'
        "<map><area href='https://example.test/area'></map>",
    )
    assert parse(raw).links == ("https://example.test/?a=1&b=2", "https://example.test/area")


def test_only_http_and_https_links_are_kept() -> None:
    raw = lines(
        "Content-Type: text/html",
        "",
        '<a href="mailto:a@example.test">m</a><a href="javascript:alert(1)">j</a>'
        '<a href="ftp://example.test/f">f</a><a href="/relative">r</a><a href="#top">t</a>'
        '<a href="HTTP://EXAMPLE.TEST/upper">u</a><a>no href</a>',
    )
    assert parse(raw).links == ("HTTP://EXAMPLE.TEST/upper",)


def test_whitespace_around_and_inside_an_href_is_dropped() -> None:
    raw = lines("Content-Type: text/html", "", '<a href="\n  https://x.test/wra\r\npped  ">w</a>')
    assert parse(raw).links == ("https://x.test/wrapped",)


def test_links_are_deduplicated_in_order_text_first() -> None:
    message = text_message("https://example.test/1 https://example.test/2 https://example.test/1")
    message.add_alternative(
        '<a href="https://example.test/2">2</a><a href="https://example.test/3">3</a>',
        subtype="html",
    )
    assert parse(message.as_bytes()).links == (
        "https://example.test/1",
        "https://example.test/2",
        "https://example.test/3",
    )


def test_links_in_html_comments_and_scripts_are_ignored() -> None:
    raw = lines(
        "Content-Type: text/html",
        "",
        '<!-- <a href="https://example.test/comment">c</a> -->'
        "<script>document.write('<a href=\"https://example.test/script\">')</script>"
        '<a href="https://example.test/real">r</a>',
    )
    assert parse(raw).links == ("https://example.test/real",)


def test_broken_html_still_gives_its_links() -> None:
    raw = lines(
        "Content-Type: text/html",
        "",
        '<a href="https://example.test/ok">ok</a><a href="https://example.test/broken',
        "<![if foo <p>unclosed",
    )
    assert parse(raw).links == ("https://example.test/ok",)


# --- codes ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "codes"),
    [
        ("Your code is 123456", ("123456",)),
        ("Code: AB12CD", ("AB12CD",)),
        ("PIN: 4821.", ("4821",)),
        ("G-123456 is your verification code", ("123456",)),
        ("Use 12345678 or X7Y8Z9W0", ("12345678", "X7Y8Z9W0")),
        ("(123456) then 123456 again", ("123456",)),
    ],
)
def test_codes_are_found(body: str, codes: tuple[str, ...]) -> None:
    assert parse(text_message(body).as_bytes()).codes == codes


@pytest.mark.parametrize(
    "body",
    [
        "HELLO",
        "123",
        "2026-11-22",
        "https://x.test/reset/987654",
        "see x.test/reset/987654",
        "mail user123456@example.test",
        "pi is 3.14159",
        "1,000,000 people",
        "at 12:30:45",
        "call 555-123-4567",
        "123456789 has nine digits",
        "abc123456 touches letters",
        "lowercase ab12cd",
        "AB12C is too short",
        "ORDER-AB12CD is an identifier",
        "on 11/22/2026",
        "© 2026 Example Inc.",
        "(c) 2020 \u2013 2026 Example Inc.",
        "Sent on Nov 22, 2026",
        "Sent on 22 November 2026",
        "costs $1234",
    ],
)
def test_non_codes_are_not_found(body: str) -> None:
    assert parse(text_message(body).as_bytes()).codes == ()


def test_subject_codes_come_before_body_codes() -> None:
    raw = text_message("body has 222222", Subject="subject has 111111").as_bytes()
    assert parse(raw).codes == ("111111", "222222")


def test_codes_come_from_visible_html_without_a_text_part() -> None:
    raw = lines(
        "Content-Type: text/html",
        "",
        "<html><head><title>Code 111111</title><style>.a{width:222222px}</style></head>"
        "<body><p>Your code:</p><table><tr><td>1234</td><td>5678</td></tr></table>"
        "<p><b>834201</b></p><script>var x = 333333;</script></body></html>",
    )
    # Most likely first: 1234 follows "Your code:" on its own line; 834201 is alone
    # on its line and bold; 5678 is only alone on its line.
    assert parse(raw).codes == ("1234", "834201", "5678")


def test_html_text_keeps_stray_brackets_and_decodes_entities() -> None:
    raw = lines("Content-Type: text/html", "", "<p>if a < b:</p><p>code&nbsp;<i>A1B2C3</i></p>")
    assert parse(raw).codes == ("A1B2C3",)


def test_codes_ignore_html_when_there_is_a_text_part() -> None:
    message = text_message("No code here.\n")
    message.add_alternative("<p>123456</p>", subtype="html")
    assert parse(message.as_bytes()).codes == ()


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


# --- the time budget ---------------------------------------------------------------


def test_empty_message_is_fast_and_has_no_defects() -> None:
    started = time.perf_counter()
    parsed = parse(b"")
    assert time.perf_counter() - started < 0.05
    assert parsed.defects == ()
    assert parsed.text == ""


def test_well_formed_message_has_no_defects() -> None:
    message = text_message("Hi https://example.test/a 654321\n", Subject="Grüße")
    message.add_alternative("<p><a href='https://example.test/b'>b</a></p>", subtype="html")
    message.add_attachment(b"%PDF", maintype="application", subtype="pdf", filename="é.pdf")
    assert parse(message.as_bytes()).defects == ()


def test_tiny_budget_on_two_thousand_parts_returns_quickly_with_a_budget_defect() -> None:
    raw = many_parts(2000)
    started = time.perf_counter()
    parsed = parse_message(raw, budget=1e-6)
    assert time.perf_counter() - started < 0.5
    assert_json_safe(parsed)
    assert len(parsed.attachments) < 2000
    first_lines = raw.find(b"\n", 4095) + 1  # it is fed whole lines at a time
    assert parsed.defects[0].startswith(
        f"parse budget of 1e-06 s exceeded: message read only to byte {first_lines:,} of"
        f" {len(raw):,} (reading it may take half the budget); "
    )


@pytest.mark.parametrize("budget", [0.0, -1.0, float("nan"), 1e-9])
def test_any_budget_is_accepted(budget: float) -> None:
    parsed = parse_message(many_parts(50), budget=budget)
    assert_json_safe(parsed)
    assert parsed.defects[0].startswith("parse budget of ")


def test_at_most_max_attachments_are_listed() -> None:
    raw = many_parts(parsing.MAX_ATTACHMENTS + 1)
    parsed = parse(raw)  # the cap, not the clock
    assert len(parsed.attachments) == parsing.MAX_ATTACHMENTS == 2000
    assert parsed.defects == ("more than 2,000 attachments: attachments after #2,000 not listed",)
    assert attachment_payload(raw, 1999, budget=30)[0] == parsed.attachments[1999]
    with pytest.raises(AttachmentNotFound, match="only the first 2,000 are listed"):
        attachment_payload(raw, 2000, budget=30)


def test_out_of_time_headers_are_cut_but_the_served_ones_are_still_read() -> None:
    raw = lines(
        "X-One: 1", "X-Two: 2", "From: Alice <alice@example.test>", "Subject: =?utf-8?q?caf=C3=A9?="
    )
    parsed = parse_message(raw + b"\r\n\r\nbody", budget=0)
    assert parsed.defects[0] == (
        "parse budget of 0 s exceeded: headers after #0 not listed, but for from, to, cc,"
        " reply-to, subject, date, message-id; links and codes not searched"
    )
    assert parsed.headers == {"from": ("Alice <alice@example.test>",), "subject": ("café",)}
    assert parsed.sender == Address("Alice", "alice@example.test")
    assert parsed.subject == "café"
    assert parsed.text == "body"  # a body once found is always decoded
    assert parsed.links == parsed.codes == ()


def test_out_of_time_parts_are_not_listed() -> None:
    raw = with_attachments((b"a", "application", "pdf", "a.pdf"), (b"b", "image", "png", "b.png"))
    parsed = parse_message(raw, budget=0)
    assert parsed.attachments == ()
    assert "attachments after #0 not listed" in parsed.defects[0].split("; ")


class _LateClock:
    """A clock for the reading loop alone: it is always past the reading deadline."""

    @staticmethod
    def monotonic() -> float:
        return time.monotonic() + 1e6


@pytest.mark.parametrize(
    "cut", [b"\r\n--b\r\n", b"octet-stream\r\n", b"f41.bin\r\n", b"\r\n\r\n41\r\n"]
)
def test_a_part_cut_short_by_the_reading_deadline_is_not_listed(
    cut: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    raw = many_parts(500)
    read = raw.index(cut, 3000) + len(cut)
    # Reading stops after its first chunk, which ends right after ``cut``.
    monkeypatch.setattr(parsing, "time", _LateClock)
    monkeypatch.setattr(parsing, "_FEED_CHUNK", read - 1)
    parsed = parse_message(raw, budget=30)
    assert parsed.defects[0].startswith(
        f"parse budget of 30 s exceeded: message read only to byte {read:,} of {len(raw):,}"
    )
    # Every part whose end was read is listed, in full; the part being read is not.
    finished = raw[:read].count(b"\r\n--b\r\n") - 1
    assert finished > 20
    assert [a.filename for a in parsed.attachments] == [f"f{i}.bin" for i in range(finished)]
    assert [a.size for a in parsed.attachments] == [len(str(i)) for i in range(finished)]


def test_a_text_body_cut_short_by_the_reading_deadline_is_served_in_part(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    text = "".join(f"line {i}\n" for i in range(2000))
    message = text_message(text)
    message.add_attachment(b"%PDF", maintype="application", subtype="pdf", filename="a.pdf")
    raw = message.as_bytes()
    monkeypatch.setattr(parsing, "time", _LateClock)
    parsed = parse_message(raw, budget=30)
    assert parsed.defects[0].startswith("parse budget of 30 s exceeded: message read only to")
    assert parsed.text is not None
    assert parsed.text.startswith("line 0\nline 1\n")
    assert 100 < len(parsed.text) < len(text) - 100
    assert parsed.attachments == ()


def test_out_of_time_encoded_words_are_served_undecoded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parsing, "_FEED_CHUNK", 1 << 30)  # read it all, then run out of time
    raw = b"Subject: " + b"=?utf-8?q?a?= " * 3000 + b"\r\n\r\n"
    parsed = parse_message(raw, budget=0)
    assert "encoded words in header 'Subject' decoded only in part" in parsed.defects[0]
    assert parsed.subject.startswith("a" * 1023 + " =?utf-8?q?a?=")


def test_out_of_time_unencoded_encoded_words_are_served_as_they_are(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(parsing, "_FEED_CHUNK", 1 << 30)  # read it all, then run out of time
    raw = b"Subject: " + b"=?utf-8?q?a b?= " * 3000 + b"\r\n\r\n"
    parsed = parse_message(raw, budget=0)
    assert "encoded words in header 'Subject' decoded only in part" in parsed.defects[0]
    assert parsed.subject.startswith("a b a b")
    assert parsed.subject.endswith("=?utf-8?q?a b?=")


def test_out_of_time_long_address_header_is_read_in_part(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parsing, "_FEED_CHUNK", 1 << 30)  # read it all, then run out of time
    to = ", ".join(f"user{index}@example.test" for index in range(3000))
    raw = lines(f"To: {to}", "", "")
    full = parse(raw)
    assert len(full.to) == 3000
    assert full.defects == ()
    cut = parse_message(raw, budget=0)
    assert 0 < len(cut.to) < 3000  # the first piece, a few KiB, is always read
    assert cut.to == full.to[: len(cut.to)]
    assert f"addresses in header 'To' after the first {len(cut.to):,} not read" in cut.defects[0]


def test_links_and_codes_cut_by_the_clock_are_said_to_be_incomplete(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def slow_links(text: str, *, deadline: float | None = None) -> list[str]:
        time.sleep(0.02)
        return []

    monkeypatch.setattr(parsing, "text_links", slow_links)
    parsed = parse_message(text_message("code 123456").as_bytes(), budget=0.01)
    assert parsed.defects == ("parse budget of 0.01 s exceeded: links and codes may be incomplete",)


@pytest.mark.parametrize(
    ("function", "text"),
    [
        (_extract.text_links, " ".join(f"https://x.test/{index}" for index in range(1000))),
        (
            _html.html_links,
            "".join(f'<a href="https://x.test/{index}">' for index in range(1000)),
        ),
        (
            functools.partial(_codes.find_codes, ""),
            " ".join(f"{index:06d}" for index in range(1000)),
        ),
    ],
)
def test_extraction_stops_at_its_deadline(function: Any, text: str) -> None:
    assert len(function(text)) == 1000
    assert len(function(text, deadline=time.monotonic() + 60)) == 1000
    assert 0 < len(function(text, deadline=0.0)) < 1000


def test_only_the_first_mebibyte_of_a_body_is_searched() -> None:
    body = "https://x.test/early 111111 " + "x " * (1 << 19) + "https://x.test/late 222222"
    parsed = parse(text_message(body).as_bytes())
    assert parsed.links == ("https://x.test/early",)
    assert parsed.codes == ("111111",)
    assert parsed.defects == (
        "the text body over 1 MiB: links and codes searched in its first 1 MiB only",
    )


def test_huge_messages_parse_within_about_the_budget() -> None:
    mib = 1 << 20
    for raw in (
        b"Content-Type: multipart/mixed; boundary=b\r\n\r\n" + b"--b\r\n\r\n\r\n" * (mib // 9),
        b"X: a\r\n" * (mib // 6) + b"\r\n",
        b"Subject: " + b"\r\n a\xe9" * (mib // 5) + b"\r\n\r\n",
        b"To: " + b"\r\n a@b," * (mib // 7) + b"\r\n\r\n",
        b'Content-Type: text/plain; a="' + b"\r\n ;;;;;" * (mib // 8) + b'"\r\n\r\nx',
        b"Content-Type: text/plain; charset=punycode\r\n\r\n" + b"a" * mib,
        b"Subject: x\r\n\r\n" + b"AB12CD 1234 " * (mib // 12),
    ):
        started = time.perf_counter()
        parsed = parse_message(raw)  # the default budget
        assert time.perf_counter() - started < 2, raw[:40]
        assert_json_safe(parsed)


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


# --- the shortcut for the usual message ------------------------------------------
# That it parses as the full parser does is a property test (tests/test_properties.py).


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
