"""The headers of a parsed message: encoded words, addresses, dates, the header map."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from email.utils import getaddresses

import pytest

from pytest_tempinbox.models import Address

from .parse_support import (
    lines,
    parse,
)

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


# What every Python reads, whatever its getaddresses() does: the lenient reading
# it gave before turning strict (3.13, 3.12.6, 3.11.10, 3.10.15), where these
# give no address at all (docs/api.md, "How addresses are read").
@pytest.mark.parametrize(
    ("header", "emails"),
    [
        (
            "a@example.test <b@example.test> <c@example.test>",
            ["a@example.test", "b@example.test", "c@example.test"],
        ),
        (
            "a@example.test <b@example.test> c@example.test",
            ["a@example.test", "b@example.test", "c@example.test"],
        ),
        ("a@example.test <b@example.test", ["a@example.test", "b@example.test"]),
        ("a@example.test <>", ["a@example.test"]),
        ("<b@example.test>; <a@example.test>", ["b@example.test", "a@example.test"]),
        ("Bob <b@example.test> (c) <d@example.test>", ["b@example.test", "d@example.test"]),
    ],
)
def test_an_ambiguous_address_list_gives_each_address_it_holds(
    header: str, emails: list[str]
) -> None:
    parsed = parse(lines(f"To: {header}", "", ""))
    assert [address.email for address in parsed.to] == emails
    assert UNQUOTED_NOTE.format("To") not in parsed.defects


def test_an_ambiguous_address_list_keeps_its_names() -> None:
    parsed = parse(lines("To: Bob <b@example.test> (c) <d@example.test>", "", ""))
    assert parsed.to == (
        Address(name="Bob", email="b@example.test"),
        Address(name=None, email="d@example.test"),
    )


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
