"""The data the service hands out: messages, addresses, attachments, and their JSON form.

Standard library only and no I/O: the server builds these from what it stored,
the client rebuilds them from the JSON the server sent, and both use
:meth:`Message.to_json` / :meth:`Message.from_json` so the two forms cannot drift.
The module is long because each of its seven data classes carries its JSON form
both ways beside its fields, where a reader of one looks for the other.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Literal, Protocol, cast

from .errors import TempInboxError

__all__ = [
    "Address",
    "Attachment",
    "Envelope",
    "Fault",
    "Link",
    "LinkSource",
    "Message",
    "MessageSource",
    "Refusal",
    "Stage",
    "format_timestamp",
    "parse_timestamp",
]

JSON = dict[str, Any]
Stage = Literal["rcpt", "data"]
"""Where in an SMTP transaction an injected fault strikes: at ``RCPT TO`` or at the end of DATA."""
LinkSource = Literal["html", "text"]
"""Where a link was found: an ``<a>`` or ``<area>`` of the HTML body, or a URL in the text body."""


def format_timestamp(moment: datetime, *, milliseconds: bool = False) -> str:
    """Format an aware datetime as RFC 3339, writing UTC as ``Z``."""
    text = moment.isoformat(timespec="milliseconds" if milliseconds else "seconds")
    return text[:-6] + "Z" if text.endswith("+00:00") else text


def parse_timestamp(text: str) -> datetime:
    """Parse an RFC 3339 timestamp (as :func:`format_timestamp` writes) to an aware datetime."""
    moment = datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith("Z") else text)
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


class MessageSource(Protocol):
    """Where a message's raw bytes and attachments come from: in practice, the client."""

    def raw(self, email: str, id: str) -> bytes:
        """Return the raw bytes of message ``id`` of inbox ``email``."""

    def attachment(self, email: str, id: str, index: int) -> bytes:
        """Return the decoded bytes of attachment ``index`` of message ``id``."""

    async def raw_async(self, email: str, id: str) -> bytes:
        """Like :meth:`raw`, awaitable."""

    async def attachment_async(self, email: str, id: str, index: int) -> bytes:
        """Like :meth:`attachment`, awaitable."""


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
class Message:
    """One received email as one inbox sees it, parsed.

    ``sender`` is the ``From`` header (``from`` in JSON, a Python keyword);
    ``envelope.mail_from`` is who the SMTP client said it was. ``headers`` maps
    lowercase names to every decoded value in order. ``links`` and ``codes`` are
    the http(s) URLs and likely one-time codes found in the message, the codes
    most likely first (see :meth:`code`). ``defects`` are notes on what in the
    message was malformed or left unread.
    """

    id: str
    inbox: str
    envelope: Envelope
    message_id: str | None
    sender: Address | None
    to: tuple[Address, ...]
    cc: tuple[Address, ...]
    reply_to: tuple[Address, ...]
    subject: str
    date: datetime | None
    received_at: datetime
    text: str | None
    html: str | None
    headers: Mapping[str, tuple[str, ...]]
    attachments: tuple[Attachment, ...]
    links: tuple[str, ...]
    codes: tuple[str, ...]
    size: int
    defects: tuple[str, ...] = ()
    link_details: tuple[Link, ...] = ()
    source: MessageSource | None = field(default=None, repr=False, compare=False)

    def raw(self) -> bytes:
        """Download the message exactly as the server received it."""
        if self.source is None:
            return _unavailable()
        return self.source.raw(self.inbox, self.id)

    async def raw_async(self) -> bytes:
        """Like :meth:`raw`, awaitable."""
        if self.source is None:
            return _unavailable()
        return await self.source.raw_async(self.inbox, self.id)

    def link(
        self,
        text: str | None = None,
        *,
        contains: str | None = None,
        pattern: str | re.Pattern[str] | None = None,
    ) -> str:
        """Return the one URL the test means, picked by its anchor text and/or the URL itself.

        ``text``: the anchor's visible text equals this (case-insensitive, white
        space collapsed, symbols and punctuation around the words ignored: an
        arrow after a button's words does not count). ``contains``: the URL
        contains this. ``pattern``: the URL matches this regular expression
        (searched). Every filter given must hold. Several anchors with the same
        URL (a logo and a button) count as one. Raises
        :class:`~pytest_tempinbox.errors.MailAssertionError`, listing every link
        of the message with its text, when no URL or more than one distinct URL
        passes.
        """
        __tracebackhide__ = True
        from .parsing.links import pick_link

        return pick_link(self, text, contains=contains, pattern=pattern)

    def code(self, pattern: str | re.Pattern[str] | None = None) -> str:
        """Return the message's one-time code: the single most likely of :attr:`codes`.

        Raises :class:`~pytest_tempinbox.errors.MailAssertionError`, listing the
        candidates, when there is none, when none is next to a word meaning
        "code", alone on its line or emphasised, or when the two best are
        equally likely.
        With ``pattern`` (a regular expression), return its one match in the
        subject, the text body or the HTML's visible text instead (its first
        group, if it has groups).
        """
        __tracebackhide__ = True
        from .parsing.codes import pick_code

        return pick_code(self, pattern)

    def attachment(
        self, name: str | None = None, *, content_type: str | None = None, inline: bool = False
    ) -> Attachment:
        """Return the one attachment whose filename and content type match these patterns.

        ``name`` and ``content_type`` are shell-style patterns (``invoice-*.pdf``,
        ``image/*``), matched case-insensitively. Inline parts count only with
        ``inline=True``. Raises
        :class:`~pytest_tempinbox.errors.MailAssertionError`, listing the
        attachments (name, type, size), when none or several match.
        """
        __tracebackhide__ = True
        from .parsing.attachments import pick_attachment

        return pick_attachment(self, name, content_type=content_type, inline=inline)

    def to_json(self) -> JSON:
        """Return the JSON object form served by ``GET /api/messages/{email}``."""
        return {
            "id": self.id,
            "inbox": self.inbox,
            "envelope": self.envelope.to_json(),
            "message_id": self.message_id,
            "from": self.sender.to_json() if self.sender else None,
            "to": [address.to_json() for address in self.to],
            "cc": [address.to_json() for address in self.cc],
            "reply_to": [address.to_json() for address in self.reply_to],
            "subject": self.subject,
            "date": format_timestamp(self.date) if self.date else None,
            "received_at": format_timestamp(self.received_at, milliseconds=True),
            "text": self.text,
            "html": self.html,
            "headers": {name: list(values) for name, values in self.headers.items()},
            "attachments": [attachment.to_json() for attachment in self.attachments],
            "links": list(self.links),
            "link_details": [link.to_json() for link in self.link_details],
            "codes": list(self.codes),
            "size": self.size,
            "defects": list(self.defects),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any], source: MessageSource | None = None) -> Message:
        """Build a message from its JSON object form.

        ``source`` (the client it came from) lets :meth:`raw` and each attachment's
        :meth:`Attachment.content` download their bytes.
        """
        sender = data.get("from")
        date = data.get("date")
        inbox, id = data["inbox"], data["id"]

        def attachment(item: Mapping[str, Any]) -> Attachment:
            if source is None:
                return Attachment.from_json(item)
            index = item["index"]
            return Attachment.from_json(
                item,
                lambda: source.attachment(inbox, id, index),
                lambda: source.attachment_async(inbox, id, index),
            )

        return cls(
            id=id,
            inbox=inbox,
            envelope=Envelope.from_json(data["envelope"]),
            message_id=data.get("message_id"),
            sender=Address.from_json(sender) if sender else None,
            to=tuple(Address.from_json(item) for item in data["to"]),
            cc=tuple(Address.from_json(item) for item in data["cc"]),
            reply_to=tuple(Address.from_json(item) for item in data["reply_to"]),
            subject=data["subject"],
            date=parse_timestamp(date) if date else None,
            received_at=parse_timestamp(data["received_at"]),
            text=data.get("text"),
            html=data.get("html"),
            headers={name: tuple(values) for name, values in data["headers"].items()},
            attachments=tuple(attachment(item) for item in data["attachments"]),
            links=tuple(data["links"]),
            codes=tuple(data["codes"]),
            size=data["size"],
            defects=tuple(data.get("defects", ())),
            link_details=tuple(Link.from_json(item) for item in data.get("link_details", ())),
            source=source,
        )


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
    """A recipient the SMTP server refused at ``RCPT TO``: when, to whom, from which client.

    ``reply`` is the text of the server's answer after its code; ``client_ip``
    and ``helo`` (the name the client gave in EHLO or HELO) say who sent it, when
    known. ``similarity`` (0 to 1) is set when the refusals were asked for
    ``similar_to`` an address: how alike the two addresses are.
    """

    at: datetime
    address: str
    reply: str
    client_ip: str | None = None
    helo: str | None = None
    similarity: float | None = None

    def scored(self, similarity: float) -> Refusal:
        """Return a copy with its ``similarity`` to an address."""
        return Refusal(self.at, self.address, self.reply, self.client_ip, self.helo, similarity)

    def to_json(self) -> JSON:
        """Return the JSON object form; ``similarity`` only when set."""
        data: JSON = {
            "at": format_timestamp(self.at, milliseconds=True),
            "address": self.address,
            "reply": self.reply,
            "client_ip": self.client_ip,
            "helo": self.helo,
        }
        if self.similarity is not None:
            data["similarity"] = self.similarity
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Refusal:
        """Build a refusal from its JSON object form."""
        similarity = data.get("similarity")
        return cls(
            at=parse_timestamp(data["at"]),
            address=data["address"],
            reply=data["reply"],
            client_ip=data.get("client_ip"),
            helo=data.get("helo"),
            similarity=None if similarity is None else float(similarity),
        )
