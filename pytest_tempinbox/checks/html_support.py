"""Which email clients render a message's HTML: its features checked against caniemail.com's data.

:func:`html_compatibility` reads the HTML with the standard library's
:class:`html.parser.HTMLParser` (never raising: real mail is messy) and finds
each feature of caniemail.com's database that it uses: HTML elements and
attributes, an element with a given attribute (``<input type="checkbox">``,
``mailto:`` links), CSS properties, values (``display:flex``), functions,
units, ``!important``, at-rules and media features, selectors (in ``<style>``
blocks), and image formats (by file extension or ``data:`` type). CSS is read
from ``style=""`` attributes and ``<style>`` elements; the content of HTML
comments (Outlook's conditional comments included) and scripts is not.
:func:`assert_html_support` turns a score below a target into a
:class:`~pytest_tempinbox.errors.MailAssertionError` naming the features that
hold the message back.

The data (``caniemail.json`` beside this module, MIT, see
``caniemail-LICENSE``) is regenerated from the ``caniemail`` npm package by
``scripts/refresh_caniemail.py``. A client is a *platform* of a *family*,
named with caniemail's own keys as ``family.platform``: ``gmail.android``,
``outlook.windows``, ``apple-mail.ios`` (:func:`client_names` lists them).
Each platform's support for a feature is caniemail's verdict for the
last-listed (newest) version it tested there: ``y`` supported, ``a`` partial,
``n`` not; a platform caniemail did not test, or marked unknown, does not
count either way.

Weighting, as Mailpit's HTML check weighs it (so that the two tools' figures
compare). A feature's ``unsupported`` and ``partial`` shares are the shares of
the selected platforms with a verdict that lack it or support it in part; each
is weighted by how much of the message uses the feature: ``found`` (the
elements that use it; once for each ``<style>`` block that does) over
``nodes`` (the message's elements but ``html``, ``head`` and ``meta``), at most
1. The overall ``unsupported`` and ``partial`` are the largest weighted shares
of any one feature, and ``score`` (supported) is 100 less both: a message is as
good as its worst widespread feature, not the sum of many rare ones. A
feature's ``loss`` is its weighted unsupported and partial shares together:
the features are listed by it, worst first. Where Mailpit counts every
version caniemail tested, each platform counts once here, by its newest
verdict. HTML with no feature caniemail knows, and the empty string, score 100%.

``clients`` selects platforms: a family (``"gmail"``), a platform
(``"outlook.windows"``), or a glob over ``family.platform`` (``"*.ios"``).

The module is long because it holds a small CSS reader (rules, declarations,
selectors) beside the HTML walk and the report; they only make sense together.
"""

from __future__ import annotations

import fnmatch
import functools
import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from html.parser import HTMLParser
from importlib import resources
from typing import Any

from ..errors import InvalidRequest, MailAssertionError

__all__ = [
    "FeatureSupport",
    "HtmlCompatibility",
    "assert_html_support",
    "client_names",
    "html_compatibility",
]

JSON = dict[str, Any]
Use = tuple[str, str]
"""What the message uses: a kind of feature and the token that names it, ``("css-unit", "px")``."""

SHOWN_FEATURES = 10
"""Features listed in an assertion's message; the rest are counted."""
SHOWN_CLIENTS = 8
"""Platforms named per feature in an assertion's message; the rest are counted."""

_VENDOR = re.compile(r"^-(?:webkit|moz|ms|o)-")
_PROPERTY = re.compile(r"[a-z][a-z0-9-]*")
_SPECIAL = re.compile(r"[{};()\"'\\]")
_COMMENT = re.compile(r"/\*.*?(?:\*/|$)", re.S)
_URL = re.compile(r"url\(\s*(['\"]?)(.*?)\1\s*\)", re.I | re.S)
_STRING = re.compile(r"\"[^\"]*\"|'[^']*'")
_FUNCTION = re.compile(r"(-?[a-z][a-z0-9-]*)\(")
_UNIT = re.compile(r"(?<![\w#.-])[-+]?(?:\d+\.?\d*|\.\d+)(%|[a-z]+)")
_WORDS = re.compile(r"[\s,/()]+")
_IMPORTANT = re.compile(r"!\s*important")
_AT_RULE = re.compile(r"@(-?[a-z][a-z0-9-]*)", re.I)
_MEDIA_FEATURE = re.compile(r"\(\s*(-?[a-z][a-z0-9-]*)", re.I)
_PSEUDO = re.compile(r"(::?)(-?[a-z][a-z0-9-]*)(\([^)]*\))?", re.I)
_LEGACY_PSEUDO_ELEMENTS = {"after", "before", "first-letter", "first-line"}
_GROUPING_AT_RULES = {"media", "supports", "document", "layer", "container"}
_DECLARATION_AT_RULES = {"font-face", "page", "viewport"}
_NOT_COUNTED = {"html", "head", "meta"}  # the elements that are not the mail's, as Mailpit counts


@dataclass(frozen=True)
class _Data:
    """The vendored data, indexed for lookups."""

    clients: tuple[str, ...]
    features: Mapping[str, Mapping[str, Any]]
    source: str
    index: Mapping[Use, tuple[str, ...]]
    prefixes: tuple[tuple[str, str], ...]  # (property prefix, slug), longest first
    attribute_rules: Mapping[
        str, tuple[tuple[str, str, str, str], ...]
    ]  # tag -> (attr, op, value, token)


@functools.cache
def _data() -> _Data:
    raw = json.loads(resources.files(__package__).joinpath("caniemail.json").read_text("utf-8"))
    index: dict[Use, list[str]] = {}
    prefixes: list[tuple[str, str]] = []
    rules: dict[str, list[tuple[str, str, str, str]]] = {}
    for slug, feature in raw["features"].items():
        kind = feature["kind"]
        for token in feature["match"]:
            if kind == "css-property" and token.endswith("-*"):
                prefixes.append((token[:-1], slug))
                continue
            if kind == "html-element-attribute":
                found = re.fullmatch(r"(\w+)\[([^\]=^]+)(?:(\^?=)(.*))?\]", token)
                if found:
                    tag, attribute, op, value = found.groups()
                    rules.setdefault(tag, []).append((attribute, op or "", value or "", token))
            index.setdefault((kind, token), []).append(slug)
    source = raw["source"]
    return _Data(
        clients=tuple(raw["clients"]),
        features=raw["features"],
        source=f"caniemail {source['package_version']}, data of {source['last_update_date'][:10]}",
        index={use: tuple(slugs) for use, slugs in index.items()},
        prefixes=tuple(sorted(prefixes, key=lambda pair: -len(pair[0]))),
        attribute_rules={tag: tuple(found) for tag, found in rules.items()},
    )


def client_names() -> tuple[str, ...]:
    """Every client platform caniemail tests, as ``family.platform``, sorted."""
    return _data().clients


def _selected(clients: Iterable[str] | str | None) -> tuple[str, ...]:
    """The platforms ``clients`` names (see the module), in the data's order."""
    known = _data().clients
    if clients is None:
        return known
    names = [clients] if isinstance(clients, str) else list(clients)
    chosen: set[str] = set()
    for name in names:
        pattern = name.strip().lower()
        found = {
            client
            for client in known
            if fnmatch.fnmatchcase(client, pattern) or client.partition(".")[0] == pattern
        }
        if not found:
            families = sorted({client.partition(".")[0] for client in known})
            raise InvalidRequest(
                f"no email client is named {name!r}: give a family ({', '.join(families)}), "
                "a platform such as 'outlook.windows', or a glob such as '*.ios'"
            )
        chosen |= found
    if not chosen:
        raise InvalidRequest("clients names no email client: give None for all of them")
    return tuple(client for client in known if client in chosen)


@dataclass(frozen=True)
class FeatureSupport:
    """One feature the message uses that some selected client does not (fully) support.

    ``score`` is the share (percent) of the platforms with a verdict that
    fully support it; ``loss`` the points it weighs against the overall score
    (see the module); ``tested`` how many selected platforms caniemail has a
    verdict for; ``found`` how many of the message's elements use it.
    ``unsupported`` and ``partial`` name platforms as ``family.platform``.
    """

    slug: str
    title: str
    url: str
    kind: str
    score: float
    loss: float
    tested: int
    unsupported: tuple[str, ...]
    partial: tuple[str, ...]
    found: int = 1

    def to_json(self) -> JSON:
        """Return the JSON object form."""
        return {
            "slug": self.slug,
            "title": self.title,
            "url": self.url,
            "kind": self.kind,
            "score": self.score,
            "loss": self.loss,
            "tested": self.tested,
            "unsupported": list(self.unsupported),
            "partial": list(self.partial),
            "found": self.found,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> FeatureSupport:
        """Build a feature's support from its JSON object form."""
        return cls(
            slug=data["slug"],
            title=data["title"],
            url=data["url"],
            kind=data["kind"],
            score=float(data["score"]),
            loss=float(data["loss"]),
            tested=int(data["tested"]),
            unsupported=tuple(data["unsupported"]),
            partial=tuple(data["partial"]),
            found=int(data.get("found", 1)),
        )


@dataclass(frozen=True)
class HtmlCompatibility:
    """How well the selected email clients support a message's HTML.

    ``score`` is the overall percentage supported, ``partial`` and
    ``unsupported`` the rest (see the module for the weighting); ``features``
    the features that some selected client does not fully support, worst
    (highest ``loss``) first; ``used`` maps the slug of every caniemail feature
    the HTML uses, supported or not, to how many elements use it; ``nodes``
    counts the message's elements; ``clients`` the platforms weighed;
    ``source`` the data's version.
    """

    score: float
    features: tuple[FeatureSupport, ...]
    used: Mapping[str, int]
    clients: tuple[str, ...]
    source: str
    nodes: int = 0
    partial: float = 0.0
    unsupported: float = 0.0

    def for_clients(self, clients: Iterable[str] | str | None) -> HtmlCompatibility:
        """The same HTML's report for other clients, scored again from ``used``."""
        return _report(self.used, self.nodes, _selected(clients))

    def to_json(self) -> JSON:
        """Return the JSON object form."""
        return {
            "score": self.score,
            "partial": self.partial,
            "unsupported": self.unsupported,
            "features": [feature.to_json() for feature in self.features],
            "used": dict(self.used),
            "nodes": self.nodes,
            "clients": list(self.clients),
            "source": self.source,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> HtmlCompatibility:
        """Build a report from its JSON object form."""
        return cls(
            score=float(data["score"]),
            features=tuple(FeatureSupport.from_json(item) for item in data["features"]),
            used=dict(data["used"]),
            clients=tuple(data["clients"]),
            source=data["source"],
            nodes=int(data.get("nodes", 0)),
            partial=float(data.get("partial", 0.0)),
            unsupported=float(data.get("unsupported", 0.0)),
        )


def html_compatibility(
    html: str, *, clients: Iterable[str] | str | None = None
) -> HtmlCompatibility:
    """Check ``html`` against caniemail.com's data for ``clients`` (all of them by default).

    Never raises on malformed HTML or CSS; raises
    :class:`~pytest_tempinbox.errors.InvalidRequest` when ``clients`` names no
    known client.
    """
    selected = _selected(clients)
    found, nodes = _used_features(html)
    return _report(found, nodes, selected)


def assert_html_support(
    report: HtmlCompatibility,
    at_least: float = 90.0,
    *,
    clients: Iterable[str] | str | None = None,
) -> None:
    """Fail unless ``report`` scores ``at_least`` percent (for ``clients``, when given).

    Raises :class:`~pytest_tempinbox.errors.MailAssertionError` listing the
    features that hold the message back, worst first, with the points each
    costs, the platforms that lack it and its caniemail page.
    """
    if clients is not None:
        report = report.for_clients(clients)
    if report.score >= at_least:
        return
    lines = [
        f"expected the message's HTML to score at least {at_least:g}% of support across "
        f"{len(report.clients)} email client platforms, found {report.score:g}% "
        f"({report.source}).",
        "Features that hold it back, worst first (the share of clients lacking each, weighted "
        "by how much of the mail uses it, in points; the worst sets the score):",
    ]
    for feature in report.features[:SHOWN_FEATURES]:
        lines.append(
            f"  - {feature.title} [{feature.slug}]: -{feature.loss:g} points "
            f"(on {feature.found} of {report.nodes} elements); "
            f"fully supported by {feature.score:g}% of {feature.tested} platforms"
            + _named("; not supported by", feature.unsupported)
            + _named("; partly by", feature.partial)
        )
        lines.append(f"    {feature.url}")
    if len(report.features) > SHOWN_FEATURES:
        lines.append(f"  ... and {len(report.features) - SHOWN_FEATURES} more")
    lines.append(
        "Likely cause: the HTML uses elements or CSS that these clients drop or render "
        "differently; a table layout with inline styles of widely supported properties "
        "reaches the most, or pass clients=[...] to weigh only those your recipients use."
    )
    raise MailAssertionError("\n".join(lines))


def _named(label: str, clients: tuple[str, ...]) -> str:
    if not clients:
        return ""
    shown = ", ".join(clients[:SHOWN_CLIENTS])
    more = f" (+{len(clients) - SHOWN_CLIENTS} more)" if len(clients) > SHOWN_CLIENTS else ""
    return f"{label} {shown}{more}"


def _report(used: Mapping[str, int], nodes: int, selected: tuple[str, ...]) -> HtmlCompatibility:
    data = _data()
    positions = [data.clients.index(client) for client in selected]
    found = {slug: count for slug, count in used.items() if slug in data.features}
    features = []
    worst_unsupported = worst_partial = 0.0
    for slug in sorted(found):
        support = data.features[slug]["support"]
        verdicts = [(data.clients[at], support[at]) for at in positions if support[at] in "yan"]
        unsupported = [client for client, verdict in verdicts if verdict == "n"]
        partial = [client for client, verdict in verdicts if verdict == "a"]
        if not (unsupported or partial):
            continue
        tested = len(verdicts)
        weight = min(1.0, found[slug] / nodes) if nodes else 1.0
        weighted_unsupported = 100 * len(unsupported) / tested * weight
        weighted_partial = 100 * len(partial) / tested * weight
        worst_unsupported = max(worst_unsupported, weighted_unsupported)
        worst_partial = max(worst_partial, weighted_partial)
        feature = data.features[slug]
        features.append(
            FeatureSupport(
                slug=slug,
                title=feature["title"],
                url=feature["url"],
                kind=feature["kind"],
                score=round(100 * (tested - len(unsupported) - len(partial)) / tested, 2),
                loss=round(weighted_unsupported + weighted_partial, 2),
                tested=tested,
                unsupported=tuple(unsupported),
                partial=tuple(partial),
                found=found[slug],
            )
        )
    features.sort(key=lambda feature: (-feature.loss, feature.slug))
    return HtmlCompatibility(
        score=round(100 - worst_unsupported - worst_partial, 2),
        features=tuple(features),
        used=dict(sorted(found.items())),
        clients=selected,
        source=data.source,
        nodes=nodes,
        partial=round(worst_partial, 2),
        unsupported=round(worst_unsupported, 2),
    )


def _used_features(html: str) -> tuple[Counter[str], int]:
    """The caniemail features ``html`` uses, each with how many elements use it; its elements."""
    if not html:
        return Counter(), 0
    reader = _Reader()
    try:
        reader.feed(html)
        reader.close()
    except Exception:  # broken markup can trip the stdlib parser: keep what was read
        pass
    for css in reader.stylesheets:
        found: set[Use] = set()
        _scan_stylesheet(css, found)
        reader.counts.update(found)
    data = _data()
    slugs: Counter[str] = Counter()
    for use, count in reader.counts.items():
        named = data.index.get(use)
        if named:
            for slug in named:
                slugs[slug] += count
        elif use[0] == "css-property":
            for prefix, slug in data.prefixes:
                if use[1].startswith(prefix):
                    slugs[slug] += count
                    break
    return slugs, reader.nodes


class _Reader(HTMLParser):
    """Collects what the HTML uses; keeps ``<style>`` contents for the CSS reader."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.counts: Counter[Use] = Counter()
        self.nodes = 0
        self.stylesheets: list[str] = []
        self._in_style = False
        self._rules = _data().attribute_rules

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        uses: set[Use] = {("html-element", tag)}
        if tag not in _NOT_COUNTED:
            self.nodes += 1
        values: dict[str, str] = {}
        for name, value in attrs:
            uses.add(("html-attribute", name))
            values.setdefault(name, value or "")
        if tag == "style":
            self._in_style = True
        style = values.get("style")
        if style:
            uses.update(_inline_uses(style))
        for attribute in ("src", "background"):
            if values.get(attribute):
                _image(values[attribute], uses)
        if values.get("srcset"):
            for candidate in values["srcset"].split(","):
                _image(candidate.strip().partition(" ")[0], uses)
        for attribute, op, expected, token in self._rules.get(tag, ()):
            value = values.get(attribute)
            if value is None and attribute == "type":
                value = {"input": "text", "button": "submit"}.get(tag)
            if value is None:
                continue
            value = value.strip().lower()
            if (
                not op
                or (op == "=" and value == expected)
                or (op == "^=" and value.startswith(expected))
            ):
                uses.add(("html-element-attribute", token))
        self.counts.update(uses)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag == "style":
            self._in_style = False

    def handle_endtag(self, tag: str) -> None:
        if tag == "style":
            self._in_style = False

    def handle_data(self, data: str) -> None:
        if self._in_style:
            self.stylesheets.append(data)

    def handle_comment(self, data: str) -> None:
        self.counts[("html-element", "!--")] += 1

    def handle_decl(self, decl: str) -> None:
        if decl.lower().split() == ["doctype", "html"]:
            self.counts[("html-element", "!doctype")] += 1


def _image(url: str, uses: set[Use]) -> None:
    """Note the image format of ``url``: its ``data:`` type or its file extension."""
    url = url.strip()
    if url[:5].lower() == "data:":
        header = url[5:].partition(",")[0].lower()
        uses.add(("image-format", header.partition(";")[0].strip()))
        if ";base64" in header:
            uses.add(("image-format", "base64"))
        return
    path = re.split(r"[?#]", url, maxsplit=1)[0]
    name = path.rpartition("/")[2]
    if "." in name:
        uses.add(("image-format", name.rpartition(".")[2].lower()))


def _split(text: str) -> list[tuple[str, str | None]]:
    """Top-level items of CSS text: ``(prelude, block)`` for rules, ``(text, None)`` otherwise.

    Strings and parentheses are skipped over, so ``;`` in ``url(data:...;base64,...)``
    splits nothing; an unclosed block runs to the end.
    """
    items: list[tuple[str, str | None]] = []
    start = 0
    depth = 0
    parens = 0
    quote = ""
    opened = 0
    escaped_until = -1
    for found in _SPECIAL.finditer(text):
        at = found.start()
        char = found.group()
        if at <= escaped_until:
            continue
        if char == "\\":
            escaped_until = at + 1
        elif quote:
            if char == quote:
                quote = ""
        elif char in "\"'":
            quote = char
        elif char == "(":
            parens += 1
        elif char == ")":
            parens = max(0, parens - 1)
        elif char == "{":
            if depth == 0:
                opened = at
                parens = 0
            depth += 1
        elif char == "}":
            if depth == 1:
                items.append((text[start:opened].strip(), text[opened + 1 : at]))
                start = at + 1
            elif depth == 0:
                start = at + 1
            depth = max(0, depth - 1)
        elif char == ";" and depth == 0 and parens == 0:
            items.append((text[start:at].strip(), None))
            start = at + 1
    if depth:
        items.append((text[start:opened].strip(), text[opened + 1 :]))
    elif text[start:].strip():
        items.append((text[start:].strip(), None))
    return items


@functools.lru_cache(maxsize=4096)
def _inline_uses(style: str) -> frozenset[Use]:
    """What one ``style=""`` attribute uses (mail repeats the same ones: cached)."""
    uses: set[Use] = set()
    if "/*" in style:
        uses.add(("css-syntax", "comment"))
        style = _COMMENT.sub(" ", style)
    for text, block in _split(style):
        if block is None:
            _declaration(text, uses)
    return frozenset(uses)


def _scan_stylesheet(css: str, uses: set[Use]) -> None:
    if "/*" in css:
        uses.add(("css-syntax", "comment"))
        css = _COMMENT.sub(" ", css)
    _rules(css.replace("<!--", " ").replace("-->", " "), uses, 0)


def _rules(css: str, uses: set[Use], depth: int) -> None:
    """Read the rules of a style sheet (or of a grouping at-rule's block)."""
    if depth > 20:
        return
    for prelude, block in _split(css):
        if prelude.startswith("@"):
            _at_rule(prelude, block, uses, depth)
        elif block is not None:
            _style_rule(prelude, block, uses, depth)


def _at_rule(prelude: str, block: str | None, uses: set[Use], depth: int) -> None:
    found = _AT_RULE.match(prelude)
    if not found:
        return
    name = _VENDOR.sub("", found.group(1).lower())
    uses.add(("css-at-rule", "@" + name))
    if name == "media":
        for feature in _MEDIA_FEATURE.findall(prelude):
            feature = _VENDOR.sub("", feature.lower())
            uses.add(("css-media-feature", re.sub(r"^(?:min|max)-", "", feature)))
    if block is None:
        return
    if name in _GROUPING_AT_RULES:
        _rules(block, uses, depth + 1)
    elif name in _DECLARATION_AT_RULES:
        _declarations(block, uses)
    elif name == "keyframes":
        for _, frame in _split(block):
            if frame is not None:
                _declarations(frame, uses)


def _style_rule(prelude: str, block: str, uses: set[Use], depth: int) -> None:
    _selectors(prelude, uses)
    if depth > 20:
        return
    for text, nested in _split(block):
        if nested is None:
            _declaration(text, uses)
        else:
            uses.add(("css-syntax", "nesting"))
            if text.startswith("@"):
                _at_rule(text, nested, uses, depth + 1)
            else:
                _style_rule(text, nested, uses, depth + 1)


def _declarations(block: str, uses: set[Use]) -> None:
    for text, nested in _split(block):
        if nested is None:
            _declaration(text, uses)


def _declaration(text: str, uses: set[Use]) -> None:
    """Note one ``property: value`` declaration: property, values, functions, units, images."""
    name, colon, value = text.partition(":")
    if not colon:
        return
    name = name.strip().lower()
    if name.startswith("--"):
        uses.add(("css-function", "var"))  # declaring a custom property is using CSS variables
    name = _VENDOR.sub("", name)
    if not _PROPERTY.fullmatch(name):
        return
    uses.add(("css-property", name))
    value = value.strip().lower()
    if "!" in value and _IMPORTANT.search(value):
        uses.add(("css-keyword", "!important"))
        value = _IMPORTANT.sub(" ", value)
    if "url(" in value:
        for _, url in _URL.findall(value):
            _image(url, uses)
        value = _URL.sub("url()", value)
    if '"' in value or "'" in value:
        value = _STRING.sub(" ", value)
    for function in _FUNCTION.findall(value):
        uses.add(("css-function", _VENDOR.sub("", function)))
    for unit in _UNIT.findall(value):
        uses.add(("css-unit", unit))
    for word in _WORDS.split(value):
        if word:
            word = _VENDOR.sub("", word)
            uses.add(("css-value", f"{name}:{word}"))
            uses.add(("css-value", f"*:{word}"))


def _selectors(prelude: str, uses: set[Use]) -> None:
    """Note the selector features of a rule's selector list."""
    selectors = [selector for selector in prelude.split(",") if selector.strip()]
    if len(selectors) > 1:
        uses.add(("css-selector", "grouping"))
    for selector in selectors:
        if "[" in selector:
            uses.add(("css-selector", "attribute"))
            selector = re.sub(r"\[[^\]]*\]?", "[]", selector)
        if ":" in selector:
            for colons, name, _ in _PSEUDO.findall(selector):
                name = _VENDOR.sub("", name.lower())
                if colons == "::" or name in _LEGACY_PSEUDO_ELEMENTS:
                    uses.add(("css-selector", "::" + name))
                else:
                    uses.add(("css-selector", ":" + name))
            selector = _PSEUDO.sub("", selector)
        previous_was_compound = False
        for part in re.sub(r"\s*([>+~])\s*", r" \1 ", selector).split():
            if part in (">", "+", "~"):
                uses.add(("css-selector", _COMBINATORS[part]))
                previous_was_compound = False
                continue
            if previous_was_compound:
                uses.add(("css-selector", "descendant"))
            previous_was_compound = True
            if part[0].isalpha():
                uses.add(("css-selector", "type"))
            if "*" in part:
                uses.add(("css-selector", "universal"))
            classes, ids, attributes = part.count("."), part.count("#"), part.count("[]")
            if classes:
                uses.add(("css-selector", "class"))
            if ids:
                uses.add(("css-selector", "id"))
            if classes + ids + attributes >= 2:
                uses.add(("css-selector", "chaining"))


_COMBINATORS = {">": "child", "+": "adjacent-sibling", "~": "general-sibling"}
