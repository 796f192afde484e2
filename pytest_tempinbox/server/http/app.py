"""The HTTP side: the Starlette app that serves the store under ``/api``.

The only module that imports Starlette. Every answer is JSON; every error is an
RFC 9457 problem document (``application/problem+json``) with a stable ``code``,
including unknown routes (404) and wrong methods (405). A client's request
never causes a 500. The same app serves the inbox viewer (:mod:`pytest_tempinbox.server.viewer`)
at ``/`` and under ``/viewer/``: a web page, not API, so not in the OpenAPI document;
and the server's metrics at ``/metrics`` (:mod:`pytest_tempinbox.server.api.metrics`),
for Prometheus, outside ``/api`` where scrapers look for them. Every route of
``/api`` is an entry of the API's route table
(:mod:`pytest_tempinbox.server.api.routes`), answered by one handler that makes
the endpoint's :class:`~pytest_tempinbox.server.api.request.Request`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping

from starlette.applications import Starlette
from starlette.datastructures import Headers, QueryParams
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from ...errors import (
    HEADER_TOO_LARGE,
    HOST_NOT_ALLOWED,
    INTERNAL_ERROR,
    METHOD_NOT_ALLOWED,
    NOT_FOUND,
    URI_TOO_LONG,
    InvalidRequest,
    StoreUnavailable,
    TempInboxError,
)
from ..api.endpoints import (
    COMMON_HEADERS,
    DROP,
    MAX_HEADER_BYTES,
    MAX_REQUEST_BODY,
    MAX_TARGET_BYTES,
    Reply,
    Stream,
    error_reply,
    problem_reply,
    send_body_limit,
)
from ..api.events import EVENT_STREAM_TYPE
from ..api.request import Request as ApiRequest
from ..api.routes import API_PREFIX, ROUTES, Endpoint
from ..api.settings import ApiSettings
from ..api.tenancy import guarded
from ..counters import ServerCounters
from ..store.protocol import InboxStore
from .asgi_io import COMMON_RAW_HEADERS, read_body, send_reply
from .lanes import RouteLanes
from .listener import drop_connection
from .route_index import IndexedRouter

__all__ = [
    "MAX_HEADER_BYTES",
    "MAX_REQUEST_BODY",
    "MAX_TARGET_BYTES",
    "EventStreamResponse",
    "RequestGuard",
    "create_app",
]

log = logging.getLogger(__name__)

MESSAGES_PATH = API_PREFIX + "/messages/{email}"  # the long-poll's route: see lanes.py

_NO_QUERY = QueryParams("")  # immutable: shared by the requests without a query
_HTTP_CODES = {404: NOT_FOUND, 405: METHOD_NOT_ALLOWED}


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
    response.raw_headers[:0] = COMMON_RAW_HEADERS
    return response


def problem(
    status: int, code: str, detail: str, headers: Mapping[str, str] | None = None
) -> Response:
    """Return an RFC 9457 problem response with our stable ``code`` token."""
    return respond(problem_reply(status, code, detail, headers))


def create_app(store: InboxStore, settings: ApiSettings) -> Starlette:
    """Return the ASGI app serving ``store``; ``settings`` describe the server for ``/api/info``."""
    counters = settings.counters
    slots = settings.slots
    counters.event_streams = lambda: slots.total

    async def error_answer(request: Request, exc: Exception) -> Response:
        if isinstance(exc, StoreUnavailable):
            counters.store_errors += 1
        return await _error_answer(request, exc)

    send_limit = send_body_limit(settings.config.message_size_limit)
    tenants = settings.config.tenants
    apps = {
        route.path: _RouteApp(
            store,
            settings,
            route.endpoints if tenants is None else guarded(route.name, route.endpoints, tenants),
            route.uses_base_url,
            send_limit if route.sends_mail else MAX_REQUEST_BODY,
            counters if route.path == MESSAGES_PATH else None,
        )
        for route in ROUTES
    }
    routes = [
        Route(route.path, apps[route.path], methods=list(route.endpoints)) for route in ROUTES
    ]
    if settings.config.mcp:  # the MCP SDK imported only then (docs/mcp.md)
        from ..api.tenancy import unauthorized
        from .mcp_endpoint import MCP_PATH, McpEndpoint

        endpoint = McpEndpoint(store, settings, lambda: respond(unauthorized()))
        routes.append(Route(MCP_PATH, endpoint, methods=["GET", "POST", "DELETE"]))
    app = Starlette(
        routes=routes,
        exception_handlers={
            TempInboxError: error_answer,
            HTTPException: _http_error_answer,
            Exception: _unexpected_error_answer,
        },
    )
    # A trailing slash is another path (404), not a redirect to this one; each request
    # tries only the routes its path could match (route_index.py).
    app.router = router = IndexedRouter(routes)
    fixed = {
        path: (frozenset(route.methods or ()), apps[path])
        for path, route in router.sole_routes().items()
        if path in apps  # the table's routes (the MCP endpoint goes the long way)
    }
    app.add_middleware(
        RouteLanes,
        path=MESSAGES_PATH,
        route=apps[MESSAGES_PATH],
        on_error=error_answer,
        fixed=fixed,
    )
    app.add_middleware(RequestGuard, allowed=settings.allowed_hosts)
    limits = settings.config.rate_limits_in_force()
    if limits is not None and limits.http:  # with tenants, or a flag: docs/tenants.md
        from .rate_guard import RateGuard

        app.add_middleware(RateGuard, limits=limits, tenants=tenants)
    return app


class _RouteApp:
    """A route of the table as the ASGI app Starlette's ``Route`` calls: its endpoints by method.

    The base URL is spelled out only for a route that ``uses_base_url``:
    building it costs about as much as the rest of a short answer. A body over
    ``body_limit`` bytes is refused (413) before it is read whole. A reply with
    a stream (the events) is sent as Server-Sent Events. With ``counters``,
    the reads that wait are counted while they wait (``long_polls``).

    Starlette would wrap a plain function's route in a second exception
    handler (``request_response``) inside the app's own, which answers the
    same exceptions with the same handlers. Without it, and as one coroutine,
    each request holds five coroutines and their closures the less: about
    2 KiB held by every pending long-poll, and their time on every request.
    """

    __slots__ = ("answers", "body_limit", "counters", "settings", "store", "uses_base_url")

    def __init__(
        self,
        store: InboxStore,
        settings: ApiSettings,
        answers: Mapping[str, Endpoint],
        uses_base_url: bool,
        body_limit: int,
        counters: ServerCounters | None = None,
    ) -> None:
        self.store = store
        self.settings = settings
        self.answers = answers
        self.uses_base_url = uses_base_url
        self.body_limit = body_limit
        self.counters = counters

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer one request: its endpoint's reply, sent."""
        method = scope["method"]
        endpoint = self.answers.get("GET" if method == "HEAD" else method)
        assert endpoint is not None, "Starlette answers the other methods itself (405)"
        body = await read_body(scope, receive, self.body_limit) if method == "POST" else b""
        base_url = str(Request(scope).base_url) if self.uses_base_url else ""
        query_string = scope["query_string"]
        query = QueryParams(query_string) if query_string else _NO_QUERY
        asked = ApiRequest(
            self.store,
            scope.get("path_params", {}),
            query,
            body,
            base_url,
            self.settings,
            Headers(scope=scope),
        )
        counters = self.counters
        if counters is None or "wait" not in query:
            reply = await endpoint(asked)
        else:
            counters.long_polls += 1
            try:
                reply = await endpoint(asked)
            finally:
                counters.long_polls -= 1
        if reply is DROP:
            if drop_connection(scope):
                await _disconnected(receive)  # uvicorn then sends nothing more
                response = Response(b"", status_code=204)  # to a connection lost: never sent
            else:  # a connection this process does not hold (none of its listeners'): a 503
                response = Response(
                    b"connection dropped (injected fault)", 503, media_type="text/plain"
                )
        elif reply.stream is not None:
            response = EventStreamResponse(reply.stream)
        else:
            await send_reply(reply, send)  # what respond(reply) sends, without the objects
            return
        await response(scope, receive, send)


class EventStreamResponse(StreamingResponse):
    """Server-Sent Events of a stream (:class:`~pytest_tempinbox.server.api.events.EventStream`).

    It watches for the client leaving all along (Starlette's own streaming
    may notice only at the next write, and the next heartbeat can be seconds
    away), and gives the stream's slot back however the answer ends.
    """

    media_type = EVENT_STREAM_TYPE

    def __init__(self, stream: Stream) -> None:
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
        self._seen: dict[bytes, bool] = {}  # a Host header's value: whether its name is allowed

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
        size = 4 * len(headers)
        host = None
        for name, value in headers:
            size += len(name) + len(value)
            if name == b"host" and host is None:
                host = value
        if size > MAX_HEADER_BYTES:
            return problem(431, HEADER_TOO_LARGE, f"headers may hold {MAX_HEADER_BYTES} bytes")
        target = len(scope.get("raw_path") or b"") + len(scope.get("query_string") or b"")
        if target > MAX_TARGET_BYTES:
            return problem(414, URI_TOO_LONG, f"path and query may hold {MAX_TARGET_BYTES} bytes")
        if self.allowed is None or host is None:
            return None
        allowed = self._seen.get(host)
        if allowed is None:
            allowed = _host_name(host) in self.allowed
            if len(self._seen) < 64:  # a server is called by a few names: bounded all the same
                self._seen[bytes(host)] = allowed
        if allowed:
            return None
        name = host.decode("latin-1")[:100]
        return problem(421, HOST_NOT_ALLOWED, f"this server does not answer for host {name!r}")


def _host_name(host: bytes) -> str:
    text = host.decode("latin-1").strip().lower()
    if text.startswith("["):  # [::1]:8025
        return text[: text.find("]") + 1]
    return text.rsplit(":", 1)[0] if text.count(":") == 1 else text


async def _error_answer(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, TempInboxError)
    return respond(error_reply(exc))


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
