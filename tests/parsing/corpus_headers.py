"""The header-level reading of every corpus mail, and the command that writes its expectation.

Every mail under ``tests/corpus/`` (``parsing/`` and ``transactional/``) is
parsed, and what this module takes of the result, the fields that depend on
how the email package of the running Python reads headers, is compared by
``test_corpus_headers.py`` with one committed file, ``corpus_headers.json``
beside this module, on each supported Python (3.10 to 3.13): the addresses
with their names (``from``, ``to``, ``cc`` and ``reply_to`` as the message's
JSON serves them, ``from`` being the first From address; and under
``other_addresses`` every address of the other address fields, From included,
read the same way), the subject, the date, the Message-ID, the decoded header
map and the defects. Bodies, links, codes and attachments are not in it.

When a change alters what is read (a new defect note, a header decoded
better), regenerate the file and review its diff::

    python -m tests.parsing.corpus_headers          # rewrite corpus_headers.json
    python -m tests.parsing.corpus_headers --check  # exit 1 and name the mails that differ

Either Python gives the same file; that is what the test holds.
"""

from __future__ import annotations

import argparse
import json
import sys
from email import policy
from email.parser import BytesParser
from pathlib import Path
from typing import Any

from pytest_tempinbox.models import Address
from pytest_tempinbox.parsing.budget import ParseRun
from pytest_tempinbox.parsing.headers import addresses
from pytest_tempinbox.parsing.message import parse_message

CORPUS = Path(__file__).parents[1] / "corpus"
EXPECTED = Path(__file__).with_name("corpus_headers.json")
# Far above what any mail here takes, so that a slow machine cannot cut a parse short.
BUDGET = 10.0
# Address fields other than To, Cc and Reply-To, read as those are; From in full.
OTHER_ADDRESS_FIELDS = (
    "from",
    "sender",
    "bcc",
    "resent-from",
    "resent-sender",
    "resent-to",
    "resent-cc",
    "resent-bcc",
    "delivered-to",
    "x-original-to",
    "errors-to",
    "disposition-notification-to",
    "return-receipt-to",
)
_NOT_MAIL = {".md", ".json"}

Reading = dict[str, Any]


def corpus_mails() -> list[Path]:
    """Every mail under ``tests/corpus/``, in a stable order."""
    return sorted(
        path
        for path in CORPUS.rglob("*")
        if path.is_file()
        and path.suffix not in _NOT_MAIL
        and not path.name.startswith(("LICENSE", "NOTICE"))
    )


def mail_name(path: Path) -> str:
    """A mail's key in the expectation: its path under ``tests/corpus/``."""
    return path.relative_to(CORPUS).as_posix()


def _pairs(found: tuple[Address, ...]) -> list[list[str | None]]:
    return [[address.name, address.email] for address in found]


def _other_addresses(raw: bytes) -> dict[str, list[list[str | None]]]:
    head = BytesParser(policy=policy.compat32).parsebytes(raw, headersonly=True)
    found = {}
    for name in OTHER_ADDRESS_FIELDS:
        values = [str(value) for value in head.get_all(name, [])]
        if values:
            found[name] = _pairs(addresses(name, values, ParseRun(BUDGET)))
    return found


def reading(raw: bytes) -> Reading:
    """What the expectation holds of one mail: its header-level fields and its defects."""
    parsed = parse_message(raw, budget=BUDGET)
    return {
        "from": _pairs((parsed.sender,)) if parsed.sender else [],
        "to": _pairs(parsed.to),
        "cc": _pairs(parsed.cc),
        "reply_to": _pairs(parsed.reply_to),
        "other_addresses": _other_addresses(raw),
        "subject": parsed.subject,
        "date": parsed.date.isoformat() if parsed.date else None,
        "message_id": parsed.message_id,
        "headers": {name: list(values) for name, values in parsed.headers.items()},
        "defects": list(parsed.defects),
    }


def read_corpus() -> dict[str, Reading]:
    """The reading of every corpus mail, by name."""
    return {mail_name(path): reading(path.read_bytes()) for path in corpus_mails()}


def dumps(readings: dict[str, Reading]) -> str:
    """The expectation file's text: sorted, indented, UTF-8 as written."""
    return json.dumps(readings, ensure_ascii=False, indent=1, sort_keys=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Write ``corpus_headers.json``, or with ``--check`` tell whether it is up to date."""
    parser = argparse.ArgumentParser(prog="python -m tests.parsing.corpus_headers")
    parser.add_argument("--check", action="store_true", help="compare, do not write")
    args = parser.parse_args(argv)
    text = dumps(read_corpus())
    if not args.check:
        EXPECTED.write_text(text, encoding="utf-8")
        print(f"wrote {EXPECTED.name}: {len(json.loads(text))} mails")
        return 0
    expected = json.loads(EXPECTED.read_text(encoding="utf-8"))
    found = json.loads(text)
    names = expected.keys() | found.keys()
    differ = sorted(name for name in names if expected.get(name) != found.get(name))
    for name in differ:
        print(f"differs: {name}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
