"""What a server's ``--domain`` and ``--hostname`` may be: host names, an IDN as its A-labels."""

from __future__ import annotations

import pytest

from pytest_tempinbox.config import ServerConfig, domain_name
from pytest_tempinbox.server.inbox_server import InboxServer


@pytest.mark.parametrize(
    ("given", "served"),
    [
        ("tempinbox.test", "tempinbox.test"),
        ("TempInbox.TEST", "tempinbox.test"),
        ("localhost", "localhost"),
        ("mx-1.example.test", "mx-1.example.test"),
        ("bücher.example", "xn--bcher-kva.example"),
        ("BÜCHER.example", "xn--bcher-kva.example"),
        ("xn--bcher-kva.example", "xn--bcher-kva.example"),
        ("例え.テスト", "xn--r8jz45g.xn--zckzah"),
        ("a" * 63 + ".test", "a" * 63 + ".test"),
    ],
)
def test_a_host_name_is_served_lowercase_in_ascii(given: str, served: str) -> None:
    assert domain_name(given) == served


@pytest.mark.parametrize(
    ("given", "reason"),
    [
        ("", "cannot be empty"),
        ("a b", "holds more than letters, digits and inner hyphens"),
        ("@", "holds more than letters, digits and inner hyphens"),
        ("user@tempinbox.test", "holds more than letters, digits and inner hyphens"),
        (".tempinbox.test", "empty label"),
        ("tempinbox.test.", "empty label"),
        ("tempinbox..test", "empty label"),
        ("-tempinbox.test", "holds more than letters, digits and inner hyphens"),
        ("tempinbox_1.test", "holds more than letters, digits and inner hyphens"),
        ("a" * 64 + ".test", "is over 63 characters"),
        (".".join(["abcdefghi"] * 26), "over 253 characters"),
        ("xn--zz.example", "not a domain name"),
        ("bü cher.example", "not a domain name"),
    ],
)
def test_anything_else_is_refused_with_one_line_saying_why(given: str, reason: str) -> None:
    with pytest.raises(ValueError, match="domain name") as refused:
        domain_name(given)

    assert reason in str(refused.value)
    assert "\n" not in str(refused.value)


def test_a_server_config_serves_its_domains_and_hostname_in_ascii() -> None:
    config = ServerConfig(
        domains=["Bücher.example", "tempinbox.test"], hostname="MX.bücher.example"
    )

    assert config.domains == ("xn--bcher-kva.example", "tempinbox.test")
    assert config.hostname == "mx.xn--bcher-kva.example"


def test_a_server_with_a_bad_domain_does_not_start() -> None:
    with pytest.raises(ValueError, match="'a b' is not a domain name"):
        InboxServer(domains=["a b"])
