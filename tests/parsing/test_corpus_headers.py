"""Every corpus mail's headers read the same on every supported Python, as committed.

``corpus_headers.json`` holds, for each mail under ``tests/corpus/``, its
addresses and names, subject, date, Message-ID, decoded header map and
defects, as :mod:`tests.parsing.corpus_headers` reads them. The suite runs on
Python 3.10 to 3.13, whose email packages read some headers differently; each
must give this one file. A failure names the mail, the field and the Python;
when a change meant to alter the reading (a new defect note, say), regenerate
the file with ``python -m tests.parsing.corpus_headers`` and review its diff.
"""

from __future__ import annotations

import json
import platform
from pathlib import Path
from typing import Any

import pytest

from .corpus_headers import EXPECTED, corpus_mails, mail_name, reading

PYTHON = f"Python {platform.python_version()}"
REGENERATE = "python -m tests.parsing.corpus_headers"
MAILS = corpus_mails()


@pytest.fixture(scope="module")
def expected() -> dict[str, Any]:
    """The committed reading of every corpus mail, by name."""
    readings: dict[str, Any] = json.loads(EXPECTED.read_text(encoding="utf-8"))
    return readings


def test_the_expectation_covers_every_corpus_mail_and_no_other(expected: dict[str, Any]) -> None:
    names = {mail_name(path) for path in MAILS}
    missing, stale = sorted(names - expected.keys()), sorted(expected.keys() - names)
    assert not missing, f"{EXPECTED.name} lacks {missing}; regenerate it: {REGENERATE}"
    assert not stale, f"{EXPECTED.name} holds {stale}, no corpus mails; regenerate it: {REGENERATE}"
    assert {name.split("/")[0] for name in names} == {"parsing", "transactional"}


@pytest.mark.parametrize("path", MAILS, ids=mail_name)
def test_a_corpus_mail_reads_as_committed(path: Path, expected: dict[str, Any]) -> None:
    name = mail_name(path)
    if name not in expected:
        pytest.fail(f"{name} is not in {EXPECTED.name}; regenerate it: {REGENERATE}")
    found = reading(path.read_bytes())
    differ = {
        field: {"expected": expected[name].get(field), "read": found.get(field)}
        for field in expected[name].keys() | found.keys()
        if expected[name].get(field) != found.get(field)
    }
    assert not differ, (
        f"{PYTHON} reads {name} otherwise than {EXPECTED.name}: "
        f"{json.dumps(differ, ensure_ascii=False, indent=1, sort_keys=True)}\n"
        "A difference on one Python only is the email package of that version reading "
        "the mail its own way: the parser must decide one reading "
        "(pytest_tempinbox/parsing/). A change meant to alter the reading: "
        f"regenerate the file ({REGENERATE}) and review its diff."
    )
