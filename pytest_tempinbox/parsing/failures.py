"""Words for failure messages: how a message, a value and a body excerpt are named.

Shared by the lookups on a message (``link``, ``code``, ``attachment``) and the
inbox's waits, so that every failure names a message the same way. Standard
library only, no I/O.
"""

from __future__ import annotations

from typing import Protocol

from ..values import Address

__all__ = ["Bodies", "about", "excerpt", "shorten", "size_text"]


class Bodies(Protocol):
    """What :func:`excerpt` reads of a message: its text and HTML bodies."""

    @property
    def text(self) -> str | None:
        """The text body, if any."""

    @property
    def html(self) -> str | None:
        """The HTML body, if any."""


def shorten(text: str, limit: int = 80) -> str:
    """Return ``text`` cut to ``limit`` characters, ending in ``...`` when cut."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def about(subject: str, sender: Address | None, mail_from: str) -> str:
    """Name a message in a sentence: ``message 'Welcome' from app@example.com``.

    ``sender`` is its ``From``; without one, the envelope's ``mail_from`` names it.
    """
    named = str(sender) if sender else mail_from or "<>"
    return f"message {shorten(subject)!r} from {shorten(named)}"


def excerpt(message: Bodies, lines: int = 3, width: int = 100) -> list[str]:
    """The first non-blank lines of a message's text (or the HTML's visible text), shortened."""
    body = message.text
    if not body and message.html:
        from .html import html_text  # html.parser and its patterns: only for HTML mail

        body = html_text(message.html)
    found = [line.strip() for line in (body or "").splitlines() if line.strip()]
    shown = [shorten(line, width) for line in found[:lines]]
    if len(found) > lines:
        shown.append("...")
    return shown


def size_text(size: int) -> str:
    """A byte count for people: ``812 bytes``, ``3.4 KiB``, ``1.2 MiB``."""
    if size < 1024:
        return f"{size} byte" + ("" if size == 1 else "s")
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} KiB"
    return f"{size / (1024 * 1024):.1f} MiB"
