"""Inboxes, the messages routed to them, and waiting for new ones; no I/O.

The store is the single source of truth that the SMTP handler writes into and
the HTTP API reads from. It is not thread-safe: the server uses it from its
event loop thread only, which is also where :meth:`Store.wait` must be awaited.
"""

from __future__ import annotations

import asyncio
import bisect
import json
import logging
import re
import secrets
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import cached_property

from .errors import InboxNotFound, InvalidAddress, InvalidRequest, MessageNotFound
from .models import Envelope, Message
from .parsing import ParsedMessage, parse_message

__all__ = [
    "DEFAULT_DOMAIN",
    "MAX_ADDRESS_LENGTH",
    "Inbox",
    "Store",
    "StoredMessage",
    "normalize_address",
]

log = logging.getLogger(__name__)

DEFAULT_DOMAIN = "tempinbox.test"
MAX_ADDRESS_LENGTH = 254
PREFIX_PATTERN = re.compile(r"[a-z0-9._-]{1,32}")
# Lowercase letters and digits: 36 symbols, so 12 of them carry about 62 bits.
_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789"
_RANDOM_LENGTH = 12


def normalize_address(address: str) -> str:
    """Return ``address`` lowercased, or raise :class:`InvalidAddress` if it is not an address.

    An address has a non-empty local part, an ``@`` and a non-empty domain, at
    most 254 characters in all, and no whitespace or control characters.
    """
    local, at, domain = address.rpartition("@")
    if (
        not at
        or not local
        or not domain
        or len(address) > MAX_ADDRESS_LENGTH
        or any(char.isspace() or ord(char) < 32 or char == "\x7f" for char in address)
    ):
        raise InvalidAddress(f"{address[:80]!r} is not an email address")
    return address.lower()


class StoredMessage:
    """One copy of a received message, as delivered to one inbox.

    The raw bytes are kept exactly as received; parsing happens on first read
    and is cached, as is the JSON form.
    """

    __slots__ = ("__dict__", "envelope", "id", "inbox", "raw", "received_at")

    def __init__(
        self, id: str, inbox: str, envelope: Envelope, raw: bytes, received_at: datetime
    ) -> None:
        self.id = id
        self.inbox = inbox
        self.envelope = envelope
        self.raw = raw
        self.received_at = received_at

    @cached_property
    def parsed(self) -> ParsedMessage:
        """The fields parsed from the raw bytes (computed once).

        The parser never raises by design; should it fail anyway, the message is
        still served, with empty parsed fields, and the failure is logged.
        """
        try:
            return parse_message(self.raw)
        except Exception:
            log.exception("failed to parse message %s; serving it unparsed", self.id)
            return parse_message(b"")

    def message(self) -> Message:
        """Return the full message object that the API serves."""
        parsed = self.parsed
        return Message(
            id=self.id,
            inbox=self.inbox,
            envelope=self.envelope,
            message_id=parsed.message_id,
            sender=parsed.sender,
            to=parsed.to,
            cc=parsed.cc,
            reply_to=parsed.reply_to,
            subject=parsed.subject,
            date=parsed.date,
            received_at=self.received_at,
            text=parsed.text,
            html=parsed.html,
            headers=parsed.headers,
            attachments=parsed.attachments,
            links=parsed.links,
            codes=parsed.codes,
            size=len(self.raw),
        )

    @cached_property
    def json(self) -> bytes:
        """The message's JSON object, UTF-8 encoded (computed once)."""
        return json.dumps(
            self.message().to_json(), ensure_ascii=False, separators=(",", ":")
        ).encode("utf-8")


@dataclass(eq=False)
class Inbox:
    """A generated address (a routing session) and the messages delivered to it, oldest first."""

    address: str
    created_at: datetime
    expires_at: datetime | None = None
    messages: list[StoredMessage] = field(default_factory=list)
    by_id: dict[str, StoredMessage] = field(default_factory=dict)
    waiters: set[asyncio.Future[None]] = field(default_factory=set)

    def messages_after(self, after: str | None) -> list[StoredMessage]:
        """Return the messages received after the message ``after`` (all of them for None).

        Raises :class:`InvalidRequest` when ``after`` is not the id of a message in
        this inbox.
        """
        if after is None:
            return list(self.messages)
        if after not in self.by_id:
            raise InvalidRequest(f"after={after[:80]!r} is not the id of a message in this inbox")
        # Ids sort in arrival order, so the cursor's position is a binary search away.
        return self.messages[bisect.bisect_right(self.messages, after, key=_message_id) :]

    def wake(self) -> None:
        """Wake every pending :meth:`Store.wait` on this inbox."""
        for waiter in self.waiters:
            if not waiter.done():
                waiter.set_result(None)
        self.waiters.clear()


def _message_id(message: StoredMessage) -> str:
    return message.id


class Store:
    """Every live inbox of one server, keyed by lowercase address.

    ``domains`` are the domains generated addresses may use, the first being the
    default. Generated addresses are never handed out twice in the store's life:
    each carries 12 random characters from :mod:`secrets` and a sequence number.
    """

    def __init__(self, domains: Iterable[str] = (DEFAULT_DOMAIN,)) -> None:
        self.domains: tuple[str, ...] = tuple(dict.fromkeys(d.lower() for d in domains))
        if not self.domains:
            raise ValueError("a store needs at least one domain")
        self._inboxes: dict[str, Inbox] = {}
        self._generated = 0
        self._last_ms = 0
        self._sequence = 0
        self._closed = False

    def __len__(self) -> int:
        return len(self._inboxes)

    def generate(self, prefix: str | None = None, domain: str | None = None) -> Inbox:
        """Create an inbox at a brand new address and return it.

        ``prefix`` (1-32 of ``a-z 0-9 . _ -``, not starting with a dot nor holding
        two dots in a row) starts the local part; ``domain`` must be one of the
        store's domains. Bad values raise :class:`InvalidRequest`.
        """
        if prefix is not None and (
            not PREFIX_PATTERN.fullmatch(prefix) or prefix.startswith(".") or ".." in prefix
        ):
            raise InvalidRequest(
                "prefix must be 1-32 characters of a-z, 0-9, '.', '_' and '-',"
                " not starting with '.' and without '..'"
            )
        if domain is None:
            domain = self.domains[0]
        elif domain.lower() not in self.domains:
            raise InvalidRequest(
                f"domain {domain[:80]!r} is not served here; use one of: {', '.join(self.domains)}"
            )
        self._generated += 1
        token = "".join(secrets.choice(_ALPHABET) for _ in range(_RANDOM_LENGTH))
        token += _base36(self._generated)
        local = f"{prefix}-{token}" if prefix else token
        address = f"{local}@{domain.lower()}"
        inbox = Inbox(address=address, created_at=datetime.now(timezone.utc))
        self._inboxes[address] = inbox
        return inbox

    def get(self, address: str) -> Inbox:
        """Return the live inbox at ``address`` (any case).

        Raises :class:`InvalidAddress` for a string that is not an address and
        :class:`InboxNotFound` for an address with no live inbox.
        """
        inbox = self._inboxes.get(normalize_address(address))
        if inbox is None:
            raise InboxNotFound(f"no inbox at {address[:80]!r}: never generated, or deleted")
        return inbox

    def accepts(self, address: str) -> bool:
        """Tell whether mail to ``address`` (any case) has a live inbox to go to."""
        return address.lower() in self._inboxes

    def deliver(self, mail_from: str, rcpt_to: Sequence[str], raw: bytes) -> list[StoredMessage]:
        """Store one copy of ``raw`` in each live inbox among ``rcpt_to`` and wake their waiters.

        Recipients without a live inbox (and repeats) get nothing. Returns the
        stored copies; an empty list means nobody was there to receive it.
        """
        envelope = Envelope(mail_from=mail_from, rcpt_to=tuple(rcpt_to))
        received_at = datetime.now(timezone.utc)
        stored = []
        for address in dict.fromkeys(rcpt.lower() for rcpt in rcpt_to):
            inbox = self._inboxes.get(address)
            if inbox is None:
                continue
            message = StoredMessage(self._next_id(), inbox.address, envelope, raw, received_at)
            inbox.messages.append(message)
            inbox.by_id[message.id] = message
            inbox.wake()
            stored.append(message)
        return stored

    def message(self, address: str, id: str) -> StoredMessage:
        """Return message ``id`` of the inbox at ``address``; :class:`MessageNotFound` if absent."""
        message = self.get(address).by_id.get(id)
        if message is None:
            raise MessageNotFound(f"the inbox has no message with id {id[:80]!r}")
        return message

    def delete(self, address: str) -> int:
        """Destroy the inbox at ``address`` and its messages; return how many were purged.

        Mail to the address is refused from then on, and pending waits end with
        :class:`InboxNotFound`.
        """
        inbox = self.get(address)
        del self._inboxes[inbox.address]
        inbox.wake()
        purged = len(inbox.messages)
        inbox.messages.clear()
        inbox.by_id.clear()
        return purged

    async def wait(
        self, address: str, *, after: str | None = None, timeout: float = 0.0
    ) -> list[StoredMessage]:
        """Return the messages after ``after``, waiting up to ``timeout`` seconds for one.

        Returns at once when there already is one; otherwise as soon as a
        delivery wakes it (no polling), or with ``[]`` when the time is up or the
        store closes. Raises :class:`InboxNotFound` if the inbox is (or gets)
        deleted.
        """
        inbox = self.get(address)
        messages = inbox.messages_after(after)
        if messages or timeout <= 0 or self._closed:
            return messages
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        inbox.waiters.add(waiter)
        try:
            await asyncio.wait_for(waiter, timeout)
        except asyncio.TimeoutError:
            pass
        finally:
            inbox.waiters.discard(waiter)
        # Woken by a delivery (there is a message now), a delete (get raises) or
        # close (the list may be empty).
        return self.get(address).messages_after(after)

    def close(self) -> None:
        """End every pending wait (they answer with what they have) and refuse new waits."""
        self._closed = True
        for inbox in self._inboxes.values():
            inbox.wake()

    def _next_id(self) -> str:
        # Milliseconds then a sequence number, both fixed-width hex: sorting the
        # ids as strings sorts them by arrival, even if the wall clock steps back.
        self._last_ms = max(self._last_ms, time.time_ns() // 1_000_000)
        self._sequence += 1
        return f"{self._last_ms:012x}{self._sequence:08x}"


def _base36(number: int) -> str:
    digits = ""
    while True:
        number, digit = divmod(number, 36)
        digits = _ALPHABET[digit] + digits
        if not number:
            return digits
