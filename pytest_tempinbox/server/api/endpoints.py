"""What every endpoint of the API shares: the reply, problem documents, the request's limits.

The endpoints, by resource (:mod:`.inboxes`, :mod:`.messages`, :mod:`.faults`,
:mod:`.refusals`, :mod:`.checks`, :mod:`.events`, :mod:`.operations`), make
:class:`Reply` values; the route table (:mod:`pytest_tempinbox.server.api.routes`)
says which path each answers. The Starlette app
(:mod:`pytest_tempinbox.server.http.app`) sends them as HTTP responses, and the
in-process transport hands them to the client as they are, so both give byte
for byte the same answers while the in-process path never imports Starlette.
Errors are raised as :class:`~pytest_tempinbox.errors.TempInboxError` and
become problem documents through :func:`problem_reply`.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from ...errors import InvalidRequest, PayloadTooLarge, QuotaExceeded, TempInboxError
from ...transport import Answer
from ..store.stored_message import StoredMessage

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator

__all__ = [
    "COMMON_HEADERS",
    "DROP",
    "INLINE_PARSE_BYTES",
    "JSON_TYPE",
    "MAX_HEADER_BYTES",
    "MAX_REQUEST_BODY",
    "MAX_TARGET_BYTES",
    "PROBLEM_TYPE",
    "Reply",
    "Stream",
    "encode_json",
    "error_reply",
    "json_body",
    "parse_off_loop",
    "problem_reply",
    "seconds_parameter",
    "send_body_limit",
    "unparsed_bytes",
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


class Stream(Protocol):
    """A stream of events an answer carries (:class:`~.events.EventStream`)."""

    def events(self) -> AsyncGenerator[bytes, None]:
        """The events, as the bytes to send, until the stream ends."""
        ...

    def close(self) -> None:
        """Give the stream's slot back; called once, however the answer ended."""
        ...


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
        stream: Stream | None = None,
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


DROP = Reply(0, b"", "text/plain")
"""No answer at all: the HTTP adapter drops the connection (a provider send's injected fault)."""


def encode_json(data: Any) -> bytes:
    """Compact UTF-8 JSON; a lone surrogate (from a request) falls back to ASCII escapes."""
    try:
        return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(data, separators=(",", ":")).encode("ascii")


def problem_reply(
    status: int,
    code: str,
    detail: str,
    headers: Mapping[str, str] | None = None,
    extra: Mapping[str, Any] | None = None,
) -> Reply:
    """An RFC 9457 problem document with our stable ``code`` token, and ``extra`` members."""
    from http import HTTPStatus  # an enum of 60 members: only errors need it

    body = {
        "type": f"tag:pytest-tempinbox,2026:problem:{code}",
        "title": HTTPStatus(status).phrase,
        "status": status,
        "detail": detail,
        "code": code,
        **(extra or {}),
    }
    return Reply(status, encode_json(body), PROBLEM_TYPE, headers or {})


def error_reply(exc: TempInboxError) -> Reply:
    """The problem document for one of our errors; a quota's says which, and when it frees."""
    if isinstance(exc, QuotaExceeded):
        retry = None if exc.retry_after is None else max(1, math.ceil(exc.retry_after))
        extra = {"quota": exc.quota, "limit": exc.limit, "retry_after": retry}
        headers = {} if retry is None else {"Retry-After": str(retry)}
        return problem_reply(exc.status, exc.code, str(exc), headers, extra)
    return problem_reply(exc.status, exc.code, str(exc))


async def parse_off_loop(found: list[StoredMessage]) -> None:
    """Parse the messages not parsed yet, in a worker thread when they are many bytes."""
    if unparsed_bytes(found) > INLINE_PARSE_BYTES:
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, lambda: [message.json for message in found])


def send_body_limit(message_size_limit: int) -> int:
    """The request body a provider's send may have: a message's base64 and its JSON around it.

    The message size limit, grown by a third for base64, and
    :data:`MAX_REQUEST_BODY` more for the rest of the request.
    """
    return message_size_limit * 4 // 3 + MAX_REQUEST_BODY


def unparsed_bytes(found: list[StoredMessage]) -> int:
    """How many raw bytes of ``found`` are not parsed yet."""
    return sum(message.size for message in found if not message.is_parsed)


def json_body(body: bytes) -> dict[str, Any] | None:
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


def seconds_parameter(
    text: str | None, *, absent: float, top: float, zero: bool, error: str
) -> float:
    """A query parameter in seconds: ``absent`` when not given, else a number up to ``top``.

    Above 0, or from 0 with ``zero``; anything else (not a number, NaN
    included) is :class:`InvalidRequest` with ``error``.
    """
    if text is None:
        return absent
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    above_floor = value >= 0 if zero else value > 0
    if not (above_floor and value <= top):  # NaN fails both
        raise InvalidRequest(error)
    return value
