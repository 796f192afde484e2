"""What a link check requests: a message's links and the sources of its images.

The message's ``links`` (its anchors and the URLs of its text body, as the
parser found them) and, from its HTML, each ``<img src>``, ``srcset`` entry,
``background`` attribute and CSS ``url()`` with an http(s) URL: a recipient's
mail program loads those too, and a broken logo is as visible as a broken
button. In the order first met, each once; ``cid:`` and ``data:`` sources are
the message's own and are left out.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable
from html.parser import HTMLParser

__all__ = ["image_sources", "link_targets"]

_CSS_URL = re.compile(r"""url\(\s*(['"]?)(.*?)\1\s*\)""", re.IGNORECASE)
_HTTP = re.compile(r"https?://", re.IGNORECASE)


class _Images(HTMLParser):
    """Collects the http(s) URLs an HTML page loads as images."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[str] = []
        self._in_style = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._in_style = tag == "style"
        for name, value in attrs:
            if value is None:
                continue
            if (tag in {"img", "input", "image"} and name == "src") or name == "background":
                self._add(value)
            elif name == "srcset":
                for candidate in value.split(","):
                    self._add(candidate.strip().split(" ")[0])
            elif name == "style":
                self._css(value)

    def handle_endtag(self, tag: str) -> None:
        if tag == "style":
            self._in_style = False

    def handle_data(self, data: str) -> None:
        if self._in_style:
            self._css(data)

    def _css(self, text: str) -> None:
        for match in _CSS_URL.finditer(text):
            self._add(html.unescape(match.group(2)))

    def _add(self, url: str) -> None:
        url = url.strip()
        if _HTTP.match(url):
            self.found.append(url)


def image_sources(page: str) -> list[str]:
    """The http(s) URLs that ``page`` (HTML) loads as images, in order, each once."""
    parser = _Images()
    try:
        parser.feed(page)
        parser.close()
    except Exception:  # html.parser copes with nearly anything; keep what it found
        pass
    return list(dict.fromkeys(parser.found))


def link_targets(links: Iterable[str], page: str | None) -> list[str]:
    """``links`` then the image sources of ``page`` (None: no HTML body), each once."""
    return list(dict.fromkeys([*links, *image_sources(page or "")]))
