"""What a test asserts of a message's unsubscribe headers: the link to follow, one-click.

Gmail and Yahoo require of bulk senders one-click unsubscribe (RFC 8058): an
https ``List-Unsubscribe`` entry, ``List-Unsubscribe-Post:
List-Unsubscribe=One-Click`` and a DKIM signature covering both headers.
:func:`unsubscribe_link` gives the link a test follows, or a
:class:`~pytest_tempinbox.errors.MailAssertionError` saying what is missing.
Reading the headers is the parser's (:mod:`pytest_tempinbox.parsing.unsubscribe`),
and :class:`Unsubscribe` is a plain value (:mod:`pytest_tempinbox.values`); both
are re-exported here.
"""

from __future__ import annotations

from ..errors import MailAssertionError
from ..parsing.unsubscribe import ONE_CLICK, dkim_signed_headers, parse_unsubscribe, quote
from ..values import Unsubscribe

__all__ = [
    "ONE_CLICK",
    "Unsubscribe",
    "dkim_signed_headers",
    "parse_unsubscribe",
    "unsubscribe_link",
]


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


def _one_click_missing(unsubscribe: Unsubscribe) -> list[str]:
    missing = []
    if not unsubscribe.https:
        missing.append("an https URL in List-Unsubscribe (only http found)")
    if unsubscribe.post is None:
        missing.append(f"a List-Unsubscribe-Post: {ONE_CLICK} header (the message has none)")
    elif unsubscribe.post != ONE_CLICK:
        missing.append(f"List-Unsubscribe-Post: {ONE_CLICK} (found {quote(unsubscribe.post)})")
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
