"""Picking the one link a test means, by the text of its anchor and by its URL.

Standard library only, no I/O: it reads the links that a message already holds
(:meth:`Message.link <pytest_tempinbox.models.Message.link>` passes them). When none or several
links pass, the failure lists every link of the message with its text, so
that the test's output shows what to ask for instead.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from ..errors import MailAssertionError
from ..values import Link
from .failures import shorten
from .match import collapse_space

__all__ = ["pick_link"]

_LISTED = 30  # links listed in a failure at most
# Decoration around a button's words: "Verify email address \u279c", "\u00ab Back", "Open!".
_DECORATION = re.compile(r"^[\W_]+|[\W_]+$")
_URL_WIDTH = 100
_TEXT_WIDTH = 60


class _Filters:
    """The filters of one call: each one given, in words and as a check on a link."""

    def __init__(
        self, text: str | None, contains: str | None, pattern: str | re.Pattern[str] | None
    ) -> None:
        self.folded = _text_key(text) if text is not None else None
        self.contains = contains
        self.pattern = re.compile(pattern) if isinstance(pattern, str) else pattern
        self.checks: list[tuple[str, Callable[[Link], bool]]] = []
        if text is not None:
            self.checks.append((f"text {shorten(text, _TEXT_WIDTH)!r}", self._has_text))
        if contains is not None:
            words = f"URL containing {shorten(contains, _URL_WIDTH)!r}"
            self.checks.append((words, self._contains))
        if self.pattern is not None:
            words = f"URL matching {shorten(self.pattern.pattern, _URL_WIDTH)!r}"
            self.checks.append((words, self._matches))

    def _has_text(self, link: Link) -> bool:
        return link.text is not None and _text_key(link.text) == self.folded

    def _contains(self, link: Link) -> bool:
        return self.contains is not None and self.contains in link.url

    def _matches(self, link: Link) -> bool:
        return self.pattern is not None and self.pattern.search(link.url) is not None

    def passes(self, link: Link) -> bool:
        return all(check(link) for _, check in self.checks)

    def wanted(self) -> str:
        """All the filters as one phrase: `` with text 'A' and URL containing 'b'``, or ``""``."""
        words = [word for word, _ in self.checks]
        if not words:
            return ""
        if len(words) == 1:
            return f" with {words[0]}"
        return f" with {', '.join(words[:-1])} and {words[-1]}"


def _text_key(text: str) -> str:
    """The form in which anchor texts are compared.

    Letter case, runs of white space, and the symbols and punctuation around the
    words (arrows, chevrons) do not matter.
    """
    folded = collapse_space(text).casefold()
    return _DECORATION.sub("", folded) or folded


def _line(link: Link) -> str:
    text = f"{shorten(link.text, _TEXT_WIDTH)!r} " if link.text is not None else ""
    return f"  - {text}({link.source}) {shorten(link.url, _URL_WIDTH)}"


def _url_line(url: str, anchors: list[Link]) -> str:
    """One URL with every anchor text it has (the same text in other case once) and its sources."""
    texts: dict[str, str] = {}
    for link in anchors:
        if link.text is not None:
            texts.setdefault(_text_key(link.text), link.text)
    shown = ", ".join(repr(shorten(text, _TEXT_WIDTH)) for text in texts.values())
    sources = ", ".join(dict.fromkeys(link.source for link in anchors))
    return f"  - {shown + ' ' if shown else ''}({sources}) {shorten(url, _URL_WIDTH)}"


def _listing(links: tuple[Link, ...] | list[Link]) -> list[str]:
    lines = [_line(link) for link in links[:_LISTED]]
    if len(links) > _LISTED:
        lines.append(f"  ... and {len(links) - _LISTED} more")
    return lines


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def _or(texts: list[str]) -> str:
    quoted = [repr(shorten(text, _TEXT_WIDTH)) for text in texts]
    return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"


def _text_hint(filters: _Filters, links: tuple[Link, ...]) -> str | None:
    """Anchor texts close to the one wanted, as ``did you mean ...?``, if any."""
    wanted = filters.folded
    if not wanted:
        return None
    texts = list(dict.fromkeys(link.text for link in links if link.text is not None))
    if not texts:
        if all(link.source == "text" for link in links):
            return "URLs written in the text body have no text: use contains= or pattern=."
        return "None of its links has a text: use contains= or pattern=."
    folded = {text: _text_key(text) for text in texts}
    if wanted in folded.values():
        return None  # the text is there: another filter left it out
    close = [
        text
        for text in texts
        if wanted in folded[text] or (len(folded[text]) > 2 and folded[text] in wanted)
    ]
    if not close:
        import difflib  # only when a test is failing

        matches = difflib.get_close_matches(wanted, list(folded.values()), n=3, cutoff=0.6)
        close = [text for text in texts if folded[text] in matches]
    return f"Did you mean {_or(close[:3])}?" if close else None


def _contains_hint(filters: _Filters, links: tuple[Link, ...]) -> str | None:
    """A URL that holds ``contains`` in another case, since URLs are compared as written."""
    if filters.contains is None:
        return None
    wanted = filters.contains.lower()
    other = next((link.url for link in links if wanted in link.url.lower()), None)
    if other is None:
        return None
    url = shorten(other, _URL_WIDTH)
    return f"URLs are compared case-sensitively; this one holds it in another case: {url}"


def _separately(filters: _Filters, links: tuple[Link, ...]) -> str | None:
    """With several filters, how many links each one passes alone."""
    if len(filters.checks) < 2:
        return None
    counts = [f"{word}: {sum(map(check, links))}" for word, check in filters.checks]
    return "Links passing each filter alone: " + "; ".join(counts) + "."


def pick_link(
    links: Sequence[Link],
    text: str | None = None,
    *,
    contains: str | None = None,
    pattern: str | re.Pattern[str] | None = None,
    about: str,
) -> str:
    """Return the one URL of a message's ``links`` passing the filters; see :meth:`Message.link`.

    ``about`` names the message in a failure (:func:`.failures.about`).
    """
    __tracebackhide__ = True
    filters = _Filters(text, contains, pattern)
    links = tuple(links)
    passing = [link for link in links if filters.passes(link)]
    urls = dict.fromkeys(link.url for link in passing)
    if len(urls) == 1:
        return next(iter(urls))
    wanted = filters.wanted()
    if urls:
        # One line per URL (the anchors that share it count as one), with all their texts.
        by_url: dict[str, list[Link]] = {}
        for link in passing:
            by_url.setdefault(link.url, []).append(link)
        lines = [f"{len(urls)} links{wanted} in {about}; expected one:"]
        lines += [_url_line(url, anchors) for url, anchors in list(by_url.items())[:_LISTED]]
        if len(by_url) > _LISTED:
            lines.append(f"  ... and {len(by_url) - _LISTED} more")
        unused = [
            name
            for name, value in (("text=", text), ("contains=", contains), ("pattern=", pattern))
            if value is None
        ]
        if unused:
            lines.append(f"Narrow it down with {' or '.join(unused)}.")
        raise MailAssertionError("\n".join(lines))
    if not links:
        raise MailAssertionError(f"no link{wanted} in {about}: it has no links at all.")
    lines = [f"no link{wanted} in {about}; its {_plural(len(links), 'link')}:"]
    lines += _listing(links)
    for hint in (
        _text_hint(filters, links),
        _contains_hint(filters, links),
        _separately(filters, links),
    ):
        if hint is not None:
            lines.append(hint)
    raise MailAssertionError("\n".join(lines))
