"""A message's unsubscribe headers read: its targets, whether one-click is offered, what is wrong.

``List-Unsubscribe`` (RFC 2369) lists ``<uri>`` entries, comma-separated,
with comments and folding allowed; only the entries in angle brackets count.
``List-Unsubscribe-Post: List-Unsubscribe=One-Click`` (RFC 8058) offers
one-click unsubscribe by a POST to the https entry, which Gmail and Yahoo
require of bulk senders, with a DKIM signature covering both headers. Here the
signature's ``h=`` tag is read, not verified: whether the signature holds is
another check's business. :func:`parse_unsubscribe` gives an
:class:`Unsubscribe`; :func:`unsubscribe_link` gives the link a test follows,
or a :class:`~pytest_tempinbox.errors.MailAssertionError` saying what is missing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from ..errors import MailAssertionError

__all__ = [
    "ONE_CLICK",
    "Unsubscribe",
    "dkim_signed_headers",
    "parse_unsubscribe",
    "unsubscribe_link",
]

JSON = dict[str, Any]
ONE_CLICK = "List-Unsubscribe=One-Click"
"""The one value RFC 8058 allows in ``List-Unsubscribe-Post``."""
_BOTH = ("list-unsubscribe", "list-unsubscribe-post")
_SPACE = re.compile(r"\s+")
_QUOTED_MAX = 120


@dataclass(frozen=True, slots=True)
class Unsubscribe:
    """What a message's ``List-Unsubscribe`` and ``List-Unsubscribe-Post`` headers offer.

    ``http`` are its http and https URLs and ``mailto`` its mailto URIs, each in
    header order without repeats. ``post`` is the ``List-Unsubscribe-Post``
    value as written (None without one). ``dkim_covers`` tells whether a
    ``DKIM-Signature`` of the message names both headers in its ``h=`` tag
    (None for a message without one). ``one_click`` is True when RFC 8058 is
    met as far as the headers tell: an https URL, one ``List-Unsubscribe-Post``
    header of exactly ``List-Unsubscribe=One-Click``, and, if the message is
    DKIM-signed, a signature covering both headers. ``problems`` say, for
    people, what is wrong with the headers; empty when nothing is.
    """

    http: tuple[str, ...]
    mailto: tuple[str, ...]
    one_click: bool
    post: str | None = None
    dkim_covers: bool | None = None
    problems: tuple[str, ...] = ()

    @property
    def https(self) -> tuple[str, ...]:
        """The https URLs among :attr:`http`."""
        return tuple(url for url in self.http if url.lower().startswith("https:"))

    def to_json(self) -> JSON:
        """Return the JSON object form.

        ``{"http", "mailto", "one_click", "post", "dkim_covers", "problems"}``.
        """
        return {
            "http": list(self.http),
            "mailto": list(self.mailto),
            "one_click": self.one_click,
            "post": self.post,
            "dkim_covers": self.dkim_covers,
            "problems": list(self.problems),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Unsubscribe:
        """Build an :class:`Unsubscribe` from its JSON object form."""
        return cls(
            http=tuple(data["http"]),
            mailto=tuple(data["mailto"]),
            one_click=data["one_click"],
            post=data.get("post"),
            dkim_covers=data.get("dkim_covers"),
            problems=tuple(data.get("problems", ())),
        )


def parse_unsubscribe(headers: Mapping[str, Sequence[str]]) -> Unsubscribe | None:
    """Read the unsubscribe headers of a message; None when it has neither of them.

    ``headers`` maps header names to their decoded, unfolded values, as
    ``Message.headers`` does (names are matched in any case). A message with
    ``List-Unsubscribe-Post`` but no ``List-Unsubscribe`` gets an
    :class:`Unsubscribe` with no targets and that problem. Several headers of
    one name are all read, and the repeat is a problem.
    """
    lists = _values(headers, "list-unsubscribe")
    posts = _values(headers, "list-unsubscribe-post")
    if not lists and not posts:
        return None
    problems: list[str] = []
    uris: list[str] = []
    if len(lists) > 1:
        problems.append(f"{len(lists)} List-Unsubscribe headers; RFC 2369 allows one")
    for value in lists:
        uris += _entries(value, problems)
    http: list[str] = []
    mailto: list[str] = []
    for uri in dict.fromkeys(uris):
        _classify(uri, http, mailto, problems)
    if lists and not http and not mailto:
        problems.append("List-Unsubscribe has no usable http(s) or mailto entry")
    has_https = any(url.lower().startswith("https:") for url in http)
    post = posts[0].strip() if posts else None
    if len(posts) > 1:
        problems.append(f"{len(posts)} List-Unsubscribe-Post headers; RFC 8058 allows one")
    if post is not None:
        if not lists:
            problems.append("List-Unsubscribe-Post without a List-Unsubscribe header")
        elif not has_https:
            problems.append(
                "List-Unsubscribe-Post offers one-click, but List-Unsubscribe has no https "
                "URL to POST to (RFC 8058)"
            )
        if post != ONE_CLICK:
            problems.append(
                f"List-Unsubscribe-Post is {_quote(post)}; RFC 8058 allows only {ONE_CLICK!r}"
            )
    dkim_covers = _dkim_covers(headers, problems if post is not None else None)
    return Unsubscribe(
        http=tuple(http),
        mailto=tuple(mailto),
        one_click=has_https and len(posts) == 1 and post == ONE_CLICK and dkim_covers is not False,
        post=post,
        dkim_covers=dkim_covers,
        problems=tuple(dict.fromkeys(problems)),
    )


def unsubscribe_link(unsubscribe: Unsubscribe | None, *, one_click: bool = False) -> str:
    """Return the unsubscribe link: the first https URL, else the first http one.

    Raises :class:`~pytest_tempinbox.errors.MailAssertionError` when there is
    no ``List-Unsubscribe`` header (``unsubscribe`` is None) or it holds no
    http(s) URL. With ``one_click=True`` it also checks what Gmail and Yahoo
    require of bulk senders: an https URL,
    ``List-Unsubscribe-Post: List-Unsubscribe=One-Click``, and, when the
    message is DKIM-signed, a signature whose ``h=`` covers both headers (at
    least one of several). The signature itself is not verified here.
    """
    if unsubscribe is None:
        raise MailAssertionError(
            "expected a List-Unsubscribe header with an unsubscribe link, but the message "
            "has none. Likely cause: the code sending it does not set List-Unsubscribe "
            "(RFC 2369), or sets it on another kind of mail."
        )
    found = _found(unsubscribe)
    if not unsubscribe.http:
        raise MailAssertionError(
            f"expected an http(s) link in List-Unsubscribe, but found {found}."
            + _problems_text(unsubscribe)
        )
    if one_click:
        missing = _one_click_missing(unsubscribe)
        if missing:
            raise MailAssertionError(
                "expected one-click unsubscribe as Gmail and Yahoo require of bulk senders "
                "(RFC 8058), but it lacks:\n"
                + "\n".join(f"  - {item}" for item in missing)
                + f"\nList-Unsubscribe holds {found}."
                + _problems_text(unsubscribe)
            )
    return (unsubscribe.https or unsubscribe.http)[0]


def dkim_signed_headers(signature: str) -> tuple[str, ...]:
    """The header names, lowercased, that a ``DKIM-Signature`` value's ``h=`` tag lists.

    The tag list is read as RFC 6376 writes it (``tag=value;`` pairs, white
    space anywhere); an absent or empty ``h=`` gives ``()``.
    """
    for tag in signature.split(";"):
        name, equals, value = tag.partition("=")
        if equals and name.strip() == "h":
            names = _SPACE.sub("", value).split(":")
            return tuple(header.lower() for header in names if header)
    return ()


def _values(headers: Mapping[str, Sequence[str]], name: str) -> list[str]:
    found = headers.get(name)
    if found is not None:
        return list(found)
    return [value for key, values in headers.items() if key.lower() == name for value in values]


def _entries(value: str, problems: list[str]) -> list[str]:
    """The URIs in angle brackets of one ``List-Unsubscribe`` value; the rest go to ``problems``."""
    uris: list[str] = []
    index = 0
    while index < len(value):
        char = value[index]
        if char.isspace() or char == ",":
            index += 1
        elif char == "(":
            index = _skip_comment(value, index, problems)
        elif char == "<":
            end = value.find(">", index)
            if end < 0:
                problems.append(f"{_quote(value[index:])} opens '<' without a closing '>'")
                break
            uri = _SPACE.sub(
                "", value[index + 1 : end]
            )  # a folded URI's white space is not its own
            if uri:
                uris.append(uri)
            else:
                problems.append("an empty <> entry in List-Unsubscribe")
            index = end + 1
        else:
            end = len(value)
            for stop in ",<(":
                found = value.find(stop, index)
                end = found if 0 <= found < end else end
            text = value[index:end].strip()
            problems.append(
                f"{_quote(text)} is not in angle brackets; RFC 2369 counts only <...> entries"
            )
            index = end
    return uris


def _skip_comment(value: str, index: int, problems: list[str]) -> int:
    depth = 0
    while index < len(value):
        char = value[index]
        if char == "\\":
            index += 2
            continue
        depth += {"(": 1, ")": -1}.get(char, 0)
        index += 1
        if depth == 0:
            return index
    problems.append("a comment in List-Unsubscribe opens '(' without a closing ')'")
    return index


def _classify(uri: str, http: list[str], mailto: list[str], problems: list[str]) -> None:
    try:
        parts = urlsplit(uri)
    except ValueError:
        problems.append(f"<{_clip(uri)}> is not a valid URI")
        return
    scheme = parts.scheme.lower()
    shown = f"<{_clip(uri)}>"
    if scheme in ("http", "https"):
        if not parts.hostname:
            problems.append(f"{shown} has no host")
            return
        http.append(uri)
        if scheme == "http":
            problems.append(
                f"{shown} is not HTTPS; one-click unsubscribe (RFC 8058) needs an https URL"
            )
    elif scheme == "mailto":
        if not parts.path.strip():
            problems.append(f"{shown} names no address")
            return
        mailto.append(uri)
    elif not scheme:
        problems.append(f"{shown} is not a URI: it has no scheme")
    else:
        problems.append(
            f"{shown} has the scheme {scheme!r}, not http(s) or mailto; mail programs ignore it"
        )


def _dkim_covers(headers: Mapping[str, Sequence[str]], problems: list[str] | None) -> bool | None:
    """Whether some DKIM-Signature names both headers; why not goes to ``problems`` if given."""
    signatures = _values(headers, "dkim-signature")
    if not signatures:
        return None
    lacking: list[str] = []
    for signature in signatures:
        signed = set(dkim_signed_headers(signature))
        left_out = [name for name in _BOTH if name not in signed]
        if not left_out:
            return True
        lacking.append(f"{_domain(signature)} leaves out {' and '.join(left_out)}")
    if problems is not None:
        problems.append(
            "the message is DKIM-signed, but no signature's h= covers both List-Unsubscribe "
            f"and List-Unsubscribe-Post ({'; '.join(lacking)}); RFC 8058 needs both signed"
        )
    return False


def _domain(signature: str) -> str:
    for tag in signature.split(";"):
        name, equals, value = tag.partition("=")
        if equals and name.strip() == "d":
            return f"the signature of d={_SPACE.sub('', value)}"
    return "a signature without d="


def _one_click_missing(unsubscribe: Unsubscribe) -> list[str]:
    missing = []
    if not unsubscribe.https:
        missing.append("an https URL in List-Unsubscribe (only http found)")
    if unsubscribe.post is None:
        missing.append(f"a List-Unsubscribe-Post: {ONE_CLICK} header (the message has none)")
    elif unsubscribe.post != ONE_CLICK:
        missing.append(f"List-Unsubscribe-Post: {ONE_CLICK} (found {_quote(unsubscribe.post)})")
    elif not unsubscribe.one_click and unsubscribe.dkim_covers is not False and unsubscribe.https:
        missing.append("a single List-Unsubscribe-Post header")
    if unsubscribe.dkim_covers is False:
        missing.append(
            "a DKIM signature covering List-Unsubscribe and List-Unsubscribe-Post in its h= tag"
        )
    return missing


def _found(unsubscribe: Unsubscribe) -> str:
    targets = [*unsubscribe.http, *unsubscribe.mailto]
    return ", ".join(f"<{target}>" for target in targets) if targets else "no usable entry"


def _problems_text(unsubscribe: Unsubscribe) -> str:
    if not unsubscribe.problems:
        return ""
    return "\nWhat is wrong with the headers:\n" + "\n".join(
        f"  - {problem}" for problem in unsubscribe.problems
    )


def _clip(text: str) -> str:
    return text if len(text) <= _QUOTED_MAX else text[: _QUOTED_MAX - 1] + "…"


def _quote(text: str) -> str:
    return repr(_clip(text))
