"""Reading HTML bodies: the links a reader can click, and the text a reader sees.

Heuristics only, standard library only, no I/O; never raises on its input.
Imported by :mod:`pytest_tempinbox.parsing.message` only for a message with an HTML
body, because html.parser and these patterns take milliseconds to import and
most test mail is plain text.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from html import unescape as html_unescape
from html.parser import HTMLParser

from .budget import Clock, late
from .text_links import is_web_url

__all__ = ["html_anchors", "html_links", "html_text"]

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
# Most tags in mail hold nothing but quoted name="value" attributes. Those are read
# with these, to the same result as html.parser's, in a fifth of its time.
_PLAIN_LINK_TAG = re.compile(
    r"<(a|area)((?:\s+[a-zA-Z_:][-a-zA-Z0-9_:.]*\s*=\s*(?:\"[^\"<]*\"|'[^'<]*'))*)\s*>",
    re.IGNORECASE,
)
_PLAIN_ATTRIBUTE = re.compile(r"([^\s=]+)\s*=\s*(?:\"([^\"]*)\"|'([^']*)')")
# Where an anchor's content ends: its </a>, or the next <a> or <area>, where
# browsers close an unclosed one. The contents found never overlap, so reading
# them all is linear; an anchor's is read up to _ANCHOR_WINDOW characters.
_ANCHOR_END = re.compile(r"</?a(?:rea)?\b", re.IGNORECASE)
_ANCHOR_WINDOW = 8192
# Characters of an anchor's text kept; a longer one ends in "\u2026". Generous: some
# senders make the URL itself the text, and real URLs with tokens run to 1,000 and more.
_TEXT_LIMIT = 2048
_IMG_TAG = re.compile(r"<img\b(?:\"[^\"<]*\"|'[^'<]*'|[^'\"<>])*>", re.IGNORECASE)
# An attribute of a tag, as html.parser reads them: the name, then the value as written.
_ATTRIBUTE = re.compile(r"""([^\s"'<>/=]+)(?:\s*=\s*("[^"]*"|'[^']*'|[^\s>]*))?""")
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


_Found = tuple[str, bool, str | None]  # a link's URL, whether its tag is an <area>, its alt


def _found(tag: str, attrs: Sequence[tuple[str, str | None]]) -> _Found | None:
    """The link of a start tag, from its lowercase name and its attributes, decoded."""
    if tag not in ("a", "area"):
        return None
    for name, value in attrs:
        if name == "href" and value:
            # Browsers drop tabs and newlines inside URLs; wrapped hrefs have them.
            url = value.strip()
            if "\n" in url or "\t" in url or "\r" in url:
                url = _URL_WHITESPACE.sub("", url)
            if not is_web_url(url):
                return None
            if tag == "a":
                return url, False, None
            return url, True, next((v for n, v in attrs if n == "alt" and v), None)
    return None


class _LinkReader(HTMLParser):
    """Reads the links of the ``<a>`` and ``<area>`` tags it is fed, one tag at a time."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[_Found] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if (link := _found(tag, attrs)) is not None:
            self.found.append(link)

    def read(self, tag: str) -> list[_Found]:
        """Return the links of one tag (usually one or none)."""
        plain = _PLAIN_LINK_TAG.fullmatch(tag)
        if plain is not None:
            attrs = [
                (name.lower(), html_unescape(double or single))
                for name, double, single in _PLAIN_ATTRIBUTE.findall(plain.group(2))
            ]
            link = _found(plain.group(1).lower(), attrs)
            return [] if link is None else [link]
        known = len(self.found)
        self.feed(tag)
        return self.found[known:]


def _one_line(text: str) -> str | None:
    """``text`` with its white space collapsed and cut to length, or None if it is blank."""
    text = " ".join(text.split())
    if len(text) > _TEXT_LIMIT:
        text = text[: _TEXT_LIMIT - 1].rstrip() + "\u2026"
    return text or None


def _visible_text(markup: str) -> str | None:
    """The text of a piece of markup, on one line, or None if it has none."""
    if "<" in markup:
        markup = _TAG.sub(_tag_break, markup)
    return _one_line(html_unescape(markup) if "&" in markup else markup)


def _anchor_text(content: str) -> str | None:
    """The text of an anchor's content; if it has none, the ``alt`` of its images."""
    # A linked image alone (a logo, a social icon) is common, and quicker read as such.
    image = _IMG_TAG.fullmatch(content.strip()) if "<img" in content else None
    if image is not None:
        images = [image.group()]
    else:
        text = _visible_text(content)
        if text is not None or "<" not in content:
            return text
        images = _IMG_TAG.findall(content)
    alts = []
    for image_tag in images:
        for name, value in _ATTRIBUTE.findall(image_tag, 4):
            if name.lower() == "alt":
                alts.append(value[1:-1] if value[:1] in "\"'" and len(value) > 1 else value)
                break
    return _visible_text(" ".join(alts))


def html_anchors(
    html: str, *, deadline: float | None = None, clock: Clock = time.monotonic
) -> list[tuple[str, str | None]]:
    """Return the links of an HTML body with their text: ``(url, text)`` in document order.

    The URL is an http(s) ``href`` of an ``<a>`` or ``<area>``, entities
    decoded; duplicates are kept (a logo and a button often share one). The
    text is what a reader sees of the anchor: its content up to its ``</a>``
    (or the next ``<a>``, where browsers close an unclosed one), tags dropped,
    entities decoded, white space collapsed, cut at 2,048 characters; else the
    ``alt`` text of the images in it; for an ``<area>``, its ``alt``. None when
    there is no such text. Tags inside comments, ``<script>``, ``<style>``,
    ``<template>`` and ``<title>`` do not count.
    """
    visible = _HIDDEN_HTML.sub(" ", html)
    reader: _LinkReader | None = _LinkReader()
    # A logo, a button and a text link often repeat one tag; parse it once.
    read: dict[str, list[_Found]] = {}
    anchors: list[tuple[str, str | None]] = []
    for count, match in enumerate(_LINK_TAG.finditer(visible)):
        if count and late(count, deadline, clock):
            break
        tag = match.group()
        links = read.get(tag)
        if links is None:
            links = []
            if reader is not None:
                try:
                    links = reader.read(tag)
                except Exception:  # html.parser raises on some malformed markup
                    reader = None  # keep what it read until then, as it may be confused
            read[tag] = links
        if not links:
            continue
        end = match.end()
        text: str | None = None
        if not links[0][1]:  # an <a>, not an <area>
            stop = _ANCHOR_END.search(visible, end, end + _ANCHOR_WINDOW)
            content = visible[end : stop.start() if stop else end + _ANCHOR_WINDOW]
            if stop is None and content.rfind("<") > content.rfind(">"):
                content = content[: content.rfind("<")]  # a tag the window cut in two
            text = _anchor_text(content)
        for url, is_area, alt in links:
            anchors.append((url, _one_line(alt) if is_area and alt else text))
    return anchors


def html_links(
    html: str, *, deadline: float | None = None, clock: Clock = time.monotonic
) -> list[str]:
    """Return the http(s) ``href`` targets of the ``<a>`` and ``<area>`` tags of an HTML body.

    In order, duplicates included, entities decoded: the URLs of
    :func:`html_anchors`.
    """
    return [url for url, _ in html_anchors(html, deadline=deadline, clock=clock)]


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
