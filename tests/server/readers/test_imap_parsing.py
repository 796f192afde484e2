"""The IMAP server's pure parts: arguments, sequence sets, MIME sections, BODYSTRUCTURE."""

from __future__ import annotations

import pytest

from pytest_tempinbox.server.readers.imap.fetch import parse_items
from pytest_tempinbox.server.readers.imap.mime import header_fields, parse_part
from pytest_tempinbox.server.readers.imap.structure import body_structure, envelope
from pytest_tempinbox.server.readers.imap.tokens import (
    BadSyntax,
    parse_sequence_set,
    resolve,
    tokenize,
)

MULTIPART = (
    b"From: Ann <ann@example.com>\r\nTo: bob@example.com\r\nSubject: Hi\r\n"
    b'Content-Type: multipart/mixed; boundary="b1"\r\n\r\n'
    b"preamble\r\n--b1\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nhello\r\nworld\r\n"
    b"--b1\r\nContent-Type: application/pdf\r\n"
    b'Content-Disposition: attachment; filename="a.pdf"\r\n'
    b"Content-Transfer-Encoding: base64\r\n\r\nJVBERi0=\r\n--b1--\r\n"
)


def test_atoms_strings_literals_and_lists_are_read_apart() -> None:
    assert tokenize(b'a "b c" {3}\r\nxyz (d (e))') == ["a", b"b c", b"xyz", ["d", ["e"]]]


def test_a_body_section_with_a_field_list_is_one_atom() -> None:
    assert tokenize(b"1:* (UID BODY.PEEK[HEADER.FIELDS (FROM TO)]<0.10>)") == [
        "1:*",
        ["UID", "BODY.PEEK[HEADER.FIELDS (FROM TO)]<0.10>"],
    ]


@pytest.mark.parametrize("data", [b"(a", b"a)", b'"open', b"BODY[1", b"\xff", b'"\\x"'])
def test_malformed_arguments_are_bad_syntax(data: bytes) -> None:
    with pytest.raises(BadSyntax):
        tokenize(data)


def test_sequence_sets_resolve_the_star_to_the_largest() -> None:
    assert resolve(parse_sequence_set("1:3,5,7:*"), 9) == [(1, 3), (5, 5), (7, 9)]


@pytest.mark.parametrize("text", ["0", "1:", "a", "1,,2", "99999999999"])
def test_bad_sequence_sets_are_refused(text: str) -> None:
    with pytest.raises(BadSyntax):
        parse_sequence_set(text)


def test_a_uid_fetch_answers_with_the_uid_first() -> None:
    items = parse_items(["BODY.PEEK[]"], by_uid=True)
    assert [item.label for item in items] == ["UID", "BODY[]"]


def test_multipart_parts_are_slices_of_the_raw_message() -> None:
    tree = parse_part(MULTIPART)
    first = tree.find([1])
    second = tree.find([2])
    assert first is not None
    assert second is not None
    assert first.body == b"hello\r\nworld"
    assert second.body == b"JVBERi0="
    assert tree.find([3]) is None


def test_header_fields_keep_the_named_ones_and_a_blank_line() -> None:
    header = parse_part(MULTIPART).header
    assert header_fields(header, {"subject", "from"}, keep=True) == (
        b"From: Ann <ann@example.com>\r\nSubject: Hi\r\n\r\n"
    )


def test_bodystructure_names_each_part_and_the_attachment() -> None:
    structure = body_structure(parse_part(MULTIPART), extended=True)
    assert structure.startswith(b'(("TEXT" "PLAIN" ("CHARSET" "utf-8") NIL NIL "7BIT" 12 2 ')
    assert b'("ATTACHMENT" ("FILENAME" "a.pdf"))' in structure
    assert b'"MIXED" ("BOUNDARY" "b1")' in structure


def test_envelope_lists_addresses_as_name_route_mailbox_host() -> None:
    text = envelope(parse_part(MULTIPART))
    assert text == (
        b'(NIL "Hi" (("Ann" NIL "ann" "example.com")) (("Ann" NIL "ann" "example.com"))'
        b' (("Ann" NIL "ann" "example.com")) ((NIL NIL "bob" "example.com")) NIL NIL NIL NIL)'
    )
