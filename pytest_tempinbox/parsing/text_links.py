"""Finding the links in a message's decoded text.

Heuristics only, standard library only, no I/O. HTML bodies have their own
module, :mod:`pytest_tempinbox.parsing.html`, imported only for messages that have
one (html.parser and its patterns take milliseconds to import); one-time codes
have theirs, :mod:`pytest_tempinbox.parsing.codes`. Every function here takes text
that :mod:`pytest_tempinbox.parsing.message` already decoded and never raises on it.

Each takes linear time. Those with a per-match loop in Python also take an
optional ``deadline`` and ``clock`` (see
:func:`pytest_tempinbox.parsing.budget.late`): once the clock reads past the
deadline, they stop and return what they found so far.
"""

from __future__ import annotations

import re
import time

from .budget import Clock, late

__all__ = ["is_web_url", "text_links"]

# Searching for the literal "://" and checking the scheme behind it is several
# times faster than a case-insensitive "https?://", and linear on any body.
_URL_REST = re.compile(r"://[^\s<>\"]+")
_TRAILING = ".,;:!?'\""
_OPENERS = {")": "(", "]": "[", "}": "{"}  # ">" already ends the match


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


def text_links(
    text: str, *, deadline: float | None = None, clock: Clock = time.monotonic
) -> list[str]:
    """Return the http(s) URLs written in plain text, in order, duplicates included.

    Trailing sentence punctuation, quotes and unbalanced closing brackets are
    not part of the URL.
    """
    links = []
    for count, match in enumerate(_URL_REST.finditer(text), 1):
        if late(count, deadline, clock):
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
