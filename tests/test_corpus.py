"""Real transactional mail: ``code()`` and ``link(text=...)`` measured on a corpus.

``tests/corpus/transactional/<project>/`` holds mails built from the public
templates of open-source projects, each described in that folder's
``manifest.json`` (``file``, ``language``, ``code`` or null, ``action_text`` and
``action_url`` or null). Every mail is sent over SMTP to the session's server
and read back through each client, as a user's test would. The figures per
project are printed (``pytest -s``) and are in every assertion message.
"""

from __future__ import annotations

import json
import re
import smtplib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_tempinbox.client.http import TempInboxClient
from pytest_tempinbox.errors import MailAssertionError
from pytest_tempinbox.models import Message
from pytest_tempinbox.server.inbox_server import InboxServer

from .helpers import CLIENT_NAME

CORPUS = Path(__file__).parent / "corpus" / "transactional"
RIGHT_AT_LEAST = 0.98  # of the mails with a code, code() returns it
WRONG_AT_MOST = 0  # mails with a code for which code() returns another one without failing
CLAIMED_AT_MOST = 0  # mails without a code for which code() returns one

Entry = dict[str, Any]
CRLF = re.compile(rb"\r?\n")


def corpus() -> list[tuple[str, Entry]]:
    """Every mail of the corpus: its project and its manifest entry."""
    found = []
    for manifest in sorted(CORPUS.glob("*/manifest.json")):
        for entry in json.loads(manifest.read_text(encoding="utf-8")):
            found.append((manifest.parent.name, entry))
    return found


@pytest.fixture(scope="module")
def received(
    server: InboxServer, client: TempInboxClient
) -> Iterator[list[tuple[str, Entry, Message | str]]]:
    """Every corpus mail, sent to an inbox of its own and read back; or why it was refused."""
    mails = []
    with smtplib.SMTP(server.smtp_host, server.smtp_port, local_hostname=CLIENT_NAME) as smtp:
        for project, entry in corpus():
            inbox = client.generate()
            # On the wire every line ends in CRLF; smtplib sends bytes as they are.
            raw = CRLF.sub(b"\r\n", (CORPUS / project / entry["file"]).read_bytes())
            try:
                smtp.sendmail("corpus@example.test", [inbox.address], raw)
            except smtplib.SMTPDataError as error:
                refused = f"refused at DATA: {error.smtp_code} {error.smtp_error!r}"
            else:
                refused = ""
            mails.append((project, entry, inbox, refused))
    read: list[tuple[str, Entry, Message | str]] = []
    for project, entry, inbox, refused in mails:
        if refused:
            read.append((project, entry, refused))
        else:
            (message,) = inbox.messages()
            read.append((project, entry, message))
    yield read
    for _, _, inbox, _ in mails:
        inbox.delete()


def picked(message: Message | str) -> str | None:
    if isinstance(message, str):  # refused by the server
        return None
    try:
        return message.code()
    except MailAssertionError:
        return None


def percent(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "-"


def test_the_corpus_covers_ten_projects_in_four_languages() -> None:
    mails = corpus()
    assert len({project for project, _ in mails}) >= 10
    assert len({entry["language"] for _, entry in mails}) >= 4
    for project, entry in mails:
        assert (CORPUS / project / entry["file"]).is_file(), (project, entry["file"])


def test_every_corpus_mail_can_be_sent_over_smtp() -> None:
    # RFC 5321 4.5.3.1.6: a line holds at most 998 bytes; longer ones must be encoded.
    too_long = []
    for project, entry in corpus():
        raw = (CORPUS / project / entry["file"]).read_bytes()
        longest = max(len(line.rstrip(b"\r")) for line in raw.split(b"\n"))
        if longest > 998:
            too_long.append(f"{project}/{entry['file']}: a line of {longest} bytes")
    assert not too_long, "\n".join(too_long)


def test_code_is_right_on_98_percent_of_the_mails_with_a_code_and_wrong_on_none(
    received: list[tuple[str, Entry, Message | str]],
) -> None:
    rows: dict[str, dict[str, int]] = {}
    mixed_case = {"code": 0, "right": 0}  # codes with small letters (Keycloak, Hanko)
    misses = []
    for project, entry, message in received:
        row = rows.setdefault(project, dict.fromkeys(("code", "right", "wrong", "failed"), 0))
        row.setdefault("none", 0)
        row.setdefault("returned", 0)
        row.setdefault("refused", 0)
        row["refused"] += isinstance(message, str)
        got = picked(message)
        if entry["code"] is None:
            row["none"] += 1
            row["returned"] += got is not None
            if got is not None:
                misses.append(f"  {project}/{entry['file']}: no code, code() gave {got!r}")
            continue
        row["code"] += 1
        mixed = any(char.islower() for char in entry["code"])
        mixed_case["code"] += mixed
        if got == entry["code"]:
            row["right"] += 1
            mixed_case["right"] += mixed
            continue
        row["wrong" if got is not None else "failed"] += 1
        refused = f" ({message})" if isinstance(message, str) else ""
        misses.append(
            f"  {project}/{entry['file']}: {entry['code']!r}, code() gave {got!r}{refused}"
        )
    total = {key: sum(row[key] for row in rows.values()) for key in next(iter(rows.values()))}
    lines = [
        "project        with a code  right  wrong  failed | without  code() returned one"
        " | refused by the server",
        *(
            f"{name:14} {row['code']:11}  {row['right']:5}  {row['wrong']:5}  {row['failed']:6}"
            f" | {row['none']:7}  {row['returned']:19} | {row['refused']:3}"
            for name, row in sorted(
                {**rows, "ALL": total}.items(), key=lambda item: item[0] == "ALL"
            )
        ),
        f"right {percent(total['right'], total['code'])},"
        f" wrong {percent(total['wrong'], total['code'])},"
        f" failed {percent(total['failed'], total['code'])} of the mails with a code;"
        f" a code returned for {percent(total['returned'], total['none'])} of those without;"
        f" right on {mixed_case['right']} of the {mixed_case['code']} codes in mixed case",
        *misses,
    ]
    table = "\n".join(lines)
    print(f"\ncode() on the corpus:\n{table}")
    assert total["right"] >= RIGHT_AT_LEAST * total["code"], table
    assert total["wrong"] <= WRONG_AT_MOST, table
    assert total["returned"] <= CLAIMED_AT_MOST, table


def test_link_by_action_text_returns_action_url_for_every_corpus_mail(
    received: list[tuple[str, Entry, Message | str]],
) -> None:
    checked: dict[str, int] = {}
    misses = []
    for project, entry, message in received:
        if entry["action_text"] is None:
            continue
        checked[project] = checked.get(project, 0) + 1
        if isinstance(message, str):
            misses.append(f"  {project}/{entry['file']}: {message}")
            continue
        try:
            got: str | None = message.link(text=entry["action_text"])
        except MailAssertionError as error:
            got = None
            why = str(error).splitlines()[0]
        else:
            why = ""
        if got != entry["action_url"]:
            misses.append(
                f"  {project}/{entry['file']}: text {entry['action_text']!r} gave {got!r},"
                f" not {entry['action_url']!r} {why}"
            )
    summary = ", ".join(f"{project} {count}" for project, count in sorted(checked.items()))
    table = f"link(text=action_text) checked on {sum(checked.values())} mails ({summary})"
    print(f"\n{table}")
    assert not misses, "\n".join([table, *misses])
