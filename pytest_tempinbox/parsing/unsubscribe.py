"""A message's unsubscribe headers read: its targets, whether one-click is offered, what is wrong.

``List-Unsubscribe`` (RFC 2369) lists ``<uri>`` entries, comma-separated,
with comments and folding allowed; only the entries in angle brackets count.
``List-Unsubscribe-Post: List-Unsubscribe=One-Click`` (RFC 8058) offers
one-click unsubscribe by a POST to the https entry, with a DKIM signature
covering both headers. Here the signature's ``h=`` tag is read, not verified:
whether the signature holds is another check's business.
:func:`parse_unsubscribe` gives an :class:`~pytest_tempinbox.values.Unsubscribe`
from a message's decoded headers; what a test asserts of it is
:mod:`pytest_tempinbox.checks.unsubscribe`. Standard library only, no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from urllib.parse import urlsplit

from ..values import Unsubscribe

__all__ = ["ONE_CLICK", "dkim_signed_headers", "parse_unsubscribe", "quote"]

ONE_CLICK = "List-Unsubscribe=One-Click"
"""The one value RFC 8058 allows in ``List-Unsubscribe-Post``."""
_BOTH = ("list-unsubscribe", "list-unsubscribe-post")
_SPACE = re.compile(r"\s+")
_QUOTED_MAX = 120


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
                f"List-Unsubscribe-Post is {quote(post)}; RFC 8058 allows only {ONE_CLICK!r}"
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
                problems.append(f"{quote(value[index:])} opens '<' without a closing '>'")
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
                f"{quote(text)} is not in angle brackets; RFC 2369 counts only <...> entries"
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


def _clip(text: str) -> str:
    return text if len(text) <= _QUOTED_MAX else text[: _QUOTED_MAX - 1] + "…"


def quote(text: str) -> str:
    """``text`` quoted for a problem or failure, cut to 120 characters."""
    return repr(_clip(text))
