"""The site's MkDocs hook: each page's written-out Python reference, rendered by mkdocstrings.

A page keeps its reference as plain Markdown between ``<!-- api: name -->`` and
``<!-- end api -->`` so that it reads on GitHub (``docs/_ext/pages.py`` writes
it from the code). On the site, the region becomes the mkdocstrings directive
that the comment names, options and all, for the cross-linked rendering.
Loaded by mkdocs.yml (``hooks``); the site's build is its test.
"""

from __future__ import annotations

import re
from typing import Any

_API = re.compile(
    r"^<!-- api: (?P<name>[\w.]+)(?P<options>\n.*?)? -->\n.*?^<!-- end api -->$",
    re.MULTILINE | re.DOTALL,
)


def directive(match: re.Match[str]) -> str:
    """The ``::: name`` directive, with its options, that an api region stands for."""
    return f"::: {match.group('name')}{match.group('options') or ''}\n"


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    """Turn each api region of a page into its mkdocstrings directive."""
    return _API.sub(directive, markdown)
