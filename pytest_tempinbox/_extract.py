"""Finding the links and likely one-time codes in a message's decoded bodies.

Heuristics only, standard library only, no I/O. Every function here takes text
that :mod:`pytest_tempinbox.parsing` already decoded and never raises on it.

Each takes linear time. Those with a per-match loop in Python also take an
optional ``deadline``, a :func:`time.monotonic` value: once it has passed, they
stop and return what they found so far.
"""

from __future__ import annotations

import contextlib
import re
import time
from html import unescape as html_unescape
from html.parser import HTMLParser

__all__ = ["find_codes", "html_links", "html_text", "text_links"]

# Searching for the literal "://" and checking the scheme behind it is several
# times faster than a case-insensitive "https?://", and linear on any body.
_URL_REST = re.compile(r"://[^\s<>\"]+")
_TRAILING = ".,;:!?'\""
_OPENERS = {")": "(", "]": "[", "}": "{"}  # ">" already ends the match
_URL_WHITESPACE = re.compile(r"[\t\n\r]")
# Matches handled between two looks at the clock: a look costs about as much as
# a match, and a few hundred matches take well under a millisecond.
_CLOCK_EVERY = 256


def _late(count: int, deadline: float | None) -> bool:
    return deadline is not None and not count % _CLOCK_EVERY and time.monotonic() > deadline


def _trim_url(url: str) -> str:
    # Prose puts punctuation and closing brackets right after a URL; a closing
    # bracket that the URL itself opened (Wikipedia's "Foo_(bar)") stays. Counts
    # are kept, not recounted, so a URL ending in 100,000 ")" costs linear time.
    unmatched = {close: url.count(close) - url.count(open_) for close, open_ in _OPENERS.items()}
    end = len(url)
    while end:
        last = url[end - 1]
        if last in _TRAILING:
            end -= 1
        elif unmatched.get(last, 0) > 0:
            unmatched[last] -= 1
            end -= 1
        else:
            break
    return url[:end]


def _is_web_url(url: str) -> bool:
    scheme, _, rest = url.partition("://")
    return scheme.lower() in ("http", "https") and bool(rest.lstrip("/"))


def text_links(text: str, *, deadline: float | None = None) -> list[str]:
    """Return the http(s) URLs written in plain text, in order, duplicates included.

    Trailing sentence punctuation, quotes and unbalanced closing brackets are
    not part of the URL.
    """
    links = []
    for count, match in enumerate(_URL_REST.finditer(text), 1):
        if _late(count, deadline):
            break
        rest = match.start()
        scheme = text[max(rest - 5, 0) : rest].lower()
        if scheme == "https":
            start = rest - 5
        elif scheme.endswith("http"):
            start = rest - 4
        else:
            continue  # another scheme
        if start > 0 and (text[start - 1].isalnum() or text[start - 1] == "_"):
            continue  # "http" glued to a word is not a URL of its own
        url = _trim_url(text[start : match.end()])
        if _is_web_url(url):
            links.append(url)
    return links


# Their content is not shown to the reader: codes and links found there are noise.
# Each branch always matches once started (``\Z``), so the scan stays linear.
_HIDDEN_HTML = re.compile(
    r"<!--.*?(?:-->|\Z)|<(script|style|template|title)\b.*?(?:</\1\s*>|\Z)",
    re.IGNORECASE | re.DOTALL,
)
# html.parser takes quadratic time on some broken markup (thousands of unclosed
# tags) and costs more than the rest of parsing a message put together, so it
# only ever sees the <a>/<area> tags cut out by this pattern. No branch can
# cross a "<", which keeps every attempt short and the whole scan linear.
_LINK_TAG = re.compile(r"<(?:a|area)\b(?:\"[^\"<]*\"|'[^'<]*'|[^'\"<>])*>", re.IGNORECASE)
_TAG = re.compile(
    r"<(/?[a-zA-Z][a-zA-Z0-9]*)(?:(?:\"[^\"<]*\"|'[^'<]*'|[^'\"<>])*|[^<>]*)>|<[!?][^<>]*>"
)
# Without a break at these, "<td>1234</td><td>5678</td>" would read as one number;
# inline tags add none because some senders wrap each digit of a code in a <span>.
_BLOCK_TAGS = frozenset(
    {
        *("address", "article", "aside", "blockquote", "br", "dd", "div", "dl", "dt"),
        *("footer", "h1", "h2", "h3", "h4", "h5", "h6", "header", "hr", "img", "li"),
        *("ol", "p", "pre", "section", "table", "tbody", "td", "tfoot", "th", "thead"),
        *("tr", "ul"),
    }
)


class _LinkCollector(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in ("a", "area"):
            return
        for name, value in attrs:
            if name == "href" and value:
                # Browsers drop tabs and newlines inside URLs; wrapped hrefs have them.
                url = _URL_WHITESPACE.sub("", value).strip()
                if _is_web_url(url):
                    self.links.append(url)
                return


def html_links(html: str, *, deadline: float | None = None) -> list[str]:
    """Return the http(s) ``href`` targets of the ``<a>`` and ``<area>`` tags of an HTML body.

    In order, duplicates included, entities decoded. Tags inside comments,
    ``<script>``, ``<style>``, ``<template>`` and ``<title>`` do not count.
    """
    # A logo, a button and a text link often repeat one tag; parse it once.
    tags = list(dict.fromkeys(_LINK_TAG.findall(_HIDDEN_HTML.sub(" ", html))))
    if not tags:
        return []
    collector = _LinkCollector()
    # html.parser raises on some malformed markup; keep what it found until then.
    with contextlib.suppress(Exception):
        for start in range(0, len(tags), _CLOCK_EVERY):
            if start and _late(start, deadline):
                break
            collector.feed("".join(tags[start : start + _CLOCK_EVERY]))
        collector.close()
    return collector.links


def _tag_break(match: re.Match[str]) -> str:
    name = (match.group(1) or "").lstrip("/").lower()
    return "\n" if name in _BLOCK_TAGS else ""


def html_text(html: str) -> str:
    """Return the text of an HTML body a reader would see, entities decoded.

    Tags are dropped, leaving a line break for block-level ones; comments,
    ``<script>``, ``<style>``, ``<template>`` and ``<title>`` are dropped with
    their content. A ``<`` that starts no tag is text.
    """
    return html_unescape(_TAG.sub(_tag_break, _HIDDEN_HTML.sub(" ", html)))


_MONTH = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?"
# What may precede a year that is not a code: "Nov 22, ", "22 November ", "© ".
# Searched only in the few characters before a 4-digit candidate: blanking such
# things out of a whole body with a regex costs more than the rest of parsing.
_BEFORE_YEAR = re.compile(
    rf"(?:{_MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?,?|\d{{1,2}}(?:st|nd|rd|th)?\s+{_MONTH},?"
    r"|©|\(c\)|copyright|(?:©|\(c\)|copyright)\s*\d{4}\s*[-\u2013])\s*\Z",
    re.IGNORECASE,
)
_CANDIDATE = re.compile(r"\b[0-9A-Z]{4,10}\b")
_JOINERS = "-.,:/"
_CURRENCY = "$€£¥"
_WINDOW = 256  # longer whitespace-free runs are cut here; a code in one is unlikely


def _chunk(text: str, start: int, end: int) -> str:
    """Return the whitespace-separated chunk of ``text`` around ``text[start:end]``."""
    left = text[max(start - _WINDOW, 0) : start]
    right = text[end : end + _WINDOW]
    head = left.rsplit(None, 1)[-1] if left and not left[-1].isspace() else ""
    tail = right.split(None, 1)[0] if right and not right[0].isspace() else ""
    return head + text[start:end] + tail


def _is_code(text: str, start: int, end: int) -> bool:
    token = text[start:end]
    if token.isdigit():
        if len(token) > 8:
            return False
        joinable = str.isdigit
    elif len(token) < 6 or token.isalpha():
        return False
    else:
        joinable = str.isalnum
    before = text[start - 1] if start > 0 else " "
    after = text[end] if end < len(text) else " "
    if "/" in (before, after):
        return False  # a path segment or a numeric date
    if before in _JOINERS and start > 1 and joinable(text[start - 2]):
        return False
    if after in _JOINERS and end + 1 < len(text) and joinable(text[end + 1]):
        return False
    if token.isdigit() and before in _CURRENCY:
        return False
    chunk = _chunk(text, start, end)
    if "://" in chunk or "@" in chunk or chunk[:4].lower() == "www.":
        return False  # part of a URL or an email address
    return not (len(token) == 4 and _BEFORE_YEAR.search(text, max(start - 32, 0), start))


def find_codes(*texts: str, deadline: float | None = None) -> list[str]:
    """Return the likely one-time codes in ``texts``, unique, in order of appearance.

    A code is a standalone word (not touching another letter, digit or ``_``)
    that is either 4-8 ASCII digits, or 6-10 uppercase ASCII letters and digits
    with at least one of each. Left out, because they are not codes:

    - anything in a whitespace-separated chunk holding ``://`` or ``@`` or
      starting with ``www.`` (URLs, email addresses);
    - words next to ``/`` (paths, ``11/22/2026``);
    - digit words joined by ``-``, ``.``, ``,`` or ``:`` to another digit
      (``3.14159``, ``1,000,000``, ``2026-11-22``, ``12:30:45``, ``555-1234``),
      and digit words right after a currency sign (``$1234``);
    - mixed words joined by one of those to another letter or digit (``INV-AB12CD``);
    - years in written dates (``Nov 22, 2026``, ``22 November 2026``) and
      copyright lines (``© 2026``, ``(c) 2020 - 2026``).

    ``G-123456`` gives ``123456``: a digit word joined to letters is still a code.
    """
    codes: dict[str, None] = {}
    count = 0
    for text in texts:
        for match in _CANDIDATE.finditer(text):
            count += 1
            if _late(count, deadline):
                return list(codes)
            if _is_code(text, match.start(), match.end()):
                codes.setdefault(match.group(), None)
    return list(codes)
