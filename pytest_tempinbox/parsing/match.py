"""What the message filters ``subject``, ``sender`` and ``text`` mean, written once.

The client checks them on the messages it holds, and the server applies the
same rules to ``GET /api/messages/{email}?subject=&from=&text=``, so a filter
means one thing wherever it is evaluated. Standard library only, no I/O.

- ``subject``: the subject contains the text, case-sensitively.
- ``sender``: the ``From`` address (the address, not the display name)
  contains the text, case-insensitively, as addresses are compared.
- ``text``: the text body or the HTML body's visible text (tags dropped,
  entities decoded) contains the text, case-sensitively, with every run of
  white space on either side read as one space: a phrase wrapped over two
  lines of the text body, or split between two lines of HTML, is still found.

A compiled :class:`re.Pattern` given instead of a string is searched (never
case-folded by us; give ``re.IGNORECASE`` for that) in the same field; for
``text``, in the same white-space-collapsed form. Patterns are checked by the
client only: the server takes strings.
"""

from __future__ import annotations

import re

__all__ = [
    "Wanted",
    "collapse_space",
    "searchable_text",
    "sender_matches",
    "subject_matches",
    "text_matches",
]

Wanted = str | re.Pattern[str]
"""A filter's value: a string to be contained, or a compiled pattern to be searched."""

_SPACE = re.compile(r"\s+")


def collapse_space(text: str) -> str:
    """Return ``text`` with every run of white space made one space, and stripped."""
    return _SPACE.sub(" ", text).strip()


def subject_matches(wanted: Wanted, subject: str) -> bool:
    """Tell whether ``subject`` passes the ``subject`` filter ``wanted``."""
    if isinstance(wanted, str):
        return wanted in subject
    return wanted.search(subject) is not None


def sender_matches(wanted: Wanted, address: str | None) -> bool:
    """Tell whether the ``From`` address ``address`` (None: no From) passes ``wanted``."""
    if address is None:
        return False
    if isinstance(wanted, str):
        return wanted.lower() in address.lower()
    return wanted.search(address) is not None


def searchable_text(text: str | None, html: str | None) -> tuple[str, ...]:
    """The forms of a message's bodies that the ``text`` filter looks in, white space collapsed.

    The text body, then the HTML body's visible text; a body the message lacks
    is left out.
    """
    found = []
    if text:
        found.append(collapse_space(text))
    if html:
        from .html import html_text  # html.parser and its patterns: only for HTML mail

        found.append(collapse_space(html_text(html)))
    return tuple(found)


def text_matches(wanted: Wanted, searchable: tuple[str, ...]) -> bool:
    """Tell whether one of the :func:`searchable_text` forms passes the ``text`` filter."""
    if isinstance(wanted, str):
        needle = collapse_space(wanted)
        return any(needle in body for body in searchable)
    return any(wanted.search(body) is not None for body in searchable)
