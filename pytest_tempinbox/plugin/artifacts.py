"""Evidence of a failed test's mail that outlives the run: files, report extras, attachments.

Imported by the plugin only when one of its consumers is on: ``--tempinbox-artifacts``
(files on disk), ``--tempinbox-keep`` (the inboxes stay on the server),
pytest-html's ``--html`` or allure-pytest's ``--alluredir``. Each failed test's
messages are read once, while its inboxes still exist (its report is made
before its fixtures' teardown deletes them).

A message's HTML is written by whoever sent it, so the page made of it is shown
as the inbox viewer shows it: in a sandboxed frame (no scripts, an opaque
origin) under a Content-Security-Policy that loads nothing but inline styles
and ``data:`` images, so no remote image reports the open to the sender.
"""

from __future__ import annotations

import hashlib
import html
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..client.inbox import Inbox
    from ..models import Message

__all__ = ["Evidence", "Mail", "folder_name", "page"]

# The viewer's policy for a message's HTML (viewer.MAIL_POLICY), less what a
# <meta> element cannot carry (sandbox, frame-ancestors): the frame's sandbox
# attribute does that job here.
POLICY = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'none'; "
    "base-uri 'none'"
)
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_UNSAFE_IN_ADDRESS = re.compile(r"[^A-Za-z0-9._@-]+")
_STYLE = (
    "body{font:14px/1.4 system-ui,sans-serif;margin:1rem;color:#222}"
    "th{text-align:left;padding-right:1rem;vertical-align:top;color:#555}"
    "iframe{width:100%;height:70vh;border:1px solid #ccc}"
    "pre{white-space:pre-wrap;border:1px solid #ccc;padding:.5rem}"
)


def folder_name(nodeid: str) -> str:
    """A file name for a test: its node id made filesystem-safe, plus a hash that keeps it unique.

    Two node ids that differ only in unsafe characters (``[a/b]`` and ``[a:b]``)
    get different names, and a long id is cut to keep paths short.
    """
    digest = hashlib.sha1(nodeid.encode("utf-8")).hexdigest()[:8]
    readable = _UNSAFE.sub("_", nodeid.replace("::", "__")).strip("_.")[:80]
    return f"{readable}-{digest}"


def _addresses(message: Message, field: str) -> str:
    return ", ".join(str(address) for address in getattr(message, field))


def page(message: Message, *, nodeid: str | None = None) -> str:
    """A self-contained HTML page of one message: its headers, attachments and body.

    The HTML body is in an ``<iframe sandbox srcdoc>`` under :data:`POLICY`;
    a text-only message's text is in a ``<pre>``. Nothing from the mail is put
    in the page as markup outside that frame.
    """
    rows = [
        ("From", str(message.sender) if message.sender else message.envelope.mail_from),
        ("To", _addresses(message, "to") or ", ".join(message.envelope.rcpt_to)),
        ("Cc", _addresses(message, "cc")),
        ("Subject", message.subject),
        ("Date", message.date.isoformat() if message.date else ""),
        ("Received", message.received_at.isoformat()),
        ("Inbox", message.inbox),
        ("Test", nodeid or ""),
    ]
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{POLICY}">',
        '<meta name="referrer" content="no-referrer">',
        f"<title>{html.escape(message.subject or '(no subject)')}</title>",
        f"<style>{_STYLE}</style></head><body>",
        "<table>",
        *(
            f"<tr><th>{name}</th><td>{html.escape(value)}</td></tr>"
            for name, value in rows
            if value
        ),
        "</table>",
    ]
    if message.attachments:
        parts.append("<h2>Attachments</h2><ul>")
        parts += [
            f"<li>{html.escape(item.filename or '(no name)')} ({html.escape(item.content_type)},"
            f" {item.size} bytes)</li>"
            for item in message.attachments
        ]
        parts.append("</ul>")
    if message.html is not None:
        framed = f'<meta http-equiv="Content-Security-Policy" content="{POLICY}">' + message.html
        parts.append(
            f'<iframe sandbox referrerpolicy="no-referrer" title="HTML body"'
            f' srcdoc="{html.escape(framed, quote=True)}"></iframe>'
        )
        if message.text:
            parts.append("<details><summary>Text body</summary>")
            parts.append(f"<pre>{html.escape(message.text)}</pre></details>")
    else:
        parts.append(f"<pre>{html.escape(message.text or '')}</pre>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


class Mail:
    """One message of a failed test, and where its files were saved (None: not saved)."""

    __slots__ = ("eml", "html", "inbox", "message")

    def __init__(self, inbox: str, message: Message) -> None:
        self.inbox = inbox
        self.message = message
        self.eml: Path | None = None
        self.html: Path | None = None

    @property
    def label(self) -> str:
        """How reports name it: the inbox and the subject."""
        return f"{self.inbox}: {self.message.subject or '(no subject)'}"


def _read(inboxes: Sequence[Inbox]) -> tuple[list[Mail], list[str]]:
    """Every message of the inboxes, and a line for each inbox that could not be read."""
    from ..errors import TempInboxError

    mail: list[Mail] = []
    problems: list[str] = []
    for inbox in inboxes:
        try:
            mail += [Mail(inbox.address, message) for message in inbox.messages()]
        except TempInboxError as exc:
            problems.append(f"{inbox.address}: could not be read ({exc})")
    return mail, problems


def _save(
    directory: Path, nodeid: str, addresses: list[str], mail: list[Mail], problems: list[str]
) -> None:
    """Write each message's ``.eml`` and ``.html`` and the test's ``summary.txt``.

    One subfolder per inbox, named after its address; files are numbered in
    the order the inbox received them. The summary has the node id, then a line
    per message (or per inbox that received none).
    """
    from ..client.inbox import describe
    from ..errors import TempInboxError

    directory.mkdir(parents=True, exist_ok=True)
    lines = [f"test: {nodeid}", *problems]
    counts: dict[str, int] = {}
    for item in mail:
        counts[item.inbox] = number = counts.get(item.inbox, 0) + 1
        folder = directory / _UNSAFE_IN_ADDRESS.sub("_", item.inbox)
        folder.mkdir(exist_ok=True)
        stem = f"{number:02d}-{_UNSAFE.sub('-', item.message.subject).strip('-.')[:40]}".rstrip("-")
        item.html = folder / f"{stem}.html"
        item.html.write_text(page(item.message, nodeid=nodeid), encoding="utf-8")
        try:
            raw = item.message.raw()
        except TempInboxError as exc:
            lines.append(f"{item.inbox}: message {item.message.id}: no .eml ({exc})")
        else:
            item.eml = folder / f"{stem}.eml"
            item.eml.write_bytes(raw)
        where = item.html.relative_to(directory).with_suffix("").as_posix()
        lines.append(f"{where}: {item.inbox}: {describe(item.message)}")
    unread = {line.split(":", 1)[0] for line in problems}
    lines += [f"{address}: no mail" for address in addresses if address not in {*counts, *unread}]
    (directory / "summary.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")


class Evidence:
    """What the plugin does with a failed test's mail, as configured for the run.

    ``artifacts``: the folder to save files to. ``html_report``: pytest-html's
    report file (links to the files are made relative to it). ``allure``:
    attach the messages to the Allure result.
    """

    def __init__(
        self,
        *,
        artifacts: str | None = None,
        html_report: str | None = None,
        allure: bool = False,
        keep: bool = False,
    ) -> None:
        self.artifacts = None if artifacts is None else Path(artifacts)
        self.html_report = None if html_report is None else Path(html_report).resolve()
        self.allure = allure
        self.keep = keep

    def record(self, nodeid: str, report: Any, inboxes: Sequence[Inbox]) -> None:
        """Save, link and attach the mail of a failed test's ``report`` (setup or call)."""
        if self.keep:
            from .keep import KEPT_ATTRIBUTE

            setattr(report, KEPT_ATTRIBUTE, [inbox.address for inbox in inboxes])
        if self.artifacts is None and self.html_report is None and not self.allure:
            return
        mail, problems = _read(inboxes)
        if self.artifacts is not None:
            addresses = [inbox.address for inbox in inboxes]
            _save(self.artifacts / folder_name(nodeid), nodeid, addresses, mail, problems)
        if self.html_report is not None:
            report.extras = [*getattr(report, "extras", []), *self._extras(mail, nodeid)]
        if self.allure:
            _attach_to_allure(mail, nodeid)

    def _extras(self, mail: list[Mail], nodeid: str) -> list[dict[str, str | None]]:
        """pytest-html extras: links to the saved files, else each message's page embedded."""
        assert self.html_report is not None
        # The dicts pytest_html.extras makes, made here: pytest-html is not typed,
        # and importing it is not needed to describe a link.
        extras: list[dict[str, str | None]] = []
        for item in mail:
            if item.html is not None:
                for path in (item.html, item.eml):
                    if path is not None:
                        extras.append(
                            _extra("url", self._link(path), f"{item.label} ({path.suffix})")
                        )
            else:
                # Sandboxed, without scripts: the report inserts this as markup.
                framed = html.escape(page(item.message, nodeid=nodeid), quote=True)
                content = (
                    f"<p>{html.escape(item.label)}</p><iframe sandbox referrerpolicy='no-referrer'"
                    f" style='width:100%;height:400px' srcdoc=\"{framed}\"></iframe>"
                )
                extras.append(_extra("html", content, None))
        return extras

    def _link(self, path: Path) -> str:
        assert self.html_report is not None
        relative = os.path.relpath(path.resolve(), self.html_report.parent)
        return Path(relative).as_posix()


def _extra(format_type: str, content: str, name: str | None) -> dict[str, str | None]:
    return {
        "name": name,
        "format_type": format_type,
        "content": content,
        "mime_type": None,
        "extension": None,
    }


def _attach_to_allure(mail: list[Mail], nodeid: str) -> None:
    """Each message as two Allure attachments: its page (HTML) and its source (``.eml``)."""
    import allure

    from ..errors import TempInboxError

    for item in mail:
        allure.attach(
            page(item.message, nodeid=nodeid),
            name=f"{item.label} (.html)",
            attachment_type=allure.attachment_type.HTML,
        )
        try:
            raw = item.message.raw()
        except TempInboxError:
            continue
        # Allure has no EML type; a MIME type and an extension of our own do.
        allure.attach(
            raw, name=f"{item.label} (.eml)", attachment_type="message/rfc822", extension="eml"
        )
