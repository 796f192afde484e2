"""Finding the links and likely one-time codes in a message's decoded text.

Heuristics only, standard library only, no I/O. HTML bodies have their own
module, :mod:`pytest_tempinbox._html`, imported only for messages that have
one (html.parser and its patterns take milliseconds to import). Every
function here takes text that :mod:`pytest_tempinbox.parsing` already decoded
and never raises on it.

Each takes linear time. Those with a per-match loop in Python also take an
optional ``deadline``, a :func:`time.monotonic` value: once it has passed, they
stop and return what they found so far.
"""

from __future__ import annotations

import re
import time

__all__ = ["CLOCK_EVERY", "find_codes", "is_web_url", "late", "text_links"]

# Searching for the literal "://" and checking the scheme behind it is several
# times faster than a case-insensitive "https?://", and linear on any body.
_URL_REST = re.compile(r"://[^\s<>\"]+")
_TRAILING = ".,;:!?'\""
_OPENERS = {")": "(", "]": "[", "}": "{"}  # ">" already ends the match
#: Matches handled between two looks at the clock: a look costs about as much as
#: a match, and a few hundred matches take well under a millisecond.
CLOCK_EVERY = 256


def late(count: int, deadline: float | None) -> bool:
    """Tell whether ``deadline`` has passed; the clock is read every :data:`CLOCK_EVERY` counts."""
    return deadline is not None and not count % CLOCK_EVERY and time.monotonic() > deadline


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


def is_web_url(url: str) -> bool:
    """Tell whether ``url`` is an http(s) URL with something after the scheme."""
    scheme, _, rest = url.partition("://")
    return scheme.lower() in ("http", "https") and bool(rest.lstrip("/"))


def text_links(text: str, *, deadline: float | None = None) -> list[str]:
    """Return the http(s) URLs written in plain text, in order, duplicates included.

    Trailing sentence punctuation, quotes and unbalanced closing brackets are
    not part of the URL.
    """
    links = []
    for count, match in enumerate(_URL_REST.finditer(text), 1):
        if late(count, deadline):
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
        if is_web_url(url):
            links.append(url)
    return links


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
            if late(count, deadline):
                return list(codes)
            if _is_code(text, match.start(), match.end()):
                codes.setdefault(match.group(), None)
    return list(codes)
