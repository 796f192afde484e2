"""Reading HTML bodies: the links a reader can click, and the text a reader sees.

Heuristics only, standard library only, no I/O; never raises on its input.
Imported by :mod:`pytest_tempinbox.parsing` only for a message with an HTML
body, because html.parser and these patterns take milliseconds to import and
most test mail is plain text.
"""

from __future__ import annotations

import contextlib
import re
from html import unescape as html_unescape
from html.parser import HTMLParser

from ._extract import CLOCK_EVERY, is_web_url, late

__all__ = ["html_links", "html_text"]

_URL_WHITESPACE = re.compile(r"[\t\n\r]")

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
                if is_web_url(url):
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
        for start in range(0, len(tags), CLOCK_EVERY):
            if start and late(start, deadline):
                break
            collector.feed("".join(tags[start : start + CLOCK_EVERY]))
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
