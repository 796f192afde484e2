"""A received mail as a test reads it: :class:`Message`, over the plain values it is made of.

:class:`Message` holds the fields the parser found and reads them with the
parser's pickers (:meth:`~Message.link`, :meth:`~Message.code`,
:meth:`~Message.attachment`) and the checks, so this module sits above
:mod:`~pytest_tempinbox.parsing` and :mod:`~pytest_tempinbox.checks`. The
pickers are imported at the top; the checks that need more than the fields
(HTML support, links, spam: caniemail's data, ssl and sockets, a process) when
first used, so that a test that only reads its mail does not pay for them. The
values it is made of (:class:`Address`, :class:`Attachment`, :class:`Link`,
:class:`Envelope`, and the server's :class:`Fault` and :class:`Refusal`) are
data only, in :mod:`pytest_tempinbox.values`, and re-exported here.

The JSON round trip (:meth:`Message.to_json`, :meth:`Message.from_json`, which
the server and the client share so the two forms cannot drift) is plain data.
Some methods do I/O, and say so: :meth:`~Message.raw` and
:meth:`Attachment.content` download from the server the message came from,
:meth:`~Message.check_links` makes HTTP requests to every link,
:meth:`~Message.spam_report` runs SpamAssassin in a process, and
:meth:`~Message.open` and :meth:`~Message.screenshot` drive a browser. The
module is long because :class:`Message` is one class, the public API of a
received mail, each method with the docstring its users read.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from types import ModuleType
from typing import TYPE_CHECKING, Any, Protocol

from .errors import MailAssertionError, TempInboxError
from .parsing.attachments import pick_attachment
from .parsing.codes import pick_code
from .parsing.failures import about
from .parsing.links import pick_link
from .values import (
    JSON,
    Address,
    Attachment,
    Envelope,
    Fault,
    Link,
    LinkSource,
    Refusal,
    Stage,
    _unavailable,
    format_timestamp,
    parse_timestamp,
)

if TYPE_CHECKING:
    # The checks that take more than the fields: imported when used (see Message.check_links).
    from .checks.html_support import HtmlCompatibility
    from .checks.links import LinkReport
    from .checks.spam import SpamReport
    from .side_values import DkimResult, ProviderRecord, Unsubscribe
    from .transcripts import Transcript

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
    "ProviderRecord",
    "Refusal",
    "ScreenshotPage",
    "Stage",
    "format_timestamp",
    "parse_timestamp",
]


class MessageSource(Protocol):
    """Where a message's raw bytes and attachments come from: in practice, the client."""

    def raw(self, email: str, id: str) -> bytes:
        """Return the raw bytes of message ``id`` of inbox ``email``."""

    def attachment(self, email: str, id: str, index: int) -> bytes:
        """Return the decoded bytes of attachment ``index`` of message ``id``."""

    async def raw_async(self, email: str, id: str) -> bytes:
        """Like :meth:`raw`, awaitable."""

    def transcript(self, email: str, id: str) -> Transcript:
        """Return the SMTP conversation that delivered message ``id``."""

    async def transcript_async(self, email: str, id: str) -> Transcript:
        """Like :meth:`transcript`, awaitable."""

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


def _unavailable_url() -> str:
    raise TempInboxError("this message was not fetched from a server, so it has no page")


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
    ``provider`` is what an email provider's API kept of the send (its name,
    template, tags...; see docs/providers.md), None for mail that came by SMTP.
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
    provider: ProviderRecord | None = None
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

    def transcript(self) -> Transcript:
        """The SMTP conversation that delivered the message (docs/transcripts.md)."""
        if self.source is None:
            _unavailable()
        assert self.source is not None
        return self.source.transcript(self.inbox, self.id)

    async def transcript_async(self) -> Transcript:
        """Like :meth:`transcript`, awaitable."""
        if self.source is None:
            _unavailable()
        assert self.source is not None
        return await self.source.transcript_async(self.inbox, self.id)

    def _about(self) -> str:
        return about(self.subject, self.sender, self.envelope.mail_from)

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
        # A message served by an older server has no details: its URLs, without texts.
        links = self.link_details or tuple(Link(url, None, "text") for url in self.links)
        return pick_link(links, text, contains=contains, pattern=pattern, about=self._about())

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
        return pick_code(self.subject, self.text, self.html, pattern, about=self._about())

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
        return pick_attachment(
            self.attachments, name, content_type=content_type, inline=inline, about=self._about()
        )

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
        from .checks import html_support  # when used: its parser and caniemail's data

        return html_support.html_compatibility(self.html or "", clients=clients)

    def assert_html_support(
        self, at_least: float = 90.0, *, clients: Iterable[str] | str | None = None
    ) -> HtmlCompatibility:
        """:meth:`html_compatibility`, raising unless it scores ``at_least`` percent.

        Raises :class:`~pytest_tempinbox.errors.MailAssertionError` listing the
        features that hold the message back, worst first, with the clients that
        lack each and its caniemail page. Returns the report otherwise.
        """
        __tracebackhide__ = True
        from .checks import html_support

        report = self.html_compatibility(clients=clients)
        html_support.assert_html_support(report, at_least)
        return report

    def spam_report(self, *, timeout: float = 60.0) -> SpamReport:
        """Score the message with SpamAssassin, run here with its shipped rules, no network.

        I/O: downloads the raw message from the server first, then runs the
        ``spamassassin`` program in a process. Takes about a second.
        Raises :class:`~pytest_tempinbox.errors.SpamAssassinMissing`, saying what
        to install, where the ``spamassassin`` program is not found.
        """
        from .checks import spam  # when used: subprocess and tempfile

        return spam.spam_report(self.raw(), timeout=timeout)

    def assert_spam_score(self, below: float = 5.0, *, timeout: float = 60.0) -> SpamReport:
        """:meth:`spam_report`, raising unless the score is below ``below``.

        Raises :class:`~pytest_tempinbox.errors.MailAssertionError` listing the
        rules that fired, biggest score first. Returns the report otherwise.
        """
        __tracebackhide__ = True
        from .checks import spam

        report = self.spam_report(timeout=timeout)
        spam.assert_spam_score(report, below)
        return report

    @property
    def unsubscribe(self) -> Unsubscribe | None:
        """The ``List-Unsubscribe`` headers read (RFC 2369, RFC 8058); None without them.

        Their http(s) and mailto targets, whether one-click unsubscribe is
        offered, and what is wrong with the headers (``problems``).
        """
        from .parsing.unsubscribe import parse_unsubscribe

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
        from .checks.unsubscribe import unsubscribe_link

        return unsubscribe_link(self.unsubscribe, one_click=one_click)

    def check_links(
        self, *, ignore: Iterable[str | re.Pattern[str]] = (), timeout: float = 5.0
    ) -> LinkReport:
        """Request every http(s) link and image of the message, from this process; report each.

        I/O: real HTTP requests, one or two per target, over the network.
        HEAD first, GET where HEAD is refused; redirects followed and reported;
        at most 8 at a time, each within ``timeout`` seconds. ``ignore``: a
        string is a part of the URLs to leave out, a compiled pattern is
        searched. Links to the application under test on localhost are
        requested as any other (no proxy for loopback).
        """
        # When used: ssl, sockets and a thread pool, which a test that reads its mail never needs.
        from .checks import links as link_checks
        from .checks.link_targets import link_targets

        return link_checks.check_links(
            link_targets(self.links, self.html), ignore=ignore, timeout=timeout
        )

    def assert_links_work(
        self, *, ignore: Iterable[str | re.Pattern[str]] = (), timeout: float = 5.0
    ) -> LinkReport:
        """:meth:`check_links`, raising :class:`~pytest_tempinbox.errors.MailAssertionError`.

        The failure lists each broken link with its status or error, and where
        it was redirected. Returns the report when every link works.
        """
        __tracebackhide__ = True
        from .checks import links as link_checks

        report = self.check_links(ignore=ignore, timeout=timeout)
        link_checks.assert_links_work(report)
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
            "provider": None if self.provider is None else self.provider.to_json(),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any], source: MessageSource | None = None) -> Message:
        """Build a message from its JSON object form.

        ``source`` (the client it came from) lets :meth:`raw` and each attachment's
        :meth:`Attachment.content` download their bytes.
        """
        sender = data.get("from")
        date = data.get("date")
        dkim = data.get("dkim")  # None too from a server that does not report it
        provider = data.get("provider")  # likewise
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
            dkim=None if dkim is None else _side_values().DkimResult.from_json(dkim),
            subaddress=data.get("subaddress"),
            provider=None
            if provider is None
            else _side_values().ProviderRecord.from_json(provider),
            source=source,
        )


def _side_values() -> ModuleType:
    """The values beside the mail (:mod:`.side_values`), imported when a message has one."""
    from . import side_values

    return side_values


def __getattr__(name: str) -> Any:
    # PEP 562: re-export the values beside the mail without creating them at import.
    if name == "ProviderRecord":
        return _side_values().ProviderRecord
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
