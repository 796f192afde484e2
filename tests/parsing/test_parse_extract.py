"""The links and one-time codes found in a parsed message's bodies."""

from __future__ import annotations

import pytest

from .parse_support import (
    lines,
    parse,
    text_message,
)

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
