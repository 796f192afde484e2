"""The HTTP side: the Starlette app that serves the store under ``/api``.

The only module that imports Starlette. Every answer is JSON; every error is an
RFC 9457 problem document (``application/problem+json``) with a stable ``code``,
including unknown routes (404) and wrong methods (405). A client's request
never causes a 500. The same app serves the inbox viewer (:mod:`pytest_tempinbox.server.viewer`)
at ``/`` and under ``/viewer/``: a web page, not API, so not in the OpenAPI document.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from .. import __version__
from ..errors import PayloadTooLarge, TempInboxError
from ..limits import DEFAULT_HEARTBEAT, MAX_FAULT_DELAY, MAX_FAULTS_PER_INBOX, MAX_WAIT
from ..parsing.message import served_attachment
from . import endpoints as operations
from . import viewer
from .endpoints import (
    COMMON_HEADERS,
    MAX_HEADER_BYTES,
    MAX_REQUEST_BODY,
    MAX_TARGET_BYTES,
    Reply,
    problem_reply,
)
from .events import EVENT_STREAM_TYPE, EventStream, StreamSlots, stream_cursor
from .openapi import openapi_document
from .store import Store

__all__ = [
    "MAX_HEADER_BYTES",
    "MAX_REQUEST_BODY",
    "MAX_TARGET_BYTES",
    "PEM_TYPE",
    "ApiSettings",
    "EventStreamResponse",
    "RequestGuard",
    "create_app",
]

log = logging.getLogger(__name__)

_HTTP_CODES = {404: "not_found", 405: "method_not_allowed"}
PEM_TYPE = "application/x-pem-file"


@dataclass(frozen=True)
class ApiSettings:
    """What the app needs to know of the server around it.

    ``smtp_host``, ``smtp_port``, the ``tls`` and ``smtp_auth`` modes and
    ``limits`` are reported by ``GET /api/info``; ``smtp_auth`` is the mode's name
    (``password``), never the password. ``ca_pem`` is the CA certificate that
    ``GET /api/ca.pem`` serves (None when TLS is off). ``allowed_hosts``, when
    not None, are the only host names a request's ``Host`` header may carry (a
    defence against DNS rebinding for loopback servers). ``heartbeat`` is the
    seconds of silence after which an event stream sends a comment line.
    """

    smtp_host: str
    smtp_port: int
    limits: Mapping[str, float | None] = field(default_factory=dict)
    allowed_hosts: frozenset[str] | None = None
    tls: str = "off"
    smtp_auth: str = "any"
    ca_pem: bytes | None = None
    heartbeat: float = DEFAULT_HEARTBEAT


def respond(reply: Reply) -> Response:
    """The HTTP response for an operation's reply."""
    return Response(
        reply.body,
        status_code=reply.status,
        headers={**COMMON_HEADERS, **reply.headers},
        media_type=reply.content_type,
    )


def problem(
    status: int, code: str, detail: str, headers: Mapping[str, str] | None = None
) -> Response:
    """Return an RFC 9457 problem response with our stable ``code`` token."""
    return respond(problem_reply(status, code, detail, headers))


def _json(data: Any) -> Response:
    return respond(Reply(200, operations.encode_json(data)))


def create_app(store: Store, settings: ApiSettings) -> Starlette:
    """Return the ASGI app serving ``store``; ``settings`` describe the server for ``/api/info``."""

    async def generate(request: Request) -> Response:
        body = await _read_body(request)
        return respond(operations.generate(store, body, str(request.base_url)))

    async def messages(request: Request) -> Response:
        email, query = request.path_params["email"], request.query_params
        reply = await operations.messages(
            store,
            email,
            query.get("after"),
            query.get("wait"),
            subject=query.get("subject"),
            sender=query.get("from"),
            text=query.get("text"),
        )
        return respond(reply)

    async def message(request: Request) -> Response:
        found = store.message(request.path_params["email"], request.path_params["id"])
        await operations.parse_off_loop([found])
        return respond(Reply(200, found.json))

    async def raw(request: Request) -> Response:
        found = store.message(request.path_params["email"], request.path_params["id"])
        return respond(Reply(200, found.raw, "message/rfc822"))

    async def attachment(request: Request) -> Response:
        found = store.message(request.path_params["email"], request.path_params["id"])
        index = request.path_params["index"]
        # Re-reading the structure of a large message could hold up the event loop.
        described, content_type, payload = await asyncio.get_running_loop().run_in_executor(
            None, served_attachment, found.raw, index
        )
        headers = {
            **COMMON_HEADERS,
            # The part's own type and parameters. Given as a header, not as
            # media_type, which would have Starlette add "charset=utf-8" to text/*.
            "Content-Type": content_type,
            "Content-Disposition": _content_disposition(described.filename, described.index),
        }
        return Response(payload, headers=headers)

    async def delete(request: Request) -> Response:
        return respond(operations.delete(store, request.path_params["email"]))

    async def faults(request: Request) -> Response:
        # One route for the three methods, so that a 405's Allow header names them all.
        email = request.path_params["email"]
        if request.method == "POST":
            return respond(operations.add_fault(store, email, await _read_body(request)))
        if request.method == "DELETE":
            return respond(operations.clear_faults(store, email))
        return respond(operations.faults(store, email))

    slots = StreamSlots()

    async def events(request: Request) -> Response:
        after = request.query_params.get("after")
        cursor = stream_cursor(after, request.headers.get("last-event-id"))
        email = request.path_params["email"]
        return EventStreamResponse(EventStream(store, slots, email, cursor, settings.heartbeat))

    async def info(request: Request) -> Response:
        return _json(
            {
                "version": __version__,
                "smtp": {
                    "host": settings.smtp_host,
                    "port": settings.smtp_port,
                    "tls": settings.tls,
                    "auth": settings.smtp_auth,
                },
                "domains": list(store.domains),
                "limits": {
                    **settings.limits,
                    "request_body": MAX_REQUEST_BODY,
                    "wait": MAX_WAIT,
                    "faults_per_inbox": MAX_FAULTS_PER_INBOX,
                    "fault_delay": MAX_FAULT_DELAY,
                    "streams": slots.limit,
                    "streams_per_inbox": slots.per_inbox,
                    "heartbeat": settings.heartbeat,
                },
                "stats": {**store.stats(), "streams": slots.total},
            }
        )

    async def refused(request: Request) -> Response:
        query = request.query_params
        since, similar_to = query.get("since"), query.get("similar_to")
        return respond(operations.refused(store, since, similar_to, query.get("limit")))

    async def openapi(request: Request) -> Response:
        return _json(openapi_document(__version__))

    async def ca_certificate(request: Request) -> Response:
        if settings.ca_pem is None:
            return problem(404, "tls_off", "TLS is off on this server: there is no CA certificate")
        return respond(Reply(200, settings.ca_pem, PEM_TYPE))

    routes = [
        Route("/api/generate", generate, methods=["POST"]),
        Route("/api/messages/{email}", messages, methods=["GET"]),
        Route("/api/messages/{email}/{id}", message, methods=["GET"]),
        Route("/api/messages/{email}/{id}/raw", raw, methods=["GET"]),
        Route("/api/messages/{email}/{id}/attachments/{index:int}", attachment, methods=["GET"]),
        Route("/api/delete/{email}", delete, methods=["DELETE"]),
        Route("/api/faults/{email}", faults, methods=["GET", "POST", "DELETE"]),
        Route("/api/events/{email}", events, methods=["GET"]),
        Route("/api/info", info, methods=["GET"]),
        Route("/api/refused", refused, methods=["GET"]),
        Route("/api/openapi.json", openapi, methods=["GET"]),
        Route("/api/ca.pem", ca_certificate, methods=["GET"]),
    ]
    routes += _viewer_routes(store)
    app = Starlette(
        routes=routes,
        exception_handlers={
            TempInboxError: _error_answer,
            HTTPException: _http_error_answer,
            Exception: _unexpected_error_answer,
        },
    )
    # A trailing slash is another path (404), not a redirect to this one.
    app.router.redirect_slashes = False
    app.add_middleware(RequestGuard, allowed=settings.allowed_hosts)
    return app


def _viewer_routes(store: Store) -> list[Route]:
    """The inbox viewer's routes: its page, its two files and each message's HTML for its frame."""

    async def page(request: Request) -> Response:
        return respond(viewer.page())

    async def asset(request: Request) -> Response:
        reply = viewer.asset(request.path_params["name"])
        if reply is None:
            raise HTTPException(404)
        return respond(reply)

    async def html(request: Request) -> Response:
        email, id = request.path_params["email"], request.path_params["id"]
        remote_images = request.query_params.get("images") == "remote"
        return respond(await viewer.html_document(store, email, id, remote_images))

    return [
        Route("/", page, methods=["GET"]),
        Route("/viewer/{name}", asset, methods=["GET"]),
        Route("/viewer/messages/{email}/{id}/html", html, methods=["GET"]),
    ]


class EventStreamResponse(StreamingResponse):
    """Server-Sent Events of an :class:`~pytest_tempinbox.server.events.EventStream`.

    It watches for the client leaving all along (Starlette's own streaming
    may notice only at the next write, and the next heartbeat can be seconds
    away), and gives the stream's slot back however the answer ends.
    """

    media_type = EVENT_STREAM_TYPE

    def __init__(self, stream: EventStream) -> None:
        self.stream = stream
        self.events = stream.events()
        # X-Accel-Buffering: proxies such as nginx pass each event on at once.
        super().__init__(self.events, headers={**COMMON_HEADERS, "X-Accel-Buffering": "no"})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Send the events until the stream ends or the client leaves."""
        try:
            if scope["method"] == "HEAD":  # the head alone: no stream to keep open
                start = {"type": "http.response.start", "status": 200, "headers": self.raw_headers}
                await send(start)
                await send({"type": "http.response.body", "body": b""})
                return
            sending = asyncio.ensure_future(self.stream_response(send))
            leaving = asyncio.ensure_future(_disconnected(receive))
            try:
                await asyncio.wait({sending, leaving}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                sending.cancel()
                leaving.cancel()
                await asyncio.gather(sending, leaving, return_exceptions=True)
            error = None if sending.cancelled() else sending.exception()
            if error is not None and not isinstance(error, OSError):  # OSError: the client left
                raise error
        finally:
            await self.events.aclose()
            self.stream.close()


async def _disconnected(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


class RequestGuard:
    """Checks each request's head before the app sees it.

    - A head over 16 KiB of headers answers 431 ``header_too_large``, and a path
      and query over 16 KiB answer 414 ``uri_too_long`` (h11 only limits a head
      that arrives in pieces).
    - With ``allowed`` host names, a ``Host`` header naming another site answers
      421 ``host_not_allowed``: a web page can make the browser resolve its own
      domain to 127.0.0.1 (DNS rebinding) and read the answers, but its requests
      then carry its own host name. Requests without a Host header pass.
    """

    def __init__(self, app: ASGIApp, allowed: frozenset[str] | None) -> None:
        self.app = app
        self.allowed = allowed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Check the head of an HTTP request, then pass it on."""
        if scope["type"] == "http":
            refusal = self._refusal(scope)
            if refusal is not None:
                await refusal(scope, receive, send)
                return
        await self.app(scope, receive, send)

    def _refusal(self, scope: Scope) -> Response | None:
        headers = scope["headers"]
        if sum(len(name) + len(value) + 4 for name, value in headers) > MAX_HEADER_BYTES:
            return problem(431, "header_too_large", f"headers may hold {MAX_HEADER_BYTES} bytes")
        target = len(scope.get("raw_path") or b"") + len(scope.get("query_string") or b"")
        if target > MAX_TARGET_BYTES:
            return problem(414, "uri_too_long", f"path and query may hold {MAX_TARGET_BYTES} bytes")
        if self.allowed is None:
            return None
        host = next((value for name, value in headers if name == b"host"), None)
        if host is None or _host_name(host) in self.allowed:
            return None
        name = host.decode("latin-1")[:100]
        return problem(421, "host_not_allowed", f"this server does not answer for host {name!r}")


def _host_name(host: bytes) -> str:
    text = host.decode("latin-1").strip().lower()
    if text.startswith("["):  # [::1]:8025
        return text[: text.find("]") + 1]
    return text.rsplit(":", 1)[0] if text.count(":") == 1 else text


async def _read_body(request: Request) -> bytes:
    length = request.headers.get("content-length", "")
    if length.isdigit() and int(length) > MAX_REQUEST_BODY:
        raise PayloadTooLarge(f"the request body may hold at most {MAX_REQUEST_BODY} bytes")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_REQUEST_BODY:
            raise PayloadTooLarge(f"the request body may hold at most {MAX_REQUEST_BODY} bytes")
    return bytes(body)


def _content_disposition(filename: str | None, index: int) -> str:
    name = filename or f"attachment-{index}"
    # The sender chose the name: keep only its last path component, and give an
    # ASCII fallback beside the exact UTF-8 form (RFC 6266).
    name = name.replace("\\", "/").rsplit("/", 1)[-1].strip() or f"attachment-{index}"
    ascii_name = "".join(c if 32 <= ord(c) < 127 and c not in '"\\' else "_" for c in name)
    return f"attachment; filename=\"{ascii_name}\"; filename*=UTF-8''{quote(name, safe='')}"


async def _error_answer(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, TempInboxError)
    return problem(exc.status, exc.code, str(exc))


async def _http_error_answer(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    code = _HTTP_CODES.get(exc.status_code, "invalid_request")
    if exc.status_code == 404:
        detail = f"no such route: {request.url.path[:200]}"
    elif exc.status_code == 405:
        detail = f"{request.method} is not allowed here"
    else:
        detail = str(exc.detail)
    return problem(exc.status_code, code, detail, headers=exc.headers)


async def _unexpected_error_answer(request: Request, exc: Exception) -> Response:
    log.error("error while answering %s %s", request.method, request.url.path, exc_info=exc)
    return problem(500, "internal_error", "the server failed to answer; see its log")
