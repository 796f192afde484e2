"""Why a wait saw no mail: the lines a failure adds about what the package can know.

Asked for only when a wait has failed, never on the way to success. Each line
names a likely cause: mail the server refused for an address like the inbox's
(``GET /api/refused``), mail that Django's locmem backend kept in
``django.core.mail.outbox``, a blocking wait on a thread whose event loop runs,
and where the server takes SMTP (``GET /api/info``), so that a wrong port shows
at a glance. A line that cannot be learnt (an older server, one gone) is left
out: explaining must never hide the failure it explains.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from typing import TYPE_CHECKING

from ..errors import TempInboxError

if TYPE_CHECKING:
    from ..models import Refusal
    from .http import TempInboxClient
    from .inbox import Inbox

__all__ = [
    "MAX_REFUSALS_SHOWN",
    "about",
    "blocking_line",
    "django_line",
    "explain",
    "explain_async",
    "location_line",
    "location_of",
    "loop_is_running",
    "refusal_lines",
]

MAX_REFUSALS_SHOWN = 3
# What asking the server may raise besides our errors: an answer of another shape.
_UNREADABLE = (TempInboxError, KeyError, TypeError, ValueError)


def explain(inbox: Inbox, *, blocking: str | None = None) -> list[str]:
    """The lines about why ``inbox`` saw no mail; ``blocking``: the blocking wait's name."""
    lines = [blocking_line(blocking)] if blocking is not None else []
    lines += about(inbox)
    location = location_of(inbox.client)
    return lines if location is None else [*lines, location]


def about(inbox: Inbox) -> list[str]:
    """What Django kept for ``inbox`` and what the server refused for an address like it."""
    lines = _local_lines(inbox)
    with contextlib.suppress(*_UNREADABLE):
        lines += refusal_lines(_refused(inbox))
    return lines


def location_of(client: TempInboxClient) -> str | None:
    """The :func:`location_line` of the client's server, or None when it cannot say."""
    try:
        return location_line(*client.smtp_location())
    except _UNREADABLE:
        return None


async def explain_async(inbox: Inbox) -> list[str]:
    """Like :func:`explain`, awaitable: the event loop runs while the server answers."""
    lines = _local_lines(inbox)
    with contextlib.suppress(*_UNREADABLE):
        found = await inbox.client.refused_async(
            since=inbox.created_at, similar_to=inbox.address, limit=MAX_REFUSALS_SHOWN
        )
        lines += refusal_lines(found)
    with contextlib.suppress(*_UNREADABLE):
        lines.append(location_line(*await inbox.client.smtp_location_async()))
    return lines


def _refused(inbox: Inbox) -> list[Refusal]:
    return inbox.client.refused(
        since=inbox.created_at, similar_to=inbox.address, limit=MAX_REFUSALS_SHOWN
    )


def _local_lines(inbox: Inbox) -> list[str]:
    line = django_line(inbox.address)
    return [] if line is None else [line]


def refusal_lines(refusals: list[Refusal]) -> list[str]:
    """One line per refusal: the address refused, when, from which client, and why."""
    lines = []
    for refusal in refusals[:MAX_REFUSALS_SHOWN]:
        when = refusal.at.strftime("%H:%M:%S.%f")[:-3]
        client = refusal.client_ip or "an unknown client"
        if refusal.helo:
            client += f" (EHLO {refusal.helo})"
        lines.append(
            f"the server refused mail to {refusal.address!r} at {when} from {client}:"
            f" {refusal.reply}"
        )
    return lines


def location_line(host: str, port: int) -> str:
    """Where the server takes SMTP, for comparing with the application's settings."""
    return (
        f"the server takes SMTP at {host}:{port}; mail sent to another host or port"
        " (EMAIL_HOST, EMAIL_PORT) never reaches it."
    )


def django_line(address: str) -> str | None:
    """What Django's locmem backend kept for ``address``, if Django is in use; None otherwise.

    Django is never imported here: only a test process that has imported it can
    have sent mail through it.
    """
    mail = sys.modules.get("django.core.mail")
    outbox = getattr(mail, "outbox", None)
    if not isinstance(outbox, list) or not outbox:
        return None
    kept = sum(1 for message in outbox if _addressed_to(message, address))
    if not kept:
        return None
    return (
        f"Django's locmem backend kept {kept} message(s) for this address"
        " (django.core.mail.outbox): the mail never reached SMTP; point Django's"
        " EMAIL_BACKEND at the SMTP backend (see the tempinbox_django fixture)."
    )


def _addressed_to(message: object, address: str) -> bool:
    # Read as the server reads a To header, on every Python alike.
    from ..parsing.email_internals import address_list

    recipients = getattr(message, "recipients", None)
    try:
        listed = recipients() if callable(recipients) else []
        found = address_list([str(recipient) for recipient in listed])
    except Exception:  # someone else's object: whatever it raises, it is no match
        return False
    return any(email.lower() == address.lower() for _, email in found)


def loop_is_running() -> bool:
    """Tell whether this thread runs an event loop, which a blocking wait holds up."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def blocking_line(method: str) -> str:
    """The note for a blocking ``method`` called on a thread whose event loop runs."""
    return (
        f"{method}() blocked a running event loop (an async def test?): mail sent by a task"
        f" on that loop could not go out while it waited; use await inbox.{method}_async(...)."
    )
