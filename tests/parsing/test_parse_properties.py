"""Properties that must hold for any input to the parser.

It is fed arbitrary bytes and plausible-but-hostile MIME, and must answer in
time with a result the API can serve as JSON.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Iterator
from datetime import datetime
from email.utils import formataddr, getaddresses

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from pytest_tempinbox.parsing import headers as _headers
from pytest_tempinbox.parsing.budget import ParseRun
from pytest_tempinbox.parsing.headers import DOT_ATOM
from pytest_tempinbox.parsing.message import ParsedMessage, attachment_payload, parse_message

from .mime_strategies import PARSE_BUDGET, mime_messages

# --- the parser ---------------------------------------------------------------


def _strings(value: object, where: str = "") -> Iterator[tuple[str, str]]:
    """Yield every string inside a parse result, with where it was found."""
    if isinstance(value, str):
        yield where, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(key, f"{where}.<key>")
            yield from _strings(item, f"{where}[{key!r}]")
    elif isinstance(value, (tuple, list)):
        for index, item in enumerate(value):
            yield from _strings(item, f"{where}[{index}]")
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for field in dataclasses.fields(value):
            if field.name not in ("fetch", "fetch_async"):  # download callbacks
                yield from _strings(getattr(value, field.name), f"{where}.{field.name}")
    else:
        assert value is None or isinstance(value, (int, datetime)), (where, value)


def _timed_parse(raw: bytes) -> ParsedMessage:
    started = time.perf_counter()
    parsed = parse_message(raw)
    elapsed = time.perf_counter() - started
    assert elapsed < PARSE_BUDGET, f"parsing {len(raw)} bytes took {elapsed:.2f} s"
    return parsed


def _check_parsed(raw: bytes, parsed: ParsedMessage) -> None:
    for where, text in _strings(parsed, "parsed"):
        # A lone surrogate passes json.dumps but fails the UTF-8 encoding the API does.
        try:
            json.dumps(text, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError as exc:
            raise AssertionError(f"{where} = {text!r} cannot be served as JSON") from exc
    assert len(set(parsed.links)) == len(parsed.links), parsed.links
    for link in parsed.links:
        # Schemes are case-insensitive (RFC 3986, 3.1); the parser keeps the sender's case.
        assert link[:8].lower().startswith(("http://", "https://")), link
    assert len(set(parsed.codes)) == len(parsed.codes), parsed.codes
    for attachment in parsed.attachments:
        described, payload = attachment_payload(raw, attachment.index)
        assert described == attachment
        assert len(payload) == attachment.size


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=2048))
@example(b"")
@example(b"\xff\xfe\x00\r\n\r\n\xed\xa0\x80")  # NUL, BOM-like bytes, UTF-8 of a surrogate
def test_parser_survives_arbitrary_bytes(raw: bytes) -> None:
    _check_parsed(raw, _timed_parse(raw))


_PRINTABLE_NAMES = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=15)
_ADDR_SPECS = st.from_regex(rf"{DOT_ATOM}@{DOT_ATOM}", fullmatch=True)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(_PRINTABLE_NAMES, _ADDR_SPECS), min_size=1, max_size=4),
    st.sampled_from([", ", ",", ",\r\n "]),
    st.booleans(),
)
@example([("alice@example.com", "bob@example.com")], ", ", False)
@example([("a@x", "b@y"), ("", "c@z")], ", ", True)
def test_well_formed_address_lists_are_read_as_getaddresses_reads_them(
    mailboxes: list[tuple[str, str]], separator: str, group: bool
) -> None:
    """The unquoted-address repair never touches a header written as RFC 5322 says."""
    header = separator.join(formataddr(mailbox) for mailbox in mailboxes)
    if group:
        header = f"Team: {header};"
    assert _headers._quote_address_names(header) is None
    run = ParseRun(PARSE_BUDGET)
    read = _headers.addresses("To", [header], run)
    expected = getaddresses([header.replace("\r\n", "")])
    assert [(a.name or "", a.email) for a in read] == [(n.strip(), e) for n, e in expected if e]
    assert run.defects() == ()


@settings(
    max_examples=400,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(mime_messages())
# Bytes that decode to lone surrogates under the declared charset (UTF-7, UTF-16,
# UTF-8 of U+D800), in a header's encoded word, a filename and the body.
@example(b"Subject: =?utf-7?q?+2AA-?= =?utf-8?b?7aCA?=\r\n\r\n")
@example(b"Content-Type: text/plain; charset=utf-7\r\n\r\n+2AA- https://x.test/+2AA-\r\n")
@example(b"Content-Type: text/html; charset=utf-16-le\r\n\r\n\x00\xd8<\x00")
@example(b"Content-Disposition: attachment; filename*=utf-7''%2B2AA-\r\n\r\nx")
def test_parser_survives_plausible_mime(raw: bytes) -> None:
    _check_parsed(raw, _timed_parse(raw))
