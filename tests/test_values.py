"""The plain values apart from ``Message``: where each name lives, and a JSON round trip of data.

``pytest_tempinbox.values`` holds the data; ``pytest_tempinbox.models`` (``Message``)
re-exports it, and the checks re-export the values and readers that moved out of
them, so every import path users had still works.
"""

from __future__ import annotations

import sys
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

import pytest_tempinbox
from pytest_tempinbox import models, values
from pytest_tempinbox.checks import dkim, unsubscribe
from pytest_tempinbox.models import Message
from pytest_tempinbox.parsing import unsubscribe as unsubscribe_reading

from .helpers import message_json

CHECKS = Path(unsubscribe.__file__).parent


@pytest.mark.parametrize(
    "name", ["Address", "Attachment", "Envelope", "Fault", "Link", "Refusal", "Stage"]
)
def test_models_and_the_package_give_the_values_themselves(name: str) -> None:
    assert getattr(models, name) is getattr(values, name)
    if name != "Stage":
        assert getattr(pytest_tempinbox, name) is getattr(values, name)


def test_the_checks_give_the_values_and_readers_that_moved_out_of_them() -> None:
    assert dkim.DkimResult is values.DkimResult
    assert unsubscribe.Unsubscribe is values.Unsubscribe
    assert unsubscribe.parse_unsubscribe is unsubscribe_reading.parse_unsubscribe
    assert unsubscribe.dkim_signed_headers is unsubscribe_reading.dkim_signed_headers


def _signed_newsletter() -> dict[str, Any]:
    return message_json(
        headers={
            "list-unsubscribe": ["<https://example.com/u?id=1>, <mailto:u@example.com>"],
            "list-unsubscribe-post": ["List-Unsubscribe=One-Click"],
            "dkim-signature": ["v=1; d=example.com; s=sel; h=from:list-unsubscribe"],
        },
        unsubscribe={
            "http": ["https://example.com/u?id=1"],
            "mailto": ["mailto:u@example.com"],
            "one_click": False,
            "post": "List-Unsubscribe=One-Click",
            "dkim_covers": False,
            "problems": [
                "the message is DKIM-signed, but no signature's h= covers both"
                " List-Unsubscribe and List-Unsubscribe-Post (the signature of d=example.com"
                " leaves out list-unsubscribe-post); RFC 8058 needs both signed"
            ],
        },
        dkim={"result": "fail", "domain": "example.com", "selector": "sel", "reason": "x"},
    )


def test_the_json_round_trip_gives_back_the_same_json() -> None:
    data = _signed_newsletter()
    assert Message.from_json(data).to_json() == data


def test_the_json_round_trip_runs_no_code_of_the_checks() -> None:
    data = _signed_newsletter()
    ran: set[str] = set()

    def profile(frame: FrameType, event: str, arg: object) -> None:
        if event == "call":
            ran.add(frame.f_code.co_filename)

    sys.setprofile(profile)
    try:
        Message.from_json(Message.from_json(data).to_json())
    finally:
        sys.setprofile(None)
    assert not [name for name in ran if Path(name).parent == CHECKS]
    assert unsubscribe_reading.__file__ in ran  # the profile saw the reading of the headers
