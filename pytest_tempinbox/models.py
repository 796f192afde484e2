"""The data the service hands out: messages, addresses, attachments, and their JSON form.

Standard library only and no I/O: the server builds these from what it stored,
the client rebuilds them from the JSON the server sent, and both use
:meth:`Message.to_json` / :meth:`Message.from_json` so the two forms cannot drift.
The module is long because each of its seven data classes carries its JSON form
both ways beside its fields, where a reader of one looks for the other.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Literal, Protocol, cast

from .errors import MailAssertionError, TempInboxError

if TYPE_CHECKING:
    from .checks.dkim import DkimResult
    from .checks.html_support import HtmlCompatibility
    from .checks.links import LinkReport
    from .checks.spam import SpamReport
    from .checks.unsubscribe import Unsubscribe

__all__ = [
    "Address",
    "AsyncBrowserPage",
    "Attachment",
    "BrowserPage",
    "Envelope",
    "Fault",
    "Link",
    "LinkSource",
    "Message",
    "MessageSource",
    "Refusal",
    "ScreenshotPage",
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

    def html_url(self, email: str, id: str, *, remote_images: bool = False) -> str:
        """The URL of message ``id``'s HTML as its recipient sees it (the server's viewer)."""


class BrowserPage(Protocol):
    """A browser page to show a message in: Playwright's ``Page``, or anything with ``goto``."""

    def goto(self, url: str) -> Any:
        """Go to ``url`` and return when it has loaded."""


class ScreenshotPage(BrowserPage, Protocol):
    """A browser page that also takes screenshots, as Playwright's ``Page`` does."""

    def screenshot(self, *, path: str | None = None, full_page: bool | None = None) -> bytes:
        """Return a PNG of the page (of all of it with ``full_page``), also written to ``path``."""


class AsyncBrowserPage(Protocol):
    """Playwright's async ``Page``, as :meth:`Message.open_async` uses it."""

    async def goto(self, url: str) -> Any:
        """Go to ``url`` and return when it has loaded."""

    async def screenshot(self, *, path: str | None = None, full_page: bool | None = None) -> bytes:
        """Return a PNG of the page (of all of it with ``full_page``), also written to ``path``."""


def _unavailable() -> bytes:
    raise TempInboxError("this message was not fetched from a server, so it has no source")


def _dkim(data: Mapping[str, Any] | None) -> DkimResult | None:
    """The ``dkim`` of a message's JSON (None: a server that does not report it)."""
    if data is None:
        return None
    from .checks.dkim import DkimResult

    return DkimResult.from_json(data)


def _unavailable_url() -> str:
    raise TempInboxError("this message was not fetched from a server, so it has no page")


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
    message was malformed or left unread. ``subaddress`` is the ``detail`` of
    the recipient ``name+detail@domain`` the message reached the inbox
    ``name@domain`` through (RFC 5233), None when it came to the address itself.
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
    dkim: DkimResult | None = None
    subaddress: str | None = None
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

    def html_compatibility(
        self, *, clients: Iterable[str] | str | None = None
    ) -> HtmlCompatibility:
        """How well email clients support the message's HTML, from caniemail.com's data.

        Each HTML element, attribute and CSS feature the message uses that some
        client does not (fully) support, with the clients concerned and its
        caniemail page, and an overall percentage weighted as Mailpit weighs it
        (docs/checks.md). ``clients`` weighs only those: a family (``"gmail"``),
        a platform (``"outlook.windows"``) or a glob (``"*.ios"``). A message
        without HTML scores 100.
        """
        from .checks.html_support import html_compatibility

        return html_compatibility(self.html or "", clients=clients)

    def assert_html_support(
        self, at_least: float = 90.0, *, clients: Iterable[str] | str | None = None
    ) -> HtmlCompatibility:
        """:meth:`html_compatibility`, raising unless it scores ``at_least`` percent.

        Raises :class:`~pytest_tempinbox.errors.MailAssertionError` listing the
        features that hold the message back, worst first, with the clients that
        lack each and its caniemail page. Returns the report otherwise.
        """
        __tracebackhide__ = True
        from .checks.html_support import assert_html_support

        report = self.html_compatibility(clients=clients)
        assert_html_support(report, at_least)
        return report

    def spam_report(self, *, timeout: float = 60.0) -> SpamReport:
        """Score the message with SpamAssassin, run here with its shipped rules, no network.

        Downloads the raw message from the server first. Takes about a second.
        Raises :class:`~pytest_tempinbox.errors.SpamAssassinMissing`, saying what
        to install, where the ``spamassassin`` program is not found.
        """
        from .checks.spam import spam_report

        return spam_report(self.raw(), timeout=timeout)

    def assert_spam_score(self, below: float = 5.0, *, timeout: float = 60.0) -> SpamReport:
        """:meth:`spam_report`, raising unless the score is below ``below``.

        Raises :class:`~pytest_tempinbox.errors.MailAssertionError` listing the
        rules that fired, biggest score first. Returns the report otherwise.
        """
        __tracebackhide__ = True
        from .checks.spam import assert_spam_score

        report = self.spam_report(timeout=timeout)
        assert_spam_score(report, below)
        return report

    @property
    def unsubscribe(self) -> Unsubscribe | None:
        """The ``List-Unsubscribe`` headers read (RFC 2369, RFC 8058); None without them.

        Their http(s) and mailto targets, whether one-click unsubscribe is
        offered, and what is wrong with the headers (``problems``).
        """
        from .checks.unsubscribe import parse_unsubscribe

        return parse_unsubscribe(self.headers)

    def unsubscribe_link(self, *, one_click: bool = False) -> str:
        """Return the message's unsubscribe link (the https one first).

        Raises :class:`~pytest_tempinbox.errors.MailAssertionError` when the
        ``List-Unsubscribe`` header is missing, malformed or has no http(s)
        link. With ``one_click``, also when the message falls short of what
        Gmail and Yahoo require of bulk senders: an https link,
        ``List-Unsubscribe-Post: List-Unsubscribe=One-Click``, and, when the
        message is DKIM-signed, a signature covering both headers.
        """
        __tracebackhide__ = True
        from .checks.unsubscribe import parse_unsubscribe, unsubscribe_link

        return unsubscribe_link(parse_unsubscribe(self.headers), one_click=one_click)

    def check_links(
        self, *, ignore: Iterable[str | re.Pattern[str]] = (), timeout: float = 5.0
    ) -> LinkReport:
        """Request every http(s) link and image of the message, from this process; report each.

        HEAD first, GET where HEAD is refused; redirects followed and reported;
        at most 8 at a time, each within ``timeout`` seconds. ``ignore``: a
        string is a part of the URLs to leave out, a compiled pattern is
        searched. Links to the application under test on localhost are
        requested as any other (no proxy for loopback).
        """
        from .checks.link_targets import link_targets
        from .checks.links import check_links

        return check_links(link_targets(self.links, self.html), ignore=ignore, timeout=timeout)

    def assert_links_work(
        self, *, ignore: Iterable[str | re.Pattern[str]] = (), timeout: float = 5.0
    ) -> LinkReport:
        """:meth:`check_links`, raising :class:`~pytest_tempinbox.errors.MailAssertionError`.

        The failure lists each broken link with its status or error, and where
        it was redirected. Returns the report when every link works.
        """
        __tracebackhide__ = True
        from .checks.links import assert_links_work

        report = self.check_links(ignore=ignore, timeout=timeout)
        assert_links_work(report)
        return report

    def html_url(self, *, remote_images: bool = False) -> str:
        """The URL of the message's HTML as its recipient sees it, on the server's viewer.

        Inline ``cid:`` images are shown from the message's own parts; remote
        images load only with ``remote_images``; scripts never run; a link that
        opens a new window does, as in a mail program.
        """
        if self.source is None:
            return _unavailable_url()
        if self.html is None:
            raise MailAssertionError(
                f"expected an HTML body to show, but message {self.id} ({self.subject!r}) has"
                " only a text body: a browser would show no mail of its own"
            )
        return self.source.html_url(self.inbox, self.id, remote_images=remote_images)

    def open(self, page: BrowserPage, *, remote_images: bool = False) -> None:
        """Show the message's HTML in ``page`` as its recipient would see it (see :meth:`html_url`).

        ``page`` is a Playwright ``Page`` (or anything with ``goto``); the test
        then clicks its buttons like a person. Playwright is not imported here.
        """
        page.goto(self.html_url(remote_images=remote_images))

    async def open_async(self, page: AsyncBrowserPage, *, remote_images: bool = False) -> None:
        """Like :meth:`open`, for Playwright's async ``Page``."""
        await page.goto(self.html_url(remote_images=remote_images))

    def screenshot(
        self, page: ScreenshotPage, path: str | None = None, *, remote_images: bool = False
    ) -> bytes:
        """Open the message in ``page``; return a PNG of the whole mail (also saved to ``path``)."""
        self.open(page, remote_images=remote_images)
        return page.screenshot(path=path, full_page=True)

    async def screenshot_async(
        self, page: AsyncBrowserPage, path: str | None = None, *, remote_images: bool = False
    ) -> bytes:
        """Like :meth:`screenshot`, for Playwright's async ``Page``."""
        await self.open_async(page, remote_images=remote_images)
        return await page.screenshot(path=path, full_page=True)

    def to_json(self) -> JSON:
        """Return the JSON object form served by ``GET /api/messages/{email}``."""
        unsubscribe = self.unsubscribe
        return {
            "id": self.id,
            "inbox": self.inbox,
            "subaddress": self.subaddress,
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
            "unsubscribe": None if unsubscribe is None else unsubscribe.to_json(),
            "dkim": None if self.dkim is None else self.dkim.to_json(),
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
            dkim=_dkim(data.get("dkim")),
            subaddress=data.get("subaddress"),
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
