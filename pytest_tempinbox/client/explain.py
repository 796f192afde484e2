"""Why a wait saw no mail: the lines a failure adds about what the package can know.

Asked for only when a wait has failed, never on the way to success. Each line
names a likely cause: mail the server refused while the test ran, whatever the
address, those like the inbox's first (``GET /api/refused``), each with its
likely reason (an address of no inbox, an inbox deleted, another domain; for a
message refused at the end of DATA, what its reply means: too big...), mail
that Django's locmem backend kept in ``django.core.mail.outbox``, a blocking
wait on a thread whose event loop runs, and where the server takes SMTP
(``GET /api/info``), so that a wrong port shows at a glance (or, after
refusals, that the port is right). A line that cannot be learnt (an older server, one gone) is left
out: explaining must never hide the failure it explains.

Each explanation is written once, as a flow of calls (see :mod:`.calls`):
:func:`explain` drives it blocking, :func:`explain_async` awaited.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from ..errors import TempInboxError
from .calls import smtp_of

if TYPE_CHECKING:
    from datetime import datetime

    from ..models import Refusal
    from .calls import Call, Flow

__all__ = [
    "CONVERSATION_SHOWN",
    "MAX_REFUSALS_SHOWN",
    "ClientView",
    "InboxView",
    "about",
    "about_flow",
    "blocking_line",
    "conversation_lines",
    "django_line",
    "explain",
    "explain_async",
    "explain_flow",
    "in_process",
    "location_flow",
    "location_line",
    "location_of",
    "loop_is_running",
    "refusal_lines",
]

MAX_REFUSALS_SHOWN = 5
CONVERSATION_SHOWN = 4
"""Lines of the first refusal's SMTP transcript a failure shows, its last ones."""
_MAX_REFUSALS_READ = 100
# What asking the server may raise besides our errors: an answer of another shape.
_UNREADABLE = (TempInboxError, KeyError, TypeError, ValueError)


Result = TypeVar("Result")


class ClientView(Protocol):
    """What explaining asks of a :class:`~pytest_tempinbox.client.http.TempInboxClient`.

    A protocol, so that this module, below the client, need not import it.
    """

    @property
    def transport(self) -> object:
        """The client's blocking transport: ``in_process`` is read from it."""

    def deleted(self, email: str) -> datetime | None:
        """When the client deleted the inbox at ``email``, if it did."""

    def _refused(
        self, since: datetime | None, similar_to: str | None, limit: int | None
    ) -> Call[list[Refusal]]: ...

    def _kept_info_flow(self) -> Flow[dict[str, Any]]: ...

    def _drive(self, flow: Flow[Result]) -> Result: ...

    async def _drive_async(self, flow: Flow[Result]) -> Result: ...


class InboxView(Protocol):
    """What explaining asks of an :class:`~pytest_tempinbox.client.http.Inbox`."""

    @property
    def address(self) -> str:
        """The inbox's address."""

    @property
    def created_at(self) -> datetime | None:
        """When the server created the inbox, if known."""

    @property
    def client(self) -> ClientView:
        """The client the inbox reads through."""


def explain(inbox: InboxView, *, blocking: str | None = None) -> list[str]:
    """The lines about why ``inbox`` saw no mail; ``blocking``: the blocking wait's name."""
    return inbox.client._drive(explain_flow(inbox, blocking=blocking))


async def explain_async(inbox: InboxView) -> list[str]:
    """Like :func:`explain`, awaitable: the event loop runs while the server answers."""
    return await inbox.client._drive_async(explain_flow(inbox))


def about(inbox: InboxView, *, refusals: bool = True) -> tuple[list[str], bool]:
    """What Django kept for ``inbox``, and the mail the server refused while its test ran.

    Also tells whether the server refused any mail in that time: then the mail
    did reach the server, and its host and port are not to blame. Without
    ``refusals``, only what Django kept (a report lists them once per test).
    """
    return inbox.client._drive(about_flow(inbox, refusals=refusals))


def location_of(client: ClientView, *, refused: bool = False) -> str | None:
    """The :func:`location_line` of the client's server, or None when it cannot say."""
    return client._drive(location_flow(client, refused=refused))


def explain_flow(inbox: InboxView, *, blocking: str | None = None) -> Flow[list[str]]:
    """:func:`explain` as a flow of calls, for a blocking or an awaited driver."""
    lines = [blocking_line(blocking)] if blocking is not None else []
    notes, refused = yield from about_flow(inbox)
    location = yield from location_flow(inbox.client, refused=refused)
    return lines + notes if location is None else [*lines, *notes, location]


def about_flow(inbox: InboxView, *, refusals: bool = True) -> Flow[tuple[list[str], bool]]:
    """:func:`about` as a flow of calls."""
    line = django_line(inbox.address)
    lines = [] if line is None else [line]
    if not refusals:
        return lines, False
    client, since = inbox.client, inbox.created_at
    try:
        similar = yield client._refused(since, inbox.address, MAX_REFUSALS_SHOWN)
        recent = yield client._refused(since, None, _MAX_REFUSALS_READ)
        domains = _domains((yield from client._kept_info_flow()))
        found = refusal_lines(inbox, similar, recent, client.deleted, domains)
    except _UNREADABLE:
        return lines, False
    return lines + found, bool(found)


def location_flow(client: ClientView, *, refused: bool = False) -> Flow[str | None]:
    """:func:`location_of` as a flow of calls."""
    try:
        host, port = smtp_of((yield from client._kept_info_flow()))
    except _UNREADABLE:
        return None
    return location_line(host, port, refused=refused, shared=not in_process(client))


def _domains(info: dict[str, object]) -> list[str]:
    domains = info.get("domains")
    return [str(domain).lower() for domain in domains] if isinstance(domains, list) else []


def in_process(client: ClientView) -> bool:
    """Whether the client's server runs in this process, so that only this process sends to it.

    A server reached over HTTP may be shared: by the workers of pytest-xdist,
    or by other runs pointed at one ``--tempinbox-url``.
    """
    return bool(getattr(client.transport, "in_process", False))


def refusal_lines(
    inbox: InboxView,
    similar: list[Refusal],
    recent: list[Refusal],
    deleted: Callable[[str], datetime | None] = lambda address: None,
    domains: list[str] | None = None,
) -> list[str]:
    """The refusals of the server while the test ran, each with its likely reason.

    ``similar`` are the refusals of addresses like the inbox's, shown first;
    ``recent`` all refusals since the inbox was made, newest first. ``deleted``
    tells when this client deleted an address's inbox; ``domains`` are the
    server's. Under a shared server (over HTTP) the header says that some of
    them may be another process's.
    """
    shown: list[Refusal] = []
    seen = set()
    for refusal in [*similar, *recent]:
        if _key(refusal) not in seen:
            seen.add(_key(refusal))
            shown.append(refusal)
    if not shown:
        return []
    since = (
        ""
        if inbox.created_at is None
        else f" (since its inbox was made at {_clock(inbox.created_at)})"
    )
    if in_process(inbox.client):
        # A message refused at DATA's end had a good recipient: the message is to blame.
        at_rcpt = any(refusal.stage == "rcpt" for refusal in shown[:MAX_REFUSALS_SHOWN])
        blamed = "the recipient is not:" if at_rcpt else "the server refused the message itself:"
        header = (
            f"the server refused mail while this test ran{since}: it reached the server, so"
            f" the host and port (EMAIL_HOST, EMAIL_PORT) are right; {blamed}"
        )
    else:
        header = (
            f"the server refused mail while this test ran{since}; other processes share"
            " this server (pytest-xdist workers, other runs), so some of it may be theirs:"
        )
    lines = [header]
    alike = {_key(refusal) for refusal in similar}
    for refusal in shown[:MAX_REFUSALS_SHOWN]:
        client = refusal.client_ip or "an unknown client"
        if refusal.helo:
            client += f" (EHLO {refusal.helo})"
        why = _reason(refusal, _key(refusal) in alike, deleted(refusal.address), domains or [])
        lines.append(f"  - {refusal.address!r} at {_clock(refusal.at)} from {client}: {why}")
        if refusal is shown[0]:
            lines += conversation_lines(refusal)
    more = len(shown) - MAX_REFUSALS_SHOWN
    if more > 0:
        lines.append(f"  and {more}{'+' if len(recent) >= _MAX_REFUSALS_READ else ''} more")
    return lines


def conversation_lines(refusal: Refusal) -> list[str]:
    """The last :data:`CONVERSATION_SHOWN` lines of ``refusal``'s SMTP transcript, if it has one."""
    if refusal.transcript is None or not refusal.transcript.lines:
        return []
    said = refusal.transcript.lines[-CONVERSATION_SHOWN:]
    return ["    its SMTP conversation ended:"] + [
        f"      {'C' if line.side == 'client' else 'S'}: {line.line[:120]}" for line in said
    ]


def _key(refusal: Refusal) -> tuple[datetime, str, str | None]:
    """What tells one refusal from another: the two lists the server gave hold the same ones."""
    return refusal.at, refusal.address.lower(), refusal.client_ip


def _reason(refusal: Refusal, alike: bool, deleted: datetime | None, domains: list[str]) -> str:
    """The server's reply, and why it refused ``refusal``, as far as this process can tell."""
    if refusal.stage == "data":
        why = f"the server refused the message at the end of DATA: {_data_cause(refusal, deleted)}"
    else:
        why = _because(refusal.address, alike, deleted, domains)
    return f"{refusal.reply} ({why})"


# What a refusal at DATA's end most likely means, by the start of its reply (docs/limits.md).
_DATA_CAUSES = (
    (
        "552 5.2.2",
        "the inbox's tenant holds its bytes quota: delete some of its mail or raise"
        " the quota, see docs/tenants.md",
    ),
    ("552", "the message is over the server's size limit: send less, or raise --max-message-size"),
    (
        "500",
        "a line of the message is over the server's line limit, 1,000 octets by default:"
        " wrap long lines, send quoted-printable, or raise --data-line-limit",
    ),
    ("554 5.1.1", "every recipient's inbox was deleted between RCPT TO and the end of DATA"),
)


def _data_cause(refusal: Refusal, deleted: datetime | None) -> str:
    if deleted is not None and refusal.reply.startswith("554"):
        return f"its inbox was deleted at {_clock(deleted)}"
    for start, cause in _DATA_CAUSES:
        if refusal.reply.startswith(start):
            return cause
    return "its reply says why"


def _because(address: str, alike: bool, deleted: datetime | None, domains: list[str]) -> str:
    if deleted is not None:
        return f"its inbox was deleted at {_clock(deleted)}"
    domain = address.rpartition("@")[2].lower()
    if domains and domain not in domains:
        return f"{domain!r} is not one of the server's domains: {', '.join(domains)}"
    if alike:
        return "no inbox has this address, which is like this inbox's: a typing slip?"
    return "no inbox has this address: never generated, deleted, or expired"


def _clock(moment: datetime) -> str:
    return moment.strftime("%H:%M:%S.%f")[:-3]


def location_line(host: str, port: int, *, refused: bool = False, shared: bool = True) -> str:
    """Where the server takes SMTP, for comparing with the application's settings.

    After refusals (``refused``), the mail reached the server: the line blames
    the host and port only when another process may have sent it (``shared``).
    """
    if refused and not shared:
        return f"the server takes SMTP at {host}:{port}."
    if refused:
        return (
            f"the server takes SMTP at {host}:{port}; if none of these refusals is this"
            " test's mail, check that the application sends there (EMAIL_HOST, EMAIL_PORT)."
        )
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
        " EMAIL_BACKEND (MAILERS on Django 6.1) at the SMTP backend"
        " (see the tempinbox_django fixture)."
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
    asyncio = sys.modules.get("asyncio")
    if asyncio is None:  # never imported: no loop runs
        return False
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
