"""The event stream of an inbox, as Server-Sent Events; apart from any web framework.

:class:`EventStream` is one client's ``GET /api/events/{email}``: a ``message``
event per delivery (the message's summary, which names the provider of mail
sent through a provider's API), comment lines as heartbeats while
nothing happens, and a ``deleted`` event when the inbox is deleted or expires,
which ends the stream. It wakes on the store's own deliveries (no polling), and
ends at once when the store closes, so that a stopping server does not wait
for it. While the store does not answer (Redis down), the stream stays open:
it sends a :data:`STORE_DOWN` comment line, tries again every second or so,
and goes on from its cursor when the store is back, so that nothing delivered
meanwhile is missed. :class:`StreamSlots` bounds how many streams are open at once.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncGenerator
from typing import Any

from ...errors import InboxNotFound, InvalidRequest, StoreUnavailable
from ..store.protocol import InboxStore
from ..store.stored_message import StoredMessage
from .endpoints import INLINE_PARSE_BYTES, Reply, encode_json
from .messages import subaddress_filter
from .request import Request
from .stream_slots import StreamSlots

__all__ = [
    "EVENT_STREAM_TYPE",
    "HEARTBEAT",
    "STORE_DOWN",
    "EventStream",
    "StreamSlots",
    "events",
    "stream_cursor",
]

EVENT_STREAM_TYPE = "text/event-stream"
HEARTBEAT = b": heartbeat\n\n"
STORE_DOWN = b": the store does not answer; trying again\n\n"
"""The comment line a stream sends each time the store does not answer."""
_RETRY = 1.0  # seconds between attempts while the store does not answer
# A message id: milliseconds then a sequence number, in hex (as the memory store makes them).
_MESSAGE_ID = re.compile(r"[0-9a-f]{20,40}")
_SUMMARY_KEYS = ("id", "from", "subject", "subaddress", "received_at")


async def events(request: Request) -> Reply:
    """``GET /api/events/{email}``: the inbox's :class:`EventStream`, as the reply's ``stream``.

    The stream starts after ``Last-Event-ID`` or the ``after`` parameter (see
    :func:`stream_cursor`), and sends only the messages of ``subaddress`` if given.
    """
    settings, query = request.server(), request.query
    cursor = stream_cursor(query.get("after"), request.headers.get("last-event-id"))
    heartbeat, subaddress = settings.config.event_heartbeat, query.get("subaddress")
    stream = EventStream(
        request.store,
        settings.slots,
        request.args["email"],
        cursor,
        heartbeat,
        subaddress=subaddress,
    )
    return Reply(200, b"", EVENT_STREAM_TYPE, stream=stream)


def stream_cursor(after: str | None, last_event_id: str | None) -> str | None:
    """Where a stream starts: the message id it resumes after, or None for "from now on".

    ``Last-Event-ID`` wins over ``after``: a reconnecting ``EventSource`` sends
    it with the URL it first opened. An empty ``Last-Event-ID`` counts as none,
    as the SSE standard says. Anything but a message id is
    :class:`InvalidRequest`; an id need not be of a message the inbox still has.
    """
    cursor = last_event_id or after
    if cursor is None:
        return None
    if not _MESSAGE_ID.fullmatch(cursor):
        name = "Last-Event-ID" if last_event_id else "after"
        raise InvalidRequest(f"{name}={cursor[:80]!r} is not a message id")
    return cursor


class EventStream:
    """One open event stream of the inbox at ``email``, holding a slot until :meth:`close`.

    Made before the answer starts, so that a bad cursor, an unknown inbox or
    too many streams answer with a problem document: it raises as
    :func:`stream_cursor`, :meth:`InboxStore.get` and :meth:`StreamSlots.acquire`.
    ``cursor`` is where to resume (None: only new deliveries); ``heartbeat`` is
    the seconds of silence after which a comment line is sent. With
    ``subaddress``, only the messages that came through that sub-address are
    sent (:func:`~.messages.subaddress_filter`; a bad one raises as it does).
    """

    def __init__(
        self,
        store: InboxStore,
        slots: StreamSlots,
        email: str,
        cursor: str | None,
        heartbeat: float,
        *,
        subaddress: str | None = None,
    ) -> None:
        self.store = store
        self._wanted = subaddress_filter(subaddress)
        self.address = store.get(email).address
        self.cursor = store.cursor(self.address) if cursor is None else cursor
        self.heartbeat = heartbeat
        self._slots = slots
        slots.acquire(self.address)
        self._open = True

    async def events(self) -> AsyncGenerator[bytes, None]:
        """The stream's bytes, event by event, until the inbox goes or the store closes."""
        while not self.store.closed:
            try:
                found = await self.store.follow(self.address, self.cursor, self.heartbeat)
            except InboxNotFound:
                yield _event("deleted", encode_json({"email": self.address}))
                return
            except StoreUnavailable:
                # Back later, as the SMTP side's 451 says: hold on, keep the cursor.
                yield STORE_DOWN
                await asyncio.sleep(min(self.heartbeat, _RETRY))
                continue
            if found:
                cursor, found = found[-1].id, self._wanted(found)
                for message, summary in zip(found, await _summaries(found), strict=True):
                    yield _event("message", summary, message.id)
                self.cursor = cursor
            elif not self.store.closed:
                yield HEARTBEAT

    def close(self) -> None:
        """Give the stream's slot back; safe to call more than once."""
        if self._open:
            self._open = False
            self._slots.release(self.address)


def _event(name: str, data: bytes, id: str | None = None) -> bytes:
    # Compact JSON holds no line break, so each event's data is one line.
    head = f"event: {name}\n" + (f"id: {id}\n" if id is not None else "")
    return head.encode("ascii") + b"data: " + data + b"\n\n"


async def _summaries(found: list[StoredMessage]) -> list[bytes]:
    """Each message's summary JSON; parsing many bytes goes to a worker thread."""
    unparsed = sum(message.size for message in found if not message.is_parsed)
    if unparsed <= INLINE_PARSE_BYTES:
        return [_summary(message) for message in found]
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(None, lambda: [_summary(message) for message in found])


def _summary(message: StoredMessage) -> bytes:
    full: dict[str, Any] = json.loads(message.json)
    summary = {key: full[key] for key in _SUMMARY_KEYS}
    # The provider whose API the mail came through, by name; None for SMTP mail.
    summary["provider"] = None if message.provider is None else message.provider.name
    return encode_json(summary)
