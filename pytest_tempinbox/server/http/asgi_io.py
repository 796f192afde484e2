"""A route's request body read, and its reply sent, in plain ASGI messages.

What Starlette's ``Request.stream()`` and ``Response`` do for an answer of the
route table, without making either object: about a fifth of the app's time
on a short request (a provider's send, a read) went to them. The answer is
the one :func:`~.app.respond` makes, byte for byte: the common headers, the
reply's own, then the ``Content-Length`` (none for a ``1xx``, ``204`` or
``304``) and the ``Content-Type`` (``; charset=utf-8`` after a ``text/``
type without one), unless the reply gives them itself. A test holds the two
together.
"""

from __future__ import annotations

from starlette.requests import ClientDisconnect
from starlette.types import Receive, Scope, Send

from ...errors import PayloadTooLarge
from ..api.endpoints import COMMON_HEADERS, Reply

__all__ = ["COMMON_RAW_HEADERS", "raw_headers", "read_body", "send_reply"]

COMMON_RAW_HEADERS = [
    (name.lower().encode("latin-1"), value.encode("latin-1"))
    for name, value in COMMON_HEADERS.items()
]
"""The common headers of every answer, encoded as ASGI carries them (copy before changing)."""
_TYPES: dict[str, tuple[bytes, bytes]] = {}  # a content type's header, encoded once


def _content_type(media_type: str) -> tuple[bytes, bytes]:
    header = _TYPES.get(media_type)
    if header is None:
        value = media_type
        if value.startswith("text/") and "charset=" not in value.lower():
            value += "; charset=utf-8"
        header = (b"content-type", value.encode("latin-1"))
        if len(_TYPES) < 64:  # the table's replies have a handful of types
            _TYPES[media_type] = header
    return header


def raw_headers(reply: Reply) -> list[tuple[bytes, bytes]]:
    """The headers of ``reply``'s answer, as Starlette's ``Response`` would encode them."""
    own = reply.headers
    if own:
        if any(name in COMMON_HEADERS for name in own):  # one of them replaced, in its place
            own = {**COMMON_HEADERS, **own}
            headers = []
        else:  # the usual case: the common ones, then the reply's
            headers = list(COMMON_RAW_HEADERS)
        added = [
            (name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in own.items()
        ]
        headers += added
        names = {name for name, _ in added}
    else:
        headers = list(COMMON_RAW_HEADERS)
        names = set()
    status = reply.status
    if b"content-length" not in names and not (status < 200 or status in (204, 304)):
        headers.append((b"content-length", str(len(reply.content)).encode("latin-1")))
    if b"content-type" not in names:
        headers.append(_content_type(reply.content_type))
    return headers


async def send_reply(reply: Reply, send: Send) -> None:
    """Send ``reply`` (not a stream) as the answer to the request."""
    headers = raw_headers(reply)
    await send({"type": "http.response.start", "status": reply.status, "headers": headers})
    await send({"type": "http.response.body", "body": reply.content})


def _declared_length(scope: Scope) -> bytes:
    for name, value in scope["headers"]:
        if name == b"content-length":
            return bytes(value)
    return b""


async def read_body(scope: Scope, receive: Receive, limit: int) -> bytes:
    """The request's body, read whole; over ``limit`` bytes, :class:`PayloadTooLarge`.

    A declared ``Content-Length`` over the limit is refused before a byte is
    read. A client that leaves before the body's end raises Starlette's
    ``ClientDisconnect``, as ``Request.stream()`` does.
    """
    length = _declared_length(scope)
    if length.isdigit() and int(length) > limit:
        raise PayloadTooLarge(f"the request body may hold at most {limit} bytes")
    message = await receive()
    if message["type"] == "http.request" and not message.get("more_body", False):
        body: bytes = message.get("body", b"")  # the usual case: the body in one piece
        if len(body) > limit:
            raise PayloadTooLarge(f"the request body may hold at most {limit} bytes")
        return bytes(body)
    gathered = bytearray()
    while True:
        if message["type"] == "http.disconnect":
            raise ClientDisconnect()
        if message["type"] == "http.request":
            gathered += message.get("body", b"")
            if len(gathered) > limit:
                raise PayloadTooLarge(f"the request body may hold at most {limit} bytes")
            if not message.get("more_body", False):
                return bytes(gathered)
        message = await receive()
