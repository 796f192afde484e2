"""The API's answers, computed from the store apart from any web framework.

``generate``, ``messages``, ``delete``, a message, its raw bytes and its
attachments, the routes of faults and the refusals make :class:`Reply` values
here; the route table (:mod:`pytest_tempinbox.server.api.routes`) says which path
each answers. The Starlette app (:mod:`pytest_tempinbox.server.http.app`)
sends them as HTTP responses, and the in-process transport hands them to the
client as they are, so both give byte for byte the same answers while the
in-process path never imports Starlette. Errors are raised as
:class:`~pytest_tempinbox.errors.TempInboxError` and become problem documents
through :func:`problem_reply`. The module is long because it holds every
endpoint's answer, each short, so that the app and the in-process path share
them all.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from ...errors import InvalidRequest, PayloadTooLarge, TempInboxError
from ...limits import MAX_FILTER_LENGTH, MAX_WAIT
from ...models import format_timestamp, parse_timestamp
from ...parsing.match import sender_matches, subject_matches, text_matches
from ...parsing.message import served_attachment
from ...transport import Answer
from ..store.addresses import fold_subaddress
from ..store.faults import read_fault
from ..store.protocol import InboxStore
from ..store.refusals import MAX_REFUSALS, MAX_SIMILAR_TO
from ..store.stored_message import StoredMessage

if TYPE_CHECKING:
    from .events import EventStream
    from .request import Request

__all__ = [
    "COMMON_HEADERS",
    "INLINE_PARSE_BYTES",
    "JSON_TYPE",
    "MAX_HEADER_BYTES",
    "MAX_REQUEST_BODY",
    "MAX_TARGET_BYTES",
    "PROBLEM_TYPE",
    "Reply",
    "add_fault",
    "attachment",
    "clear_faults",
    "delete",
    "encode_json",
    "error_reply",
    "faults",
    "generate",
    "message",
    "message_filter",
    "messages",
    "messages_at_once",
    "messages_now",
    "messages_path",
    "parse_off_loop",
    "problem_reply",
    "raw",
    "refused",
    "subaddress_filter",
    "wait_parameter",
]

MAX_REQUEST_BODY = 64 * 1024
MAX_HEADER_BYTES = 16 * 1024
MAX_TARGET_BYTES = 16 * 1024
JSON_TYPE = "application/json"
PROBLEM_TYPE = "application/problem+json"
COMMON_HEADERS: Mapping[str, str] = {
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-store",
}
# Parsing more raw bytes than this at once moves to a worker thread, so that no
# message can hold up the event loop (and with it SMTP) while it is parsed.
INLINE_PARSE_BYTES = 256 * 1024
_GENERATE_KEYS = ("address", "domain", "prefix", "ttl")
_DEFAULT_REFUSED = 100


class Reply(Answer):
    """An answer of the API: the transport's :class:`~pytest_tempinbox.transport.Answer`, and more.

    ``headers`` are those beyond the common ones; ``stream``, for the event
    stream, is the :class:`~.events.EventStream` whose events are the body
    (the content is then empty). The in-process transport hands a reply to the
    client as the answer it is; the HTTP adapters send its headers and stream
    too. The arguments come in the order an endpoint writes them, the body
    before its type, which is JSON unless said.
    """

    __slots__ = ("headers", "stream")

    def __init__(
        self,
        status: int,
        body: bytes,
        content_type: str = JSON_TYPE,
        headers: Mapping[str, str] | None = None,
        *,
        stream: EventStream | None = None,
    ) -> None:
        super().__init__(status, content_type, body)
        self.headers: Mapping[str, str] = {} if headers is None else headers
        self.stream = stream

    @property
    def body(self) -> bytes:
        """The body's bytes: the answer's ``content``."""
        return self.content

    def __repr__(self) -> str:
        return f"Reply(status={self.status}, content_type={self.content_type!r})"


def encode_json(data: Any) -> bytes:
    """Compact UTF-8 JSON; a lone surrogate (from a request) falls back to ASCII escapes."""
    try:
        return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(data, separators=(",", ":")).encode("ascii")


def problem_reply(
    status: int, code: str, detail: str, headers: Mapping[str, str] | None = None
) -> Reply:
    """An RFC 9457 problem document with our stable ``code`` token."""
    from http import HTTPStatus  # an enum of 60 members: only errors need it

    body = {
        "type": f"tag:pytest-tempinbox,2026:problem:{code}",
        "title": HTTPStatus(status).phrase,
        "status": status,
        "detail": detail,
        "code": code,
    }
    return Reply(status, encode_json(body), PROBLEM_TYPE, headers or {})


def error_reply(exc: TempInboxError) -> Reply:
    """The problem document for one of our errors."""
    return problem_reply(exc.status, exc.code, str(exc))


def messages_path(address: str) -> str:
    """The path of an inbox's message list."""
    return "/api/messages/" + quote(address, safe="@+")


def generate(request: Request, parse_limit: int | None = None) -> Reply:
    """``POST /api/generate``: the request body's options; ``messages_url`` from the base URL.

    Answered at once, in any thread (``parse_limit`` is not needed).
    """
    store, body = request.store, request.body
    if len(body) > MAX_REQUEST_BODY:
        raise PayloadTooLarge(f"the request body may hold at most {MAX_REQUEST_BODY} bytes")
    prefix, domain, ttl, address = _generate_options(body)
    inbox = store.generate(prefix=prefix, domain=domain, ttl=ttl, address=address)
    path = messages_path(inbox.address)
    created = {
        "email": inbox.address,
        # Milliseconds: a failed wait asks for the refusals from this moment on.
        "created_at": format_timestamp(inbox.created_at, milliseconds=True),
        "expires_at": (
            format_timestamp(inbox.expires_at, milliseconds=True) if inbox.expires_at else None
        ),
        "messages_url": request.base_url.rstrip("/") + path,
    }
    return Reply(201, encode_json(created), headers={"Location": path})


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
) -> Reply | None:
    """``GET /api/messages/{email}`` at once, from any thread; None if it is for the loop.

    That is when it must wait for a message, or when it would parse more than
    ``parse_limit`` raw bytes (None: no limit) in the calling thread.
    ``subject``, ``sender`` (the ``from`` parameter) and ``text`` are the
    filters of :func:`message_filter`, ``subaddress`` that of :func:`subaddress_filter`.
    """
    seconds = wait_parameter(wait)
    wanted = message_filter(subject, sender, text) if subject or sender or text else None
    by_subaddress = subaddress_filter(subaddress)
    found = by_subaddress(store.messages(email, after=after))
    if wanted is not None:
        if parse_limit is not None and _unfaceted_bytes(found) > parse_limit:
            return None
        found = [message for message in found if wanted(message)]
    if not found and seconds > 0:
        return None
    if parse_limit is not None and _unparsed_bytes(found) > parse_limit:
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
    seconds = wait_parameter(wait)
    if subject or sender or text or subaddress:
        wanted = message_filter(subject, sender, text) if subject or sender or text else None
        by_subaddress = subaddress_filter(subaddress)

        async def select(found: list[StoredMessage]) -> list[StoredMessage]:
            found = by_subaddress(found)  # before the facets: it needs no parsing
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


def delete(request: Request, parse_limit: int | None = None) -> Reply:
    """``DELETE /api/delete/{email}``: answered at once, in any thread."""
    store = request.store
    address = store.get(request.args["email"]).address
    purged = store.delete(address)
    return Reply(200, encode_json({"email": address, "deleted": True, "purged": purged}))


async def add_fault(request: Request) -> Reply:
    """``POST /api/faults/{email}``: queue the fault the body describes; answer it as queued."""
    store, email = request.store, request.args["email"]
    store.get(email)  # an unknown inbox is a 404 before a bad body is a 400
    options = _json_body(request.body)
    if options is None:
        raise InvalidRequest("the request body must be a JSON object describing the fault")
    fault = read_fault(options)
    store.add_fault(email, fault)
    return Reply(201, encode_json(fault.to_json()))


async def faults(request: Request) -> Reply:
    """``GET /api/faults/{email}``: the pending faults, first to apply first."""
    pending = request.store.pending_faults(request.args["email"])
    return Reply(200, encode_json([fault.to_json() for fault in pending]))


async def clear_faults(request: Request) -> Reply:
    """``DELETE /api/faults/{email}``: drop the pending faults."""
    store = request.store
    address = store.get(request.args["email"]).address
    cleared = store.clear_faults(address)
    return Reply(200, encode_json({"email": address, "cleared": cleared}))


def refused(request: Request, parse_limit: int | None = None) -> Reply:
    """``GET /api/refused``: the recipients refused at ``RCPT TO`` lately, newest first.

    ``since`` (RFC 3339) keeps those refused at or after it; ``similar_to`` an
    address keeps those like it, the most similar first; ``limit`` (1-1000,
    default 100) is how many at most. Answered at once, in any thread.
    """
    query = request.query
    since, similar_to, limit = query.get("since"), query.get("similar_to"), query.get("limit")
    store = request.store
    moment = None
    if since is not None:
        try:
            moment = parse_timestamp(since)
        except ValueError:
            raise InvalidRequest("since must be an RFC 3339 timestamp") from None
    if similar_to is not None and len(similar_to) > MAX_SIMILAR_TO:
        raise InvalidRequest(f"similar_to may hold at most {MAX_SIMILAR_TO} characters")
    most = _limit_parameter(limit)
    found = store.refusals.find(since=moment, similar_to=similar_to or None, limit=most)
    return Reply(200, encode_json([refusal.to_json() for refusal in found]))


def _limit_parameter(text: str | None) -> int:
    if text is None:
        return _DEFAULT_REFUSED
    if not text.isascii() or not text.isdigit() or not 1 <= int(text) <= MAX_REFUSALS:
        raise InvalidRequest(f"limit must be a whole number from 1 to {MAX_REFUSALS}")
    return int(text)


async def parse_off_loop(found: list[StoredMessage]) -> None:
    """Parse the messages not parsed yet, in a worker thread when they are many bytes."""
    if _unparsed_bytes(found) > INLINE_PARSE_BYTES:
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, lambda: [message.json for message in found])


def _unparsed_bytes(found: list[StoredMessage]) -> int:
    return sum(len(message.raw) for message in found if not message.is_parsed)


async def _facets_off_loop(found: list[StoredMessage]) -> None:
    """Compute the facets not computed yet, in a worker thread when they are many bytes."""
    if _unfaceted_bytes(found) > INLINE_PARSE_BYTES:
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, lambda: [message.facets() for message in found])


def _unfaceted_bytes(found: list[StoredMessage]) -> int:
    return sum(len(message.raw) for message in found if not message.has_facets)


def _message_list(found: list[StoredMessage]) -> Reply:
    return Reply(200, b"[" + b",".join(message.json for message in found) + b"]")


def _json_body(body: bytes) -> dict[str, Any] | None:
    """The request body's JSON object; None for a body of JSON white space only."""
    if len(body) > MAX_REQUEST_BODY:
        raise PayloadTooLarge(f"the request body may hold at most {MAX_REQUEST_BODY} bytes")
    if not body.strip(b" \t\r\n"):
        return None
    try:
        options = json.loads(body)
    except (ValueError, RecursionError):
        raise InvalidRequest("the request body is not JSON") from None
    if not isinstance(options, dict):
        raise InvalidRequest("the request body must be a JSON object")
    return options


def _generate_options(
    body: bytes,
) -> tuple[str | None, str | None, float | None, str | None]:
    options = _json_body(body)
    if options is None:
        return None, None, None, None
    unknown = sorted(set(options) - set(_GENERATE_KEYS))
    if unknown:
        known = ", ".join(_GENERATE_KEYS)
        named = ", ".join(repr(key)[:40] for key in unknown[:5])
        raise InvalidRequest(f"unknown field(s): {named}; known: {known}")
    prefix, domain, ttl = options.get("prefix"), options.get("domain"), options.get("ttl")
    for key in ("prefix", "domain", "address"):
        if key in options and not isinstance(options[key], str):
            raise InvalidRequest(f"{key} must be a string")
    if "ttl" in options and (isinstance(ttl, bool) or not isinstance(ttl, int | float)):
        raise InvalidRequest("ttl must be a number of seconds")
    return prefix, domain, None if ttl is None else float(ttl), options.get("address")


def wait_parameter(text: str | None) -> float:
    """The ``wait`` query parameter in seconds (0 when absent); :class:`InvalidRequest` if bad."""
    if text is None:
        return 0.0
    try:
        wait = float(text)
    except ValueError:
        wait = math.nan
    if not 0 <= wait <= MAX_WAIT:  # also false for NaN
        raise InvalidRequest(f"wait must be a number of seconds from 0 to {MAX_WAIT:g}")
    return wait
