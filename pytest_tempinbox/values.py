"""The plain values of the package: addresses, attachments, links, envelopes, faults, refusals.

Data only: frozen dataclasses with their JSON form both ways beside their
fields, built by the parser and the server and rebuilt by the client from the
server's JSON. The values a message carries beside its mail (a check's
:class:`DkimResult` and :class:`Unsubscribe`, a provider's
:class:`ProviderRecord`) live in :mod:`~pytest_tempinbox.side_values` and are
re-exported here on first use: each dataclass costs about a millisecond to
create, and the server's start needs none of them. Standard library only, nothing of the package but
:mod:`~pytest_tempinbox.errors`, and no I/O: an :class:`Attachment` downloads
its bytes only through the ``fetch`` it was given. :class:`~pytest_tempinbox.models.Message`,
which reads and checks a mail with the parser and the checks, sits above them in
:mod:`pytest_tempinbox.models`, which re-exports every name here.

The module is long because every value the parts share lives here, each with
its JSON form both ways: splitting them would only spread one kind of code.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from importlib import import_module
from typing import TYPE_CHECKING, Any, Literal, cast

from .errors import TempInboxError

if TYPE_CHECKING:
    from .side_values import DkimResult as DkimResult
    from .side_values import DkimStatus as DkimStatus
    from .side_values import ProviderRecord as ProviderRecord
    from .side_values import Unsubscribe as Unsubscribe
    from .transcripts import Transcript

__all__ = [
    "PROVIDERS",
    "Address",
    "Attachment",
    "DkimResult",
    "DkimStatus",
    "Envelope",
    "Fault",
    "Link",
    "LinkSource",
    "ProviderRecord",
    "Refusal",
    "Stage",
    "Unsubscribe",
    "format_timestamp",
    "parse_timestamp",
    "provider_url",
]

JSON = dict[str, Any]
Stage = Literal["rcpt", "data"]
"""Where in an SMTP transaction an injected fault strikes: at ``RCPT TO`` or at the end of DATA."""
LinkSource = Literal["html", "text"]
"""Where a link was found: an ``<a>`` or ``<area>`` of the HTML body, or a URL in the text body."""
PROVIDERS = ("sendgrid", "resend", "ses", "postmark", "mailgun", "brevo")
"""The email providers whose send APIs the server answers (see docs/providers.md)."""
# The providers served at the origin's root, as server.providers.ROOTED says (a test holds it).
_ROOTED = frozenset({"postmark"})


def format_timestamp(moment: datetime, *, milliseconds: bool = False) -> str:
    """Format an aware datetime as RFC 3339, writing UTC as ``Z``."""
    text = moment.isoformat(timespec="milliseconds" if milliseconds else "seconds")
    return text[:-6] + "Z" if text.endswith("+00:00") else text


def parse_timestamp(text: str) -> datetime:
    """Parse an RFC 3339 timestamp (as :func:`format_timestamp` writes) to an aware datetime."""
    moment = datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith("Z") else text)
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def _unavailable() -> bytes:
    raise TempInboxError("this message was not fetched from a server, so it has no source")


async def _unavailable_async() -> bytes:
    return _unavailable()


@dataclass(frozen=True, slots=True)
class Address:
    """A mailbox from a header: an optional display name and the address itself."""

    name: str | None
    email: str

    def to_json(self) -> JSON:
        """Return the JSON object form, ``{"name", "email"}``."""
        return {"name": self.name, "email": self.email}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Address:
        """Build an address from its JSON object form."""
        return cls(name=data.get("name"), email=data["email"])

    def __str__(self) -> str:
        return f"{self.name} <{self.email}>" if self.name else self.email


@dataclass(frozen=True, slots=True)
class Attachment:
    """One attachment (or inline part) of a message, described but not downloaded.

    ``index`` is its 0-based position in the message's ``attachments`` list and
    names it in the API's ``/attachments/{index}`` route. ``filename`` is what the
    sender wrote; never use it as a path.
    """

    index: int
    filename: str | None
    content_type: str
    size: int
    content_id: str | None
    inline: bool
    fetch: Callable[[], bytes] = field(default=_unavailable, repr=False, compare=False)
    fetch_async: Callable[[], Awaitable[bytes]] = field(
        default=_unavailable_async, repr=False, compare=False
    )

    def content(self) -> bytes:
        """Download the attachment's decoded bytes from the server."""
        return self.fetch()

    async def content_async(self) -> bytes:
        """Like :meth:`content`, awaitable."""
        return await self.fetch_async()

    def to_json(self) -> JSON:
        """Return the JSON object form."""
        return {
            "index": self.index,
            "filename": self.filename,
            "content_type": self.content_type,
            "size": self.size,
            "content_id": self.content_id,
            "inline": self.inline,
        }

    @classmethod
    def from_json(
        cls,
        data: Mapping[str, Any],
        fetch: Callable[[], bytes] = _unavailable,
        fetch_async: Callable[[], Awaitable[bytes]] = _unavailable_async,
    ) -> Attachment:
        """Build an attachment description from its JSON object form.

        ``fetch`` and ``fetch_async`` download its bytes (see :meth:`content`).
        """
        return cls(
            index=data["index"],
            filename=data.get("filename"),
            content_type=data["content_type"],
            size=data["size"],
            content_id=data.get("content_id"),
            inline=data["inline"],
            fetch=fetch,
            fetch_async=fetch_async,
        )


@dataclass(frozen=True, slots=True)
class Link:
    """One link of a message: its URL, the text a reader clicks, and where it was found.

    ``text`` is the visible text of the HTML anchor, white space collapsed (the
    ``alt`` text of an image inside it when it has no text of its own); None
    for a URL written in plain text. ``source`` is ``"html"`` or ``"text"``.
    """

    url: str
    text: str | None
    source: LinkSource

    def to_json(self) -> JSON:
        """Return the JSON object form, ``{"url", "text", "source"}``."""
        return {"url": self.url, "text": self.text, "source": self.source}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Link:
        """Build a link from its JSON object form."""
        source = data["source"]
        if source not in ("html", "text"):
            raise ValueError(f"not a link source: {source!r}")
        return cls(url=data["url"], text=data.get("text"), source=cast(LinkSource, source))


@dataclass(frozen=True, slots=True)
class Envelope:
    """The SMTP envelope: the ``MAIL FROM`` sender and the accepted ``RCPT TO`` addresses.

    ``mail_from`` is ``""`` for the null sender ``<>``.
    """

    mail_from: str
    rcpt_to: tuple[str, ...]

    def to_json(self) -> JSON:
        """Return the JSON object form, ``{"mail_from", "rcpt_to"}``."""
        return {"mail_from": self.mail_from, "rcpt_to": list(self.rcpt_to)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Envelope:
        """Build an envelope from its JSON object form."""
        return cls(mail_from=data["mail_from"], rcpt_to=tuple(data["rcpt_to"]))


@dataclass(frozen=True, slots=True)
class Fault:
    """A fault injected into an inbox's next deliveries: an SMTP reply, a delay or a disconnect.

    Exactly one of ``code`` (with ``message``, the reply's text), ``delay``
    (seconds) and ``disconnect`` says what happens; ``stage`` says when: at the
    ``RCPT TO`` of the address, or at the end of DATA. ``times`` is how many
    deliveries it still applies to. As the server lists it, ``message`` is
    the exact text that follows the code, its enhanced status code included.
    """

    stage: Stage
    code: int | None = None
    message: str | None = None
    delay: float | None = None
    disconnect: bool = False
    times: int = 1

    @property
    def kind(self) -> Literal["reply", "delay", "disconnect"]:
        """What the fault does: ``reply`` with ``code``, ``delay`` or ``disconnect``."""
        if self.disconnect:
            return "disconnect"
        return "delay" if self.delay is not None else "reply"

    def to_json(self) -> JSON:
        """Return the JSON object form, which is also the body that adds it: unset keys left out."""
        data: JSON = {"stage": self.stage}
        if self.code is not None:
            data["code"] = self.code
        if self.message is not None:
            data["message"] = self.message
        if self.delay is not None:
            data["delay"] = self.delay
        if self.disconnect:
            data["disconnect"] = True
        data["times"] = self.times
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Fault:
        """Build a fault from its JSON object form, as the server lists it."""
        stage = data["stage"]
        if stage not in ("rcpt", "data"):
            raise ValueError(f"not a fault stage: {stage!r}")
        delay = data.get("delay")
        return cls(
            stage=cast(Stage, stage),
            code=data.get("code"),
            message=data.get("message"),
            delay=None if delay is None else float(delay),
            disconnect=bool(data.get("disconnect", False)),
            times=data.get("times", 1),
        )


@dataclass(frozen=True, slots=True)
class Refusal:
    """A recipient the SMTP server refused: when, to whom, from which client, at which stage.

    ``stage`` is ``"rcpt"`` for a recipient refused at ``RCPT TO``; then
    ``reply`` is the text of the server's answer after its code. It is
    ``"data"`` for a message refused at the end of ``DATA`` (too big, over a
    quota...), one refusal per recipient; then ``reply`` is the server's
    whole reply line, its code included. ``client_ip``
    and ``helo`` (the name the client gave in EHLO or HELO) say who sent it, when
    known. ``similarity`` (0 to 1) is set when the refusals were asked for
    ``similar_to`` an address: how alike the two addresses are. ``tenant`` is,
    on a server with tenants, the tenant whose SMTP credentials the session
    logged in with (None: none); the server keeps it to itself (not in the JSON).
    ``transcript`` is the SMTP session's transcript up to the refusal (its last
    lines, docs/transcripts.md), when the server keeps transcripts.
    """

    at: datetime
    address: str
    reply: str
    client_ip: str | None = None
    helo: str | None = None
    similarity: float | None = None
    tenant: str | None = None
    transcript: Transcript | None = None
    stage: Stage = "rcpt"

    def scored(self, similarity: float) -> Refusal:
        """Return a copy with its ``similarity`` to an address."""
        return replace(self, similarity=similarity)

    def to_json(self) -> JSON:
        """Return the JSON object form; ``similarity`` only when set."""
        data: JSON = {
            "at": format_timestamp(self.at, milliseconds=True),
            "address": self.address,
            "reply": self.reply,
            "client_ip": self.client_ip,
            "helo": self.helo,
            "stage": self.stage,
        }
        if self.similarity is not None:
            data["similarity"] = self.similarity
        if self.transcript is not None:
            data["transcript"] = self.transcript.to_json()
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Refusal:
        """Build a refusal from its JSON object form; one without ``stage`` is at RCPT."""
        similarity, transcript = data.get("similarity"), data.get("transcript")
        stage = data.get("stage", "rcpt")
        if stage not in ("rcpt", "data"):
            raise ValueError(f"not a refusal stage: {stage!r}")
        return cls(
            at=parse_timestamp(data["at"]),
            address=data["address"],
            reply=data["reply"],
            client_ip=data.get("client_ip"),
            helo=data.get("helo"),
            similarity=None if similarity is None else float(similarity),
            transcript=None if transcript is None else _transcript(transcript),
            stage=cast(Stage, stage),
        )


def _transcript(data: dict[str, Any]) -> Transcript:
    """Read a transcript's JSON object; its module is imported only when one is read."""
    from .transcripts import Transcript

    return Transcript.from_json(data)


def provider_url(api_url: str, name: str) -> str:
    """The base URL to give provider ``name``'s SDK, from the server's API URL (``.../api``).

    Each provider's paths are served under ``/providers/<name>`` beside ``/api``
    (see docs/providers.md), and Postmark's at the origin's root too, since
    postmarker drops the path of its URL: its URL is the origin, with no path.
    An unknown name is a :class:`ValueError` naming the known ones.
    """
    if name not in PROVIDERS:
        raise ValueError(f"no provider {name!r}: the server answers {', '.join(PROVIDERS)}")
    if name in _ROOTED:  # its SDK drops the URL's path: served at the origin's root too
        scheme, rest = api_url.split("://", 1) if "://" in api_url else ("http", api_url)
        return f"{scheme}://{rest.split('/', 1)[0]}"
    root = api_url[: -len("/api")] if api_url.endswith("/api") else api_url.rstrip("/")
    return f"{root}/providers/{name}"


_SIDE_VALUES = frozenset({"DkimResult", "DkimStatus", "ProviderRecord", "Unsubscribe"})


def __getattr__(name: str) -> Any:
    # PEP 562: the values beside the mail are created when first asked for.
    if name in _SIDE_VALUES:
        return getattr(import_module("pytest_tempinbox.side_values"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
