"""Which code-shaped words an HTML body sets apart: bold, a heading, a large or spaced font.

For :mod:`pytest_tempinbox.parsing.codes`, which counts such emphasis in a word's
favour; the words and lines around a word are read by
:mod:`pytest_tempinbox.parsing.code_context`. Standard library only, no I/O,
never raises. Each look reads a bounded window of tags before the word, and
:func:`emphasised`, one pass over the whole HTML, honours a ``deadline`` and
``clock`` as :func:`pytest_tempinbox.parsing.budget.late` does.
"""

from __future__ import annotations

import functools
import re
import time
from collections.abc import Callable

from .budget import Clock, late

__all__ = ["element_emphasis", "emphasised"]


def _lazy(pattern: str, flags: int = 0) -> Callable[[], re.Pattern[str]]:
    """A regular expression compiled when first needed: most mail has no HTML to read."""
    return functools.cache(lambda: re.compile(pattern, flags))


# Text that is all of an element's text, right before the next tag: "<b> 482913 </b>".
_TEXT_NODE = _lazy(r">\s*([0-9A-Z][0-9A-Z -]{2,18}[0-9A-Z])\s*</")
_EMPHASIS_TAGS = frozenset({"b", "strong", "h1", "h2", "h3", "code", "pre", "kbd", "samp", "tt"})
_TAG_NAME = _lazy(r"<([a-zA-Z][a-zA-Z0-9]*)")
_FONT_SIZE = _lazy(r"font-size\s*:\s*([\d.]+)\s*(px|pt|em|rem|%)?", re.I)
_LARGE = {"px": 20.0, "pt": 15.0, "em": 1.25, "rem": 1.25, "%": 125.0, "": 20.0}
_STYLE = _lazy(
    r"(letter-spacing\s*:\s*\.?[1-9]|letter-spacing\s*:\s*\d+\.\d*[1-9])"
    r"|font-family\s*:[^;>]*?(mono|courier|consolas|menlo)"
    r"|font-weight\s*:\s*(bold|bolder|[6-9]00)"
    r"|(?:class|id)\s*=\s*[\"']?[^\"'>]*?(code|otp|pin|token)",
    re.I,
)
_STYLE_NAMES = ("letter-spaced", "monospace", "bold", "class")


def _tag_emphasis(tag: str) -> str | None:
    name_match = _TAG_NAME().match(tag)
    if name_match is None:
        return None
    name = name_match.group(1).lower()
    if name in _EMPHASIS_TAGS:
        return f"<{name}>"
    size = _FONT_SIZE().search(tag)
    if size is not None:
        try:
            value = float(size.group(1))
        except ValueError:
            value = 0.0
        if value >= _LARGE[(size.group(2) or "").lower()]:
            return f"font-size {size.group(1)}{size.group(2) or ''}"
    style = _STYLE().search(tag)
    if style is not None:
        return next(
            label for label, group in zip(_STYLE_NAMES, style.groups(), strict=True) if group
        )
    return None


def element_emphasis(html: str, gt: int) -> str | None:
    """How the element whose text starts after ``html[gt] == ">"`` stands out, if it does.

    Looks at that element and up to three that hold only it: in ``<td
    style="font-size:32px"><span>482913</span></td>`` the cell makes it stand out.
    """
    end = gt + 1
    for _ in range(4):
        start = html.rfind("<", max(end - 2000, 0), end)
        if start < 0 or not html[start + 1 : start + 2].isalpha():
            return None  # a closing tag, a comment: the text is not a whole element's
        why = _tag_emphasis(html[start:end])
        if why is not None:
            return why
        end = start
        limit = max(end - 200, 0)
        while end > limit and html[end - 1].isspace():
            end -= 1
        if html[end - 1 : end] != ">":
            return None
    return None


def emphasised(html: str, deadline: float | None, clock: Clock = time.monotonic) -> dict[str, str]:
    """The code-shaped texts that are the whole text of an element that stands out."""
    found: dict[str, str] = {}
    for count, match in enumerate(_TEXT_NODE().finditer(html), 1):
        if late(count, deadline, clock):
            break
        text = match.group(1)
        if text not in found:
            why = element_emphasis(html, match.start())
            if why is not None:
                found[text] = why
    return found
