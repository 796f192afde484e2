"""A small asyncio HTTP/1.1 client: one POST per connection, for the webhooks.

No HTTP library is a required dependency of the package, and a webhook needs
one request and its status line: the connection is opened (TLS for
``https://``, verified against the system's CAs by
:func:`ssl.create_default_context`), the request written with
``Connection: close``, the status line read, and the connection closed. The
body is made only once the connection is open (:func:`post`'s ``body``), so
that an endpoint that is down costs no message parsing. Redirects are never
followed: the caller sees the 3xx status.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Awaitable, Callable, Sequence

from ...webhook_urls import WebhookTarget

__all__ = ["BadResponse", "post"]

_STATUS_LINE_LIMIT = 8192


class BadResponse(Exception):
    """The endpoint answered something that is not an HTTP/1.x status line."""


_contexts: dict[str, ssl.SSLContext] = {}


def _tls_context() -> ssl.SSLContext:
    # One context for every https webhook: loading the system's CAs costs milliseconds.
    context = _contexts.get("default")
    if context is None:
        context = _contexts["default"] = ssl.create_default_context()
    return context


async def post(
    target: WebhookTarget,
    headers: Callable[[bytes], Sequence[tuple[str, str]]],
    body: Callable[[], Awaitable[bytes]],
    timeout: float,
    context: ssl.SSLContext | None = None,
) -> int:
    """POST ``body()`` to ``target`` with ``headers(body)``; return the response's status code.

    The whole exchange, connection included, has ``timeout`` seconds
    (:class:`TimeoutError` after them). Raises :class:`OSError` when the
    endpoint cannot be reached (:class:`ssl.SSLError` among them), and
    :class:`BadResponse` when its answer is not HTTP. ``context`` is the TLS
    context of ``https://`` targets (default: the system's CAs).
    """
    try:
        return await asyncio.wait_for(_exchange(target, headers, body, context), timeout)
    except asyncio.TimeoutError:  # TimeoutError itself from Python 3.11 on
        raise TimeoutError(f"no answer within {timeout:g} s") from None


async def _exchange(
    target: WebhookTarget,
    headers: Callable[[bytes], Sequence[tuple[str, str]]],
    body: Callable[[], Awaitable[bytes]],
    context: ssl.SSLContext | None,
) -> int:
    secure = target.scheme == "https"
    reader, writer = await asyncio.open_connection(
        target.host,
        target.port,
        ssl=(context or _tls_context()) if secure else None,
        server_hostname=target.host if secure else None,
        limit=_STATUS_LINE_LIMIT,
    )
    try:
        payload = await body()
        head = [
            f"POST {target.target} HTTP/1.1",
            f"Host: {target.host_header}",
            f"Content-Length: {len(payload)}",
            "Connection: close",
            *(f"{name}: {value}" for name, value in headers(payload)),
        ]
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + payload)
        await writer.drain()
        try:
            line = await reader.readline()
        except ValueError:  # longer than the limit
            raise BadResponse("a status line longer than 8 KiB") from None
        if not line:  # as a refused connection: the endpoint may be restarting
            raise ConnectionResetError("the endpoint closed the connection without an answer")
        return _status(line)
    finally:
        writer.close()


def _status(line: bytes) -> int:
    parts = line.split(None, 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or not parts[1].isdigit():
        shown = line[:60].decode("latin-1").strip() or "nothing"
        raise BadResponse(f"not an HTTP/1.x status line: {shown!r}")
    status = int(parts[1])
    if not 100 <= status <= 599:
        raise BadResponse(f"status {status} is not an HTTP status")
    return status
