"""The shortest way through the app for the routes that are asked most: past Starlette's router.

Two kinds of request take it:

- ``GET /api/messages/{email}``, the long-poll's. A shared server holds a
  pending long-poll for every test of every CI job that waits for mail, and
  each holds the coroutines of the layers it went through while it waits:
  Starlette's exception middleware and router hold about 2.7 KiB of them per
  request.
- Every method of a route of the table at a fixed path (no parameter) that no
  other route could match: the providers' sends, ``/api/generate``. The
  exception middleware and the router cost about 9 µs of a provider send's
  70 in the app.

:class:`RouteLanes`, the app's innermost middleware, sends them straight to
their route's handler, with the path arguments Starlette's router would give
it, and answers the package's errors with the handler the app registers for
them. Anything else raised goes on to Starlette's server-error middleware, as
from the router. Every other request passes on untouched: another method
(Starlette's 405), another path (404), a request under a ``root_path``.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping

from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from ...errors import TempInboxError

__all__ = ["RouteLanes"]


class RouteLanes:
    """Send ``GET``/``HEAD`` of ``path`` to ``route``, each of ``fixed`` to its own, the rest on.

    ``path`` is the messages route's template (``/api/messages/{email}``),
    matched as Starlette matches a ``str`` parameter (no slash); ``route`` is
    the ASGI app the route table's entry is served by. ``fixed`` maps a fixed
    path to the methods it answers and its route's ASGI app: only paths that
    no other route of the app could match belong there
    (:meth:`~.route_index.IndexedRouter.sole_routes`). ``on_error`` is the
    app's handler for :class:`~pytest_tempinbox.errors.TempInboxError`.
    """

    def __init__(
        self,
        app: ASGIApp,
        path: str,
        route: ASGIApp,
        on_error: Callable[[Request, Exception], Awaitable[Response]],
        fixed: Mapping[str, tuple[frozenset[str], ASGIApp]] | None = None,
    ) -> None:
        self.app = app
        head, _, tail = path.partition("{email}")
        self.pattern = re.compile(re.escape(head) + "(?P<email>[^/]+)" + re.escape(tail))
        self.route = route
        self.on_error = on_error
        self.fixed = dict(fixed or {})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve a route of a lane in place, or pass the request on."""
        if scope["type"] == "http" and not scope.get("root_path"):
            method = scope["method"]
            lane = self.fixed.get(scope["path"])
            if lane is not None:
                methods, route = lane
                if method in methods:
                    scope["path_params"] = {}
                    await self._serve(route, scope, receive, send)
                    return
            elif method in ("GET", "HEAD"):
                found = self.pattern.fullmatch(scope["path"])
                if found is not None:
                    scope["path_params"] = {"email": found["email"]}
                    await self._serve(self.route, scope, receive, send)
                    return
        await self.app(scope, receive, send)

    async def _serve(self, route: ASGIApp, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await route(scope, receive, send)
        except TempInboxError as error:
            response = await self.on_error(Request(scope, receive, send), error)
            await response(scope, receive, send)
