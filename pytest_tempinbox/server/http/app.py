"""The HTTP side: the Starlette app that serves the store under ``/api``.

The only module that imports Starlette. Every answer is JSON; every error is an
RFC 9457 problem document (``application/problem+json``) with a stable ``code``,
including unknown routes (404) and wrong methods (405). A client's request
never causes a 500. The same app serves the inbox viewer (:mod:`pytest_tempinbox.server.viewer`)
at ``/`` and under ``/viewer/``: a web page, not API, so not in the OpenAPI document;
and the server's metrics at ``/metrics`` (:mod:`pytest_tempinbox.server.api.metrics`),
for Prometheus, outside ``/api`` where scrapers look for them. The module is
long because the routes that need the server's streams and settings are
closures over them, written here beside the route table they join.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from ... import __version__
from ..._net import is_loopback
from ...config import ServerConfig
from ...errors import (
    HEADER_TOO_LARGE,
    HOST_NOT_ALLOWED,
    INTERNAL_ERROR,
    METHOD_NOT_ALLOWED,
    NOT_FOUND,
    SHUTTING_DOWN,
    TLS_OFF,
    URI_TOO_LONG,
    InvalidRequest,
    PayloadTooLarge,
    StoreUnavailable,
    TempInboxError,
)
from ...limits import MAX_FAULT_DELAY, MAX_FAULTS_PER_INBOX, MAX_WAIT
from .. import viewer
from ..api import checks, endpoints
from ..api.endpoints import (
    COMMON_HEADERS,
    MAX_HEADER_BYTES,
    MAX_REQUEST_BODY,
    MAX_TARGET_BYTES,
    Reply,
    problem_reply,
)
from ..api.events import EVENT_STREAM_TYPE, EventStream, StreamSlots, stream_cursor
from ..api.metrics import MetricsEndpoint
from ..api.routes import API_PREFIX, ROUTES, Endpoint
from ..counters import ServerCounters
from ..store.protocol import InboxStore

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

_HTTP_CODES = {404: NOT_FOUND, 405: METHOD_NOT_ALLOWED}
PEM_TYPE = "application/x-pem-file"
_COMMON_RAW_HEADERS = [
    (name.lower().encode("latin-1"), value.encode("latin-1"))
    for name, value in COMMON_HEADERS.items()
]


@dataclass(frozen=True)
class ApiSettings:
    """What the app needs to know of the server around it: its configuration, and more.

    ``smtp_port`` is the SMTP listener's bound port, and ``ca_pem`` the CA
    certificate that ``GET /api/ca.pem`` serves (None when TLS is off);
    everything else comes from ``config``. ``GET /api/info`` reports the AUTH
    mode's name (``password``), never the password. ``counters`` are the
    server's: ``GET /metrics`` reads them, and ``GET /api/ready`` whether SMTP listens.
    """

    config: ServerConfig
    smtp_port: int
    ca_pem: bytes | None = None
    counters: ServerCounters = field(default_factory=ServerCounters)

    @property
    def allowed_hosts(self) -> frozenset[str] | None:
        """The only host names a request's ``Host`` may carry; None for any.

        A server bound to loopback answers only its own names (a defence
        against DNS rebinding) and the configured ``allowed_hosts``.
        """
        host = self.config.host
        if not is_loopback(host):
            return None
        return frozenset({"localhost", "127.0.0.1", "[::1]", host.lower()}) | frozenset(
            self.config.allowed_hosts
        )


def respond(reply: Reply) -> Response:
    """The HTTP response for an operation's reply."""
    if reply.headers:
        return Response(
            reply.body,
            status_code=reply.status,
            headers={**COMMON_HEADERS, **reply.headers},
            media_type=reply.content_type,
        )
    # Most replies have no headers of their own: the common ones come encoded
    # already, ahead of the Content-Length and Content-Type that Starlette adds.
    response = Response(reply.body, status_code=reply.status, media_type=reply.content_type)
    response.raw_headers[:0] = _COMMON_RAW_HEADERS
    return response


def problem(
    status: int, code: str, detail: str, headers: Mapping[str, str] | None = None
) -> Response:
    """Return an RFC 9457 problem response with our stable ``code`` token."""
    return respond(problem_reply(status, code, detail, headers))


def _json(data: Any) -> Response:
    return respond(Reply(200, endpoints.encode_json(data)))


def create_app(store: InboxStore, settings: ApiSettings) -> Starlette:
    """Return the ASGI app serving ``store``; ``settings`` describe the server for ``/api/info``."""
    slots = StreamSlots()
    config = settings.config
    counters = settings.counters
    counters.event_streams = lambda: slots.total

    async def events(request: Request) -> Response:
        after = request.query_params.get("after")
        cursor = stream_cursor(after, request.headers.get("last-event-id"))
        email = request.path_params["email"]
        heartbeat = config.event_heartbeat
        subaddress = request.query_params.get("subaddress")
        stream = EventStream(store, slots, email, cursor, heartbeat, subaddress=subaddress)
        return EventStreamResponse(stream)

    public = config.public_smtp or (config.host, settings.smtp_port)

    async def info(request: Request) -> Response:
        return _json(
            {
                "version": __version__,
                "smtp": {
                    "host": public[0],
                    "port": public[1],
                    "tls": config.tls,
                    "auth": config.smtp_auth.mode,
                },
                "domains": list(store.domains),
                "limits": {
                    **config.limits(),
                    "request_body": MAX_REQUEST_BODY,
                    "wait": MAX_WAIT,
                    "faults_per_inbox": MAX_FAULTS_PER_INBOX,
                    "fault_delay": MAX_FAULT_DELAY,
                    "streams": slots.limit,
                    "streams_per_inbox": slots.per_inbox,
                    "heartbeat": config.event_heartbeat,
                },
                "stats": {**store.stats(), "streams": slots.total},
            }
        )

    async def ca_certificate(request: Request) -> Response:
        if settings.ca_pem is None:
            return problem(404, TLS_OFF, "TLS is off on this server: there is no CA certificate")
        return respond(Reply(200, settings.ca_pem, PEM_TYPE))

    async def ready(request: Request) -> Response:
        if not counters.smtp_listening():
            detail = "the SMTP listener does not accept connections: the server is stopping"
            return problem(503, SHUTTING_DOWN, detail)
        store.check()  # a store that does not answer raises StoreUnavailable: 503
        return respond(Reply(200, b'{"status":"ready"}'))

    async def error_answer(request: Request, exc: Exception) -> Response:
        if isinstance(exc, StoreUnavailable):
            counters.store_errors += 1
        return await _error_answer(request, exc)

    async def link_check(request: Request) -> Response:
        email, id = request.path_params["email"], request.path_params["id"]
        query, enabled = request.query_params, config.link_checks
        return respond(await checks.link_check(store, email, id, query, enabled=enabled))

    # The routes that need the server's settings or streams; the table has the others.
    own = {
        "events": events,
        "info": info,
        "ca_certificate": ca_certificate,
        "ready": ready,
        "link_check": link_check,
    }
    routes = [
        Route(
            API_PREFIX + route.template,
            own.get(route.name) or _handler(store, route.endpoints, route.uses_base_url),
            methods=list(route.endpoints),
        )
        for route in ROUTES
    ]
    routes = [_counting_long_polls(route, counters) for route in routes]
    routes += _viewer_routes(store)
    metrics = MetricsEndpoint(counters, store)

    async def metrics_answer(request: Request) -> Response:
        return respond(metrics.reply())

    routes.append(Route("/metrics", metrics_answer, methods=["GET"]))
    app = Starlette(
        routes=routes,
        exception_handlers={
            TempInboxError: error_answer,
            HTTPException: _http_error_answer,
            Exception: _unexpected_error_answer,
        },
    )
    # A trailing slash is another path (404), not a redirect to this one.
    app.router.redirect_slashes = False
    app.add_middleware(RequestGuard, allowed=settings.allowed_hosts)
    return app


def _handler(
    store: InboxStore, answers: Mapping[str, Endpoint | None], uses_base_url: bool
) -> Callable[[Request], Awaitable[Response]]:
    """The request handler of a route of the table, by method.

    The base URL is spelled out only for a route that ``uses_base_url``:
    building it costs about as much as the rest of a short answer.
    """

    async def handle(request: Request) -> Response:
        method = request.method
        endpoint = answers.get("GET" if method == "HEAD" else method)
        assert endpoint is not None, "Starlette answers the other methods itself (405)"
        body = await _read_body(request) if method == "POST" else b""
        base_url = str(request.base_url) if uses_base_url else ""
        reply = await endpoint(store, request.path_params, request.query_params, body, base_url)
        return respond(reply)

    return handle


def _counting_long_polls(route: Route, counters: ServerCounters) -> Route:
    """The route, counting in ``counters`` the reads of messages that wait while they wait."""
    if route.path != API_PREFIX + "/messages/{email}":
        return route
    handle: Callable[[Request], Awaitable[Response]] = route.endpoint

    async def read(request: Request) -> Response:
        if "wait" not in request.query_params:
            return await handle(request)
        counters.long_polls += 1
        try:
            return await handle(request)
        finally:
            counters.long_polls -= 1

    return Route(route.path, read, methods=["GET"])


def _viewer_routes(store: InboxStore) -> list[Route]:
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
    """Server-Sent Events of an :class:`~pytest_tempinbox.server.api.events.EventStream`.

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
            return problem(431, HEADER_TOO_LARGE, f"headers may hold {MAX_HEADER_BYTES} bytes")
        target = len(scope.get("raw_path") or b"") + len(scope.get("query_string") or b"")
        if target > MAX_TARGET_BYTES:
            return problem(414, URI_TOO_LONG, f"path and query may hold {MAX_TARGET_BYTES} bytes")
        if self.allowed is None:
            return None
        host = next((value for name, value in headers if name == b"host"), None)
        if host is None or _host_name(host) in self.allowed:
            return None
        name = host.decode("latin-1")[:100]
        return problem(421, HOST_NOT_ALLOWED, f"this server does not answer for host {name!r}")


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


async def _error_answer(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, TempInboxError)
    return problem(exc.status, exc.code, str(exc))


async def _http_error_answer(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    code = _HTTP_CODES.get(exc.status_code, InvalidRequest.code)
    if exc.status_code == 404:
        detail = f"no such route: {request.url.path[:200]}"
    elif exc.status_code == 405:
        detail = f"{request.method} is not allowed here"
    else:
        detail = str(exc.detail)
    return problem(exc.status_code, code, detail, headers=exc.headers)


async def _unexpected_error_answer(request: Request, exc: Exception) -> Response:
    log.error("error while answering %s %s", request.method, request.url.path, exc_info=exc)
    return problem(500, INTERNAL_ERROR, "the server failed to answer; see its log")
