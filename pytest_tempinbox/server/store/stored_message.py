"""One copy of a received message as a store keeps it: raw bytes, parsed on first read.

Any store hands these out (see :mod:`.protocol`): they hold no state of the store
that made them, so the HTTP side reads, parses and filters them alike whatever
keeps the inboxes. The one setting they carry is the public keys their DKIM
signature is verified with when parsed (the server's ``dkim_keys``).

A copy holds its raw bytes as they are; where the memory store is asked to
compress them (``compress_read_messages``), it makes :class:`CompressingMessage`
copies, whose bytes a :class:`CompressedBody` keeps compressed once a copy has
been parsed (``docs/limits.md``, "Memory under load").
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from datetime import datetime
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from ...models import Envelope, Message
from ...parsing.match import searchable_text
from ...parsing.message import parse_message
from .addresses import subaddress_of

if TYPE_CHECKING:
    from ...side_values import ProviderRecord

__all__ = [
    "NO_KEYS",
    "CompressedBody",
    "CompressingMessage",
    "Facets",
    "StoredMessage",
    "next_validity",
]

NO_KEYS: Mapping[str, str] = MappingProxyType({})
"""No DKIM keys: a signed message's DKIM is then a ``fail`` naming the key it lacks."""

log = logging.getLogger(__name__)

Facets = tuple[str, str | None, tuple[str, ...]]
"""What the filters of ``GET /api/messages/{email}`` look at in a message.

Its subject, its ``From`` address (None without one), and the white-space
collapsed forms of its text and HTML bodies that the ``text`` filter searches
(see :mod:`pytest_tempinbox.parsing.match`).
"""


PACK_FROM = 512
"""Raw bodies shorter than this many bytes are never compressed: too little to save."""


class CompressedBody:
    """A message's raw bytes (its copies' alike), kept compressed once :meth:`pack` is called.

    Until then, and for good if packing would save less than an eighth of
    them or they are under :data:`PACK_FROM` bytes, they are kept as they are
    (:attr:`plain`). Packed, they are zlib's (level 1), and :meth:`raw`
    decompresses them on each use. Packing is safe beside readers on other
    threads: a reader sees the bytes plain or packed, never neither.
    """

    __slots__ = ("_packed", "plain", "size")

    def __init__(self, raw: bytes) -> None:
        self.plain: bytes | None = raw
        """The bytes as received, until packed; then None."""
        self.size = len(raw)
        """The length of the bytes as received."""
        self._packed: bytes | None = None  # or the plain bytes, when packing did not pay

    def raw(self) -> bytes:
        """The bytes as received (decompressed, if packed)."""
        plain = self.plain
        if plain is not None:
            return plain
        import zlib

        assert self._packed is not None
        return zlib.decompress(self._packed)

    @property
    def is_packed(self) -> bool:
        """Tell whether the bytes are kept compressed."""
        return self.plain is None

    def pack(self) -> None:
        """Keep the bytes compressed from now on, unless that saves too little (then never)."""
        plain = self.plain
        if plain is None or self._packed is not None:
            return  # packed already, or tried
        if len(plain) < PACK_FROM:
            self._packed = plain
            return
        import zlib

        # A 4 KiB window and memLevel 6 need 48 KiB: the default's 256 KiB is
        # mapped and unmapped anew on each call, which costs twice the compression.
        compressor = zlib.compressobj(1, zlib.DEFLATED, 12, 6)
        packed = compressor.compress(plain) + compressor.flush()
        if len(packed) > len(plain) - len(plain) // 8:
            self._packed = plain
            return
        self._packed = packed
        self.plain = None


class StoredMessage:
    """One copy of a received message, as delivered to one inbox.

    The raw bytes are kept exactly as received; parsing happens on first read
    (its DKIM verified with ``dkim_keys``), and only its JSON form is kept (the
    most compact of the parsed forms). The first filtered read of it also keeps
    its :data:`Facets`. ``provider`` is the record of a send through an email
    provider's API (None for SMTP mail). ``uid`` is the copy's number in its
    inbox, from 1, increasing, never given twice in the inbox's life: the UID
    that IMAP and POP3 readers see (0 for a copy not stored). ``transcript``
    is the SMTP transcript kept with it (``server/smtp/transcript.py``), by a
    store that keeps its messages in memory; else None. ``raw`` is the bytes
    or the :class:`CompressedBody` that the copies of one delivery share.
    """

    __slots__ = (
        "_facets",
        "_json",
        "_raw",
        "_subaddress",
        "dkim_keys",
        "envelope",
        "id",
        "inbox",
        "provider",
        "received_at",
        "transcript",
        "uid",
    )

    compresses = False
    """Whether the copy's bytes are compressed once it is parsed (:class:`CompressingMessage`)."""

    def __init__(
        self,
        id: str,
        inbox: str,
        envelope: Envelope,
        raw: bytes | CompressedBody,
        received_at: datetime,
        dkim_keys: Mapping[str, str] = NO_KEYS,
        provider: ProviderRecord | None = None,
        uid: int = 0,
    ) -> None:
        self.id = id
        self.uid = uid
        self.inbox = inbox
        self.envelope = envelope
        self._raw = raw
        self.received_at = received_at
        self.dkim_keys = dkim_keys
        self.provider = provider
        self.transcript: tuple[Any, ...] | None = None
        self._json: bytes | None = None
        self._facets: Facets | None = None
        self._subaddress: str | bool | None = False  # False: not worked out yet

    @property
    def raw(self) -> bytes:
        """The message's bytes as received (decompressed, if they are kept packed)."""
        raw = self._raw
        return raw.raw() if isinstance(raw, CompressedBody) else raw

    @property
    def size(self) -> int:
        """The length of :attr:`raw`: read without decompressing it."""
        raw = self._raw
        return raw.size if isinstance(raw, CompressedBody) else len(raw)

    @property
    def body(self) -> CompressedBody | None:
        """The :class:`CompressedBody` the delivery's copies share; None: bytes kept as they are."""
        raw = self._raw
        return raw if isinstance(raw, CompressedBody) else None

    @property
    def subaddress(self) -> str | None:
        """The sub-address the copy came through (``detail`` of ``name+detail@``), or None.

        Worked out from the envelope's recipients (:func:`~.addresses.subaddress_of`),
        so that every store records it alike without keeping it: the first
        recipient of the inbox's in RCPT order is the one.
        """
        found = self._subaddress
        if found is False:
            found = self._subaddress = subaddress_of(self.inbox, self.envelope.rcpt_to)
        assert found is not True
        return found

    def _compress(self) -> None:
        raw = self._raw
        if not isinstance(raw, CompressedBody):
            # Two threads here at once each make one: either serves alike.
            raw = self._raw = CompressedBody(raw)
        raw.pack()

    def message(self) -> Message:
        """Parse the raw bytes into the full message object that the API serves.

        The parser never raises by design; should it fail anyway, the message is
        still served, with empty parsed fields, and the failure is logged.
        """
        from ...checks.dkim import verify_dkim  # on the first parse: a server may never parse

        raw = self.raw
        try:
            parsed = parse_message(raw)
        except Exception:
            log.exception("failed to parse message %s; serving it unparsed", self.id)
            parsed = parse_message(b"")
        return Message(
            id=self.id,
            inbox=self.inbox,
            subaddress=self.subaddress,
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
            size=len(raw),
            defects=parsed.defects,
            link_details=parsed.link_details,
            dkim=verify_dkim(raw, self.dkim_keys),
            provider=self.provider,
        )

    @property
    def is_parsed(self) -> bool:
        """Tell whether the JSON form is computed already (reading it is then free)."""
        return self._json is not None

    @property
    def json(self) -> bytes:
        """The message's JSON object, UTF-8 encoded (computed once).

        Two threads asking at once may both compute it; they get equal bytes.
        """
        if self._json is None:
            self._json = _json_bytes(self.message())
            if self.compresses:
                self._compress()
        return self._json

    @property
    def has_facets(self) -> bool:
        """Tell whether :meth:`facets` is computed already (reading it is then free)."""
        return self._facets is not None

    def facets(self) -> Facets:
        """What the message filters look at (computed once, with the JSON form if not parsed yet).

        Kept only for messages that a filter has looked at: the text forms cost
        about the size of the message's text again, which reads without a
        filter never pay.
        """
        facets = self._facets
        if facets is None:
            if self._json is None:
                message = self.message()
                self._json = _json_bytes(message)
                if self.compresses:
                    self._compress()
                sender = None if message.sender is None else message.sender.email
                subject, text, html = message.subject, message.text, message.html
            else:  # decoding the JSON costs a fraction of parsing the message again
                data = json.loads(self._json)
                sender = None if data["from"] is None else data["from"]["email"]
                subject, text, html = data["subject"], data["text"], data["html"]
            facets = self._facets = (subject, sender, searchable_text(text, html))
        return facets


class CompressingMessage(StoredMessage):
    """A copy whose raw bytes are kept compressed once it has been parsed (:class:`CompressedBody`).

    The memory store makes these when asked to (``compress_read_messages``).
    The copies of a delivery to several inboxes share one body from the start;
    a lone copy gets its own when first parsed, so that delivery pays nothing.
    """

    __slots__ = ()

    compresses = True


def _json_bytes(message: Message) -> bytes:
    return json.dumps(message.to_json(), ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def next_validity(created: datetime, last: int) -> int:
    """An inbox's UIDVALIDITY: its creation second, above ``last`` (the store's previous one).

    So an inbox created again at an address in the same second (its UIDs
    starting at 1 again) never shares its former number; many creations in
    one second run ahead of the clock by one each, which the 32-bit range
    leaves room for (about 2.5 billion creations past now).
    """
    return max(int(created.timestamp()), last + 1)
