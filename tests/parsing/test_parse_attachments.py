"""The attachments of a parsed message: how each is described, and how it is served."""

from __future__ import annotations

import time
from email.message import EmailMessage

import pytest

from pytest_tempinbox.errors import AttachmentNotFound
from pytest_tempinbox.models import Attachment
from pytest_tempinbox.parsing.message import (
    attachment_payload,
    parse_message,
    served_attachment,
)

from .parse_support import (
    assert_json_safe,
    lines,
    many_parts,
    nested,
    parse,
    text_message,
    with_attachments,
)

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


@pytest.mark.parametrize(
    ("encoded", "decoded"),
    [
        ("begin 644 f.txt\r\n#86)C\r\n`\r\nend\r\n", b"abc"),
        ("begin 644 f.txt\r\n#86)C\r\n", b"abc"),  # no "end": Python 3.10 gave up
        ("begin 644 f.txt\r\n#86)C\r\n\r\n", b"begin 644 f.txt\r\n#86)C\r\n\r\n"),  # cut short
        ("no begin line\r\n", b"no begin line\r\n"),
    ],
)
def test_a_uuencoded_attachment_reads_the_same_on_every_python(
    encoded: str, decoded: bytes
) -> None:
    raw = lines(
        "Content-Type: application/octet-stream",
        "Content-Disposition: attachment; filename=f.txt",
        "Content-Transfer-Encoding: x-uuencode",
        "",
        encoded,
    )
    (attachment,) = parse(raw).attachments
    assert served_attachment(raw, 0)[2] == decoded
    assert attachment.size == len(decoded)
