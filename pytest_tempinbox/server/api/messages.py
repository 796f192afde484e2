"""The API's messages: the list (filtered, long-polled), one message, its raw bytes, a part.

``GET /api/messages/{email}`` is answered at once when it need not wait
(:func:`messages_now`, in the caller's thread for the in-process transport) and
on the server's loop otherwise (:func:`messages`); parsing many bytes moves to
a worker thread, so that no message holds up the loop. No web framework is
imported here.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from urllib.parse import quote

from ...errors import InvalidRequest, MessageNotFound
from ...limits import MAX_FILTER_LENGTH, MAX_WAIT
from ...parsing.match import sender_matches, subject_matches, text_matches
from ...parsing.message import served_attachment
from ..store.addresses import fold_subaddress
from ..store.protocol import InboxStore
from ..store.stored_message import StoredMessage
from .endpoints import (
    INLINE_PARSE_BYTES,
    Reply,
    parse_off_loop,
    seconds_parameter,
    unparsed_bytes,
)
from .request import Request

__all__ = [
    "attachment",
    "message",
    "message_filter",
    "messages",
    "messages_at_once",
    "messages_now",
    "provider_filter",
    "raw",
    "subaddress_filter",
    "wait_parameter",
]


def messages_now(
    store: InboxStore,
    email: str,
    after: str | None,
    wait: str | None,
    parse_limit: int | None = None,
    *,
    subject: str | None = None,
    sender: str | None = None,
    text: str | None = None,
    subaddress: str | None = None,
    provider: str | None = None,
    template: str | None = None,
) -> Reply | None:
    """``GET /api/messages/{email}`` at once, from any thread; None if it is for the loop.

    That is when it must wait for a message, or when it would parse more than
    ``parse_limit`` raw bytes (None: no limit) in the calling thread.
    ``subject``, ``sender`` (the ``from`` parameter) and ``text`` are the
    filters of :func:`message_filter`, ``subaddress`` that of :func:`subaddress_filter`,
    ``provider`` and ``template`` those of :func:`provider_filter`.
    """
    seconds = wait_parameter(wait)
    wanted = message_filter(subject, sender, text) if subject or sender or text else None
    by_subaddress = subaddress_filter(subaddress)
    by_provider = provider_filter(provider, template)
    found = by_provider(by_subaddress(store.messages(email, after=after)))
    if wanted is not None:
        if parse_limit is not None and _unfaceted_bytes(found) > parse_limit:
            return None
        found = [message for message in found if wanted(message)]
    if not found and seconds > 0:
        return None
    if parse_limit is not None and unparsed_bytes(found) > parse_limit:
        return None
    return _message_list(found)


def messages_at_once(request: Request, parse_limit: int | None) -> Reply | None:
    """``GET /api/messages/{email}`` as :func:`messages_now` answers it, from a request."""
    query = request.query
    email, after, wait = request.args["email"], query.get("after"), query.get("wait")
    subject, sender, text = query.get("subject"), query.get("from"), query.get("text")
    subaddress = query.get("subaddress")
    return messages_now(
        request.store,
        email,
        after,
        wait,
        parse_limit,
        subject=subject,
        sender=sender,
        text=text,
        subaddress=subaddress,
        provider=query.get("provider"),
        template=query.get("template"),
    )


async def messages(request: Request) -> Reply:
    """``GET /api/messages/{email}`` on the server's loop, long-polling up to ``wait`` seconds.

    With filters (see :func:`message_filter` and :func:`subaddress_filter`),
    the answer holds only the messages they keep, and the wait lasts until
    one of those arrives.
    """
    store, query, email = request.store, request.query, request.args["email"]
    after, wait, subaddress = query.get("after"), query.get("wait"), query.get("subaddress")
    subject, sender, text = query.get("subject"), query.get("from"), query.get("text")
    provider, template = query.get("provider"), query.get("template")
    seconds = wait_parameter(wait)
    if subject or sender or text or subaddress or provider or template:
        wanted = message_filter(subject, sender, text) if subject or sender or text else None
        by_subaddress = subaddress_filter(subaddress)
        by_provider = provider_filter(provider, template)

        async def select(found: list[StoredMessage]) -> list[StoredMessage]:
            found = by_provider(by_subaddress(found))  # before the facets: they need no parsing
            if wanted is None:
                await parse_off_loop(found)
                return found
            await _facets_off_loop(found)
            return [message for message in found if wanted(message)]

        kept = await store.wait(email, after=after, timeout=seconds, select=select)
        return _message_list(kept)  # their facets came with their JSON
    found = await store.wait(email, after=after, timeout=seconds)
    await parse_off_loop(found)
    return _message_list(found)


def message_filter(
    subject: str | None, sender: str | None, text: str | None
) -> Callable[[StoredMessage], bool]:
    """The test of the filters of ``GET /api/messages/{email}``.

    The rules are those of :mod:`pytest_tempinbox.parsing.match`.

    ``subject``: the subject contains it, case-sensitively; ``sender``: the
    ``From`` address contains it, case-insensitively; ``text``: the text body or
    the HTML's visible text contains it, white space collapsed. A message must
    pass every filter given; None or ``""`` is no filter. A value over
    ``MAX_FILTER_LENGTH`` characters raises :class:`InvalidRequest`.
    """
    for name, value in (("subject", subject), ("from", sender), ("text", text)):
        if value is not None and len(value) > MAX_FILTER_LENGTH:
            raise InvalidRequest(f"{name} may hold at most {MAX_FILTER_LENGTH} characters")

    def wanted(message: StoredMessage) -> bool:
        message_subject, message_sender, searchable = message.facets()
        return (
            (not subject or subject_matches(subject, message_subject))
            and (not sender or sender_matches(sender, message_sender))
            and (not text or text_matches(text, searchable))
        )

    return wanted


def subaddress_filter(
    subaddress: str | None,
) -> Callable[[list[StoredMessage]], list[StoredMessage]]:
    """Keep the messages that came through sub-address ``subaddress`` (``name+subaddress@``).

    Compared as the sub-addresses are kept
    (:func:`~pytest_tempinbox.server.store.addresses.fold_subaddress`: an ASCII one in
    any case). None or ``""`` is no filter; a value over
    ``MAX_FILTER_LENGTH`` characters raises :class:`InvalidRequest`. No message
    is parsed for it.
    """
    if not subaddress:
        return _every
    if len(subaddress) > MAX_FILTER_LENGTH:
        raise InvalidRequest(f"subaddress may hold at most {MAX_FILTER_LENGTH} characters")
    detail = fold_subaddress(subaddress)
    return lambda found: [message for message in found if message.subaddress == detail]


def provider_filter(
    provider: str | None, template: str | None
) -> Callable[[list[StoredMessage]], list[StoredMessage]]:
    """Keep the messages sent through email provider ``provider``, naming template ``template``.

    Both compared exactly with the message's provider record (mail that came
    by SMTP has none, so either filter leaves it out); None or ``""`` is no
    filter, and a value over ``MAX_FILTER_LENGTH`` characters raises
    :class:`InvalidRequest`. No message is parsed for them.
    """
    if not provider and not template:
        return _every
    for name, value in (("provider", provider), ("template", template)):
        if value is not None and len(value) > MAX_FILTER_LENGTH:
            raise InvalidRequest(f"{name} may hold at most {MAX_FILTER_LENGTH} characters")

    def kept(message: StoredMessage) -> bool:
        record = message.provider
        return (
            record is not None
            and (not provider or record.name == provider)
            and (not template or record.template_id == template)
        )

    return lambda found: [message for message in found if kept(message)]


def _every(found: list[StoredMessage]) -> list[StoredMessage]:
    return found


async def message(request: Request) -> Reply:
    """``GET /api/messages/{email}/{id}``: the parsed message."""
    found = request.store.message(request.args["email"], request.args["id"])
    await parse_off_loop([found])
    return Reply(200, found.json)


async def raw(request: Request) -> Reply:
    """``GET /api/messages/{email}/{id}/raw``: the message's bytes as received."""
    found = request.store.message(request.args["email"], request.args["id"])
    return Reply(200, found.raw, "message/rfc822")


async def transcript(request: Request) -> Reply:
    """``GET /api/messages/{email}/{id}/transcript``: the SMTP conversation that delivered it.

    A 404 problem when none is kept: the server keeps none (``--no-transcripts``),
    the message came through a provider's API, or it is older than the
    transcripts the server keeps (docs/transcripts.md).
    """
    found = request.store.message(request.args["email"], request.args["id"])
    book = getattr(request.store, "transcripts", None)
    document = None if book is None else book.get(found)
    if document is None:
        if found.provider is not None:
            detail = f"sent through the {found.provider.name} API; no SMTP conversation"
        elif book is None:
            detail = "the server keeps no SMTP transcripts (--no-transcripts)"
        else:
            detail = "no SMTP transcript is kept of this message any more"
        raise MessageNotFound(detail)
    return Reply(200, document.json())


async def attachment(request: Request) -> Reply:
    """``GET /api/messages/{email}/{id}/attachments/{index}``: the part's decoded bytes."""
    index = int(request.args["index"])
    found = request.store.message(request.args["email"], request.args["id"])
    # Re-reading the structure of a large message could hold up the event loop.
    described, content_type, payload = await asyncio.get_running_loop().run_in_executor(
        None, served_attachment, found.raw, index
    )
    headers = {
        # The part's own type and parameters, as a header: a web framework may
        # add "charset=utf-8" to a text/* content type it is given otherwise.
        "Content-Type": content_type,
        "Content-Disposition": _content_disposition(described.filename, described.index),
    }
    return Reply(200, payload, content_type, headers)


def _content_disposition(filename: str | None, index: int) -> str:
    name = filename or f"attachment-{index}"
    # The sender chose the name: keep only its last path component, and give an
    # ASCII fallback beside the exact UTF-8 form (RFC 6266).
    name = name.replace("\\", "/").rsplit("/", 1)[-1].strip() or f"attachment-{index}"
    ascii_name = "".join(c if 32 <= ord(c) < 127 and c not in '"\\' else "_" for c in name)
    return f"attachment; filename=\"{ascii_name}\"; filename*=UTF-8''{quote(name, safe='')}"


async def _facets_off_loop(found: list[StoredMessage]) -> None:
    """Compute the facets not computed yet, in a worker thread when they are many bytes."""
    if _unfaceted_bytes(found) > INLINE_PARSE_BYTES:
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, lambda: [message.facets() for message in found])


def _unfaceted_bytes(found: list[StoredMessage]) -> int:
    return sum(message.size for message in found if not message.has_facets)


def _message_list(found: list[StoredMessage]) -> Reply:
    return Reply(200, b"[" + b",".join(message.json for message in found) + b"]")


def wait_parameter(text: str | None) -> float:
    """The ``wait`` query parameter in seconds (0 when absent); :class:`InvalidRequest` if bad."""
    return seconds_parameter(
        text,
        absent=0.0,
        top=MAX_WAIT,
        zero=True,
        error=f"wait must be a number of seconds from 0 to {MAX_WAIT:g}",
    )
