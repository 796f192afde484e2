"""The plugin's ``--tempinbox-domain``: checked at start, an IDN served as its A-labels."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize(
    ("ini", "args", "origin"),
    [
        ("", ["--tempinbox-domain", "a b"], "--tempinbox-domain"),
        ("tempinbox_domain = a b\n", [], "tempinbox_domain in tox.ini"),
    ],
    ids=["option", "ini"],
)
def test_a_bad_domain_is_a_usage_error_naming_where_it_came_from(
    pytester: pytest.Pytester, ini: str, args: list[str], origin: str
) -> None:
    pytester.makeini("[pytest]\n" + ini)
    pytester.makepyfile("def test_uses(tempinbox): pass")
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert result.stderr.lines[0] == (
        f"ERROR: {origin}: 'a b' is not a domain name:"
        " label 'a b' holds more than letters, digits and inner hyphens"
    )
    assert "Traceback" not in result.stderr.str()


def test_an_idn_domain_hands_out_ascii_addresses(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        def test_address(tempinbox):
            assert tempinbox.address.endswith("@xn--bcher-kva.example")
        """
    )
    pytester.runpytest("--tempinbox-domain", "bücher.example").assert_outcomes(passed=1)
