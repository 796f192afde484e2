"""Picking the one attachment a test means, by shell-style patterns on its name and type.

Standard library only, no I/O: it reads the attachments' descriptions that a
message already holds (:meth:`Message.attachment <pytest_tempinbox.models.Message.attachment>`
passes them).
"""

from __future__ import annotations

from collections.abc import Sequence
from fnmatch import fnmatchcase

from ..errors import MailAssertionError
from ..values import Attachment
from .failures import shorten, size_text

__all__ = ["pick_attachment"]

_LISTED = 30  # attachments listed in a failure at most


def _matches(pattern: str | None, value: str | None) -> bool:
    if pattern is None:
        return True
    return value is not None and fnmatchcase(value.lower(), pattern.lower())


def _line(attachment: Attachment) -> str:
    name = repr(shorten(attachment.filename, 60)) if attachment.filename else "(no filename)"
    line = f"  - #{attachment.index} {name} {attachment.content_type}, {size_text(attachment.size)}"
    return line + (", inline" if attachment.inline else "")


def _wanted(name: str | None, content_type: str | None) -> str:
    parts = []
    if name is not None:
        parts.append(f"named {name!r}")
    if content_type is not None:
        parts.append(f"of type {content_type!r}")
    return " ".join(parts)


def pick_attachment(
    attachments: Sequence[Attachment],
    name: str | None,
    *,
    content_type: str | None,
    inline: bool,
    about: str,
) -> Attachment:
    """Return the one of a message's ``attachments`` that matches; see :meth:`Message.attachment`.

    ``about`` names the message in a failure (:func:`.failures.about`).
    """
    __tracebackhide__ = True
    counted = [item for item in attachments if inline or not item.inline]
    found = [
        item
        for item in counted
        if _matches(name, item.filename) and _matches(content_type, item.content_type)
    ]
    if len(found) == 1:
        return found[0]
    wanted = _wanted(name, content_type)
    if found:
        what = f"attachments {wanted}" if wanted else "attachments"
        lines = [f"{len(found)} {what} in {about}; expected one:"]
        lines += [_line(item) for item in found[:_LISTED]]
        lines.append("Narrow it down with name= or content_type=.")
        raise MailAssertionError("\n".join(lines))
    subject = f"no attachment {wanted}" if wanted else "no attachment"
    if not attachments:
        raise MailAssertionError(f"{subject} in {about}: it has no attachments at all.")
    total = len(attachments)
    lines = [f"{subject} in {about}; its {total} attachment(s):"]
    lines += [_line(item) for item in attachments[:_LISTED]]
    if total > _LISTED:
        lines.append(f"  ... and {total - _LISTED} more")
    hidden = [
        item
        for item in attachments
        if item.inline
        and _matches(name, item.filename)
        and _matches(content_type, item.content_type)
    ]
    if hidden and not inline:
        lines.append(f"{len(hidden)} inline part(s) match: pass inline=True to count inline parts.")
    raise MailAssertionError("\n".join(lines))
