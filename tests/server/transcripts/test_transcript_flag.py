"""``--no-transcripts`` on the command line: the server then keeps none."""

from __future__ import annotations

from pytest_tempinbox import _cli


def test_transcripts_are_on_by_default_and_off_with_the_flag() -> None:
    parser = _cli._parser("tempinbox")
    assert _cli._config(parser.parse_args([])).transcripts is True
    assert _cli._config(parser.parse_args(["--no-transcripts"])).transcripts is False
