"""The parse's time budget: what its clock cuts, and how that is told."""

from __future__ import annotations

import functools
import itertools
import time
from collections.abc import Callable
from typing import Any

import pytest

from pytest_tempinbox.errors import AttachmentNotFound
from pytest_tempinbox.models import Address
from pytest_tempinbox.parsing import codes as _codes
from pytest_tempinbox.parsing import html as _html
from pytest_tempinbox.parsing import message as parsing
from pytest_tempinbox.parsing import parts as _parts
from pytest_tempinbox.parsing import text_links as _extract
from pytest_tempinbox.parsing.budget import ParseRun
from pytest_tempinbox.parsing.message import (
    attachment_payload,
    parse_message,
)

from .parse_support import (
    assert_json_safe,
    lines,
    many_parts,
    parse,
    text_message,
    with_attachments,
)

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


def test_out_of_time_bodies_are_still_served() -> None:
    # On a machine slow enough to spend the whole budget reading the structure,
    # the text and HTML bodies still come; the attachments after them do not.
    message = text_message("Your code is 654321\n")
    message.add_alternative("<p>Your code is <b>654321</b></p>", subtype="html")
    message.add_attachment(b"%PDF", maintype="application", subtype="pdf", filename="a.pdf")
    parsed = parse_message(message.as_bytes(), budget=0)
    assert parsed.text == "Your code is 654321\n"
    assert parsed.html == "<p>Your code is <b>654321</b></p>\n"
    assert parsed.attachments == ()
    assert "attachments after #0 not listed" in parsed.defects[0].split("; ")


def test_bodies_are_looked_for_past_the_clock_only_among_the_first_parts() -> None:
    def parsed_late(raw: bytes) -> _parts.Layout:
        return _parts.sort_parts(_parts.parse_structure(raw, ParseRun(30)), ParseRun(0))

    def body_after(attachments: int) -> bytes:
        parts = [
            f"--b\r\nContent-Disposition: attachment; filename=f{index}.bin\r\n\r\n{index}"
            for index in range(attachments)
        ]
        return lines(
            "Content-Type: multipart/mixed; boundary=b", "", *parts, "--b", "", "body", "--b--", ""
        )

    near = parsed_late(body_after(_parts.PARTS_ANYWAY - 2))
    assert near.text is not None
    assert near.text[0] == str(_parts.PARTS_ANYWAY - 1)
    assert near.attachments == []
    assert near.stopped
    far = parsed_late(body_after(_parts.PARTS_ANYWAY - 1))
    assert far.text is None
    assert far.stopped
    assert len(far.parts) == _parts.PARTS_ANYWAY


def test_a_late_clock_that_leaves_no_attachment_unlisted_says_nothing() -> None:
    message = text_message("Hello\n")
    message.add_alternative("<p>Hello</p>", subtype="html")
    structure = _parts.parse_structure(message.as_bytes(), ParseRun(30))
    layout = _parts.sort_parts(structure, ParseRun(0))
    assert layout.text is not None
    assert layout.html is not None
    assert not layout.stopped


def late_reading_clock() -> Callable[[], float]:
    """A clock that jumps 20 s once the parse has started.

    With a 30 s budget, that is past the reading deadline (half the budget)
    and short of the whole budget.
    """
    readings = itertools.count()
    return lambda: time.monotonic() + (20.0 if next(readings) else 0.0)


@pytest.mark.parametrize(
    "cut", [b"\r\n--b\r\n", b"octet-stream\r\n", b"f41.bin\r\n", b"\r\n\r\n41\r\n"]
)
def test_a_part_cut_short_by_the_reading_deadline_is_not_listed(
    cut: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    raw = many_parts(500)
    read = raw.index(cut, 3000) + len(cut)
    # Reading stops after its first chunk, which ends right after ``cut``.
    monkeypatch.setattr(_parts, "_FEED_CHUNK", read - 1)
    parsed = parse_message(raw, budget=30, clock=late_reading_clock())
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
    parsed = parse_message(raw, budget=30, clock=late_reading_clock())
    assert parsed.defects[0].startswith("parse budget of 30 s exceeded: message read only to")
    assert parsed.text is not None
    assert parsed.text.startswith("line 0\nline 1\n")
    assert 100 < len(parsed.text) < len(text) - 100
    assert parsed.attachments == ()


def test_out_of_time_encoded_words_are_served_undecoded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_parts, "_FEED_CHUNK", 1 << 30)  # read it all, then run out of time
    raw = b"Subject: " + b"=?utf-8?q?a?= " * 3000 + b"\r\n\r\n"
    parsed = parse_message(raw, budget=0)
    assert "encoded words in header 'Subject' decoded only in part" in parsed.defects[0]
    assert parsed.subject.startswith("a" * 1023 + " =?utf-8?q?a?=")


def test_out_of_time_unencoded_encoded_words_are_served_as_they_are(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_parts, "_FEED_CHUNK", 1 << 30)  # read it all, then run out of time
    raw = b"Subject: " + b"=?utf-8?q?a b?= " * 3000 + b"\r\n\r\n"
    parsed = parse_message(raw, budget=0)
    assert "encoded words in header 'Subject' decoded only in part" in parsed.defects[0]
    assert parsed.subject.startswith("a b a b")
    assert parsed.subject.endswith("=?utf-8?q?a b?=")


def test_out_of_time_long_address_header_is_read_in_part(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_parts, "_FEED_CHUNK", 1 << 30)  # read it all, then run out of time
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
    def slow_links(
        text: str, *, deadline: float | None = None, clock: Callable[[], float] = time.monotonic
    ) -> list[str]:
        time.sleep(0.02)
        return []

    monkeypatch.setattr(parsing, "text_links", slow_links)
    parsed = parse_message(text_message("code 123456").as_bytes(), budget=0.01)
    assert parsed.defects == ("parse budget of 0.01 s exceeded: links and codes may be incomplete",)


# Each search with a text that holds 1,000 finds.
SEARCHES = [
    (_extract.text_links, " ".join(f"https://x.test/{index}" for index in range(1000))),
    (_html.html_links, "".join(f'<a href="https://x.test/{index}">' for index in range(1000))),
    (functools.partial(_codes.find_codes, ""), " ".join(f"{index:06d}" for index in range(1000))),
]


@pytest.mark.parametrize(("function", "text"), SEARCHES)
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


@pytest.mark.parametrize(("function", "text"), SEARCHES)
def test_searches_read_the_clock_they_are_given(function: Any, text: str) -> None:
    assert 0 < len(function(text, deadline=100.0, clock=lambda: 200.0)) < 1000
    assert len(function(text, deadline=200.0, clock=lambda: 100.0)) == 1000


def test_the_parse_reads_the_clock_it_is_given() -> None:
    readings = itertools.count()
    raw = with_attachments((b"a", "application", "pdf", "a.pdf"))
    parsed = parse_message(raw, budget=30, clock=lambda: 1e6 * next(readings))
    assert parsed.attachments == ()
    assert parsed.defects[0].startswith("parse budget of 30 s exceeded: ")
    assert attachment_payload(raw, 0, clock=time.monotonic)[1] == b"a"
    with pytest.raises(AttachmentNotFound, match="within the parse budget"):
        attachment_payload(raw, 0, clock=lambda: 1e6 * next(readings))
