"""A nested multipart that reuses its parent's boundary: every part is kept.

The shape is mail-parser's ``mail_malformed_1`` (in ``tests/corpus/parsing/``), a
webmail's ``multipart/mixed`` whose ``multipart/alternative`` has the same
boundary, followed by a ZIP archive; here the archive is one the test makes.
"""

from __future__ import annotations

import base64
import email
import io
import zipfile

from pytest_tempinbox.parsing.message import attachment_payload

from .parse_support import lines, parse

BOUNDARY = "----=Part_0118260_79300441.9934604411926"


def harmless_zip() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("photo.txt", "not a photo, and nothing to run")
    return buffer.getvalue()


def reused_boundary_mail(*after_alternative: str, close_alternative: bool = True) -> bytes:
    """mail_malformed_1's structure: mixed(B)[alternative(B)[text, html], *after_alternative]."""
    return lines(
        "From: <sender@example.test>",
        "Subject: immagine",
        "MIME-Version: 1.0",
        f'Content-Type: multipart/mixed;\r\n        boundary="{BOUNDARY}"',
        "",
        f"--{BOUNDARY}",
        f'Content-Type: multipart/alternative;\r\n boundary="{BOUNDARY}"',
        "",
        f"--{BOUNDARY}",
        'Content-Type: text/plain;\r\n\tcharset="utf-8"',
        "Content-Transfer-Encoding: quoted-printable",
        "",
        "--Sent from my iPhone",
        f"--{BOUNDARY}",
        'Content-Type: text/html;\r\n\tcharset="utf-8"',
        "Content-Transfer-Encoding: quoted-printable",
        "",
        '<div><font size=3D"2">--Sent from my iPhone</font></div>',
        "",
        *([f"--{BOUNDARY}--", ""] if close_alternative else []),
        *after_alternative,
        f"--{BOUNDARY}--",
        "",
    )


def zip_part() -> tuple[str, ...]:
    encoded = base64.encodebytes(harmless_zip()).decode().rstrip("\n")
    return (
        f"--{BOUNDARY}",
        'Content-Type: application/zip; name="20160523_916527.jpg_.zip"',
        "Content-Transfer-Encoding: base64",
        "Content-ID: <002801d1b5bd$8889be70$6900a8c0@NIKX7058>",
        "",
        *encoded.split("\n"),
        "",
    )


def test_the_email_package_alone_leaves_the_part_after_the_early_close_unread() -> None:
    # Why the regrouping exists: the zip lands in the outer multipart's epilogue.
    message = email.message_from_bytes(reused_boundary_mail(*zip_part()))
    payload = message.get_payload()
    assert isinstance(payload, list)
    assert [part.get_content_type() for part in payload if not isinstance(part, str)] == [
        "multipart/alternative",
        "text/plain",
        "text/html",
    ]
    assert "application/zip" in (message.epilogue or "")


def test_text_and_html_are_the_alternatives() -> None:
    parsed = parse(reused_boundary_mail(*zip_part()))
    assert parsed.text == "--Sent from my iPhone"
    assert parsed.html == '<div><font size="2">--Sent from my iPhone</font></div>\n'


def test_the_part_after_the_alternative_is_an_attachment() -> None:
    parsed = parse(reused_boundary_mail(*zip_part()))
    assert [(a.filename, a.content_type, a.content_id) for a in parsed.attachments] == [
        ("20160523_916527.jpg_.zip", "application/zip", "002801d1b5bd$8889be70$6900a8c0@NIKX7058")
    ]
    assert parsed.defects == ("multipart whose boundary never occurs in part 1",)


def test_the_attachment_is_served_whole() -> None:
    attachment, data = attachment_payload(reused_boundary_mail(*zip_part()), 0)
    assert data == harmless_zip()
    assert attachment.size == len(data)


def test_two_parts_after_the_alternative_are_both_kept() -> None:
    note = (f"--{BOUNDARY}", 'Content-Type: text/plain; name="note.txt"', "", "a note", "")
    parsed = parse(reused_boundary_mail(*zip_part(), *note))
    assert [a.filename for a in parsed.attachments] == ["20160523_916527.jpg_.zip", "note.txt"]


def test_an_alternative_never_closed_keeps_the_part_after_it() -> None:
    # One closing line for both: the zip reads as the alternative's third part,
    # and is still listed.
    parsed = parse(reused_boundary_mail(*zip_part(), close_alternative=False))
    assert parsed.text == "--Sent from my iPhone"
    assert [a.filename for a in parsed.attachments] == ["20160523_916527.jpg_.zip"]


def test_an_empty_multipart_that_cannot_be_split_is_no_body() -> None:
    # The alternative reusing its parent's boundary, and nothing after it.
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
