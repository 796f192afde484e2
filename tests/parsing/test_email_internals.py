"""The email package's private names the parser relies on: still there, still the same shape.

Each failure names the running Python version, so that a new release that
changes one of them is told as such (see pytest_tempinbox/parsing/email_internals.py).
"""

from __future__ import annotations

import email.utils
import inspect
import platform
from collections.abc import Callable
from email import _header_value_parser, message
from email.errors import HeaderParseError
from email.feedparser import BytesFeedParser
from typing import Any

import pytest

from pytest_tempinbox.parsing import email_internals
from pytest_tempinbox.parsing.email_internals import (
    Part,
    address_list,
    get_addr_spec,
    get_angle_addr,
)

PYTHON = f"Python {platform.python_version()} ({platform.python_implementation()})"

# Each private name, where it lives, and the parameters the project calls it with.
RELIED_ON = [
    (message.Message, "_get_params_preserve", ["self", "failobj", "header"]),
    (_header_value_parser, "get_addr_spec", ["value"]),
    (_header_value_parser, "get_angle_addr", ["value"]),
    (email_internals._parseaddr.AddressList, "__init__", ["self", "field"]),
]


@pytest.mark.parametrize(("owner", "name", "parameters"), RELIED_ON)
def test_a_relied_on_private_name_is_there_with_its_signature(
    owner: Any, name: str, parameters: list[str]
) -> None:
    where = f"{getattr(owner, '__module__', owner.__name__)}.{owner.__name__}"
    function = getattr(owner, name, None)
    assert callable(function), f"{PYTHON}: {where} has no {name} any more"
    found = list(inspect.signature(function).parameters)
    assert found == parameters, (
        f"{PYTHON}: {where}.{name} now takes {found}, not {parameters}: "
        "see pytest_tempinbox/parsing/email_internals.py"
    )


def test_the_module_re_exports_the_address_parsers() -> None:
    assert get_addr_spec is _header_value_parser.get_addr_spec, PYTHON
    assert get_angle_addr is _header_value_parser.get_angle_addr, PYTHON
    assert {"get_addr_spec", "get_angle_addr"} <= set(email_internals.__all__)


@pytest.mark.parametrize(
    ("parse", "value", "address", "rest"),
    [
        (get_angle_addr, "<alice@example.test> SIZE=100", "alice@example.test", "SIZE=100"),
        (get_addr_spec, "bob@example.test BODY=8BITMIME", "bob@example.test", "BODY=8BITMIME"),
        (get_angle_addr, "<>", None, ""),
    ],
)
def test_the_address_parsers_give_a_token_with_an_addr_spec_and_the_rest(
    parse: Callable[[str], tuple[Any, str]], value: str, address: str | None, rest: str
) -> None:
    token, remaining = parse(value)
    assert (token.addr_spec, remaining.strip()) == (address or "<>", rest), PYTHON


@pytest.mark.parametrize("parse", [get_angle_addr, get_addr_spec])
def test_the_address_parsers_raise_header_parse_errors_on_junk(
    parse: Callable[[str], tuple[Any, str]],
) -> None:
    with pytest.raises(HeaderParseError):
        parse("<<<@")


def test_the_parameter_hook_is_what_the_public_calls_and_the_parser_use() -> None:
    """If Message stopped calling _get_params_preserve, the override would do nothing."""
    headers: list[str] = []

    class Watched(Part):
        def _get_params_preserve(self, failobj: Any, header: str) -> Any:
            headers.append(header)
            return super()._get_params_preserve(failobj, header)

    parser = BytesFeedParser(_factory=Watched)
    parser.feed(b"Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\n\r\nx\r\n--b--\r\n")
    root = parser.close()
    assert headers, f"{PYTHON}: the feed parser no longer reads the boundary through the hook"
    headers.clear()
    assert root.get_params() == [("multipart/mixed", ""), ("boundary", "b")], PYTHON
    assert root.get_param("boundary") == "b", PYTHON
    assert root.get_boundary() == "b", PYTHON
    assert headers == ["content-type"] * 3, f"{PYTHON}: public calls bypass the hook: {headers}"


def test_the_override_reads_parameters_as_the_email_package_does() -> None:
    value = "text/plain; charset=\"utf-8\"; name*=utf-8''caf%C3%A9.txt; format=flowed"
    plain, ours = message.Message(), Part()
    plain["Content-Type"] = ours["Content-Type"] = value
    assert ours.get_params() == plain.get_params(), PYTHON
    assert ours.get_param("name") == plain.get_param("name"), PYTHON


ADDRESS_LISTS = [
    '"Doe, Jane" <jane@example.test>, plain@example.test',
    "Team: a@example.test, B <b@example.test>;, c@example.test",
    "a@example.test <b@example.test> c@example.test",
    "a@example.test <b@example.test",
    "<b@example.test>; <a@example.test>",
    "foo bar baz",
    '"',
    "",
]


@pytest.mark.parametrize("value", ADDRESS_LISTS)
def test_the_address_list_reader_is_what_lenient_getaddresses_reads_with(value: str) -> None:
    """If getaddresses(strict=False) stopped using AddressList, the two readings could part."""
    lenient = {"strict": False} if getattr(email.utils, "supports_strict_parsing", False) else {}
    assert address_list([value, "x@example.test"]) == email.utils.getaddresses(
        [value, "x@example.test"], **lenient
    ), PYTHON


def test_the_address_list_reader_gives_every_address_of_an_ambiguous_list() -> None:
    assert address_list(["a@example.test <b@example.test> c@example.test"]) == [
        ("", "a@example.test"),
        ("", "b@example.test"),
        ("", "c@example.test"),
    ], PYTHON
