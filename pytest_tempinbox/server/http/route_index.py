"""Starlette's router, trying only the routes whose path could match a request's.

Starlette tries a request's path against every route in turn, one regular
expression each, and the server has 47 (the API, the viewer, the metrics, the
providers' send APIs under their prefixes, and those of the providers also
served at the root). A provider's send, past the middle of the list, paid for
every route before it.

:class:`IndexedRouter` keeps Starlette's own matching (its ``Route.matches``,
the first full match winning, a match of the path alone answering 405, the
404 of no match), but over a shorter list: the routes of the exact path,
those whose path template starts with a literal part that the path starts
with, and any route that is not a plain ``Route``, in the order they were
given. No other route can match: a fixed path matches itself only, and a
template's pattern starts with its literal part. The shorter lists, one per
set of candidates, are Starlette routers of their own, made on first use.
"""

from __future__ import annotations

from collections.abc import Sequence

from starlette.routing import BaseRoute, Route, Router
from starlette.types import Receive, Scope, Send

__all__ = ["IndexedRouter"]


class IndexedRouter(Router):
    """A :class:`~starlette.routing.Router` that tries only the routes a request's path could match.

    Always without redirects to the path with or without a trailing slash
    (another path is a 404). A request under a ``root_path`` (a mounted app)
    is routed as Starlette routes it, over every route.
    """

    def __init__(self, routes: Sequence[BaseRoute]) -> None:
        super().__init__(routes, redirect_slashes=False)
        self._fixed: dict[str, list[int]] = {}
        self._templated: list[tuple[str, int]] = []
        self._always: list[int] = []
        for index, route in enumerate(self.routes):
            if type(route) is not Route:
                self._always.append(index)
            elif "{" in route.path:
                self._templated.append((route.path[: route.path.index("{")], index))
            else:
                self._fixed.setdefault(route.path, []).append(index)
        self._routers: dict[tuple[int, ...], Router] = {}

    def sole_routes(self) -> dict[str, Route]:
        """Each fixed path that only its own route could match, and that route.

        A path with two routes, one that a template's pattern also matches
        (``/api/messages/{email}`` matches ``/api/messages/x``), or any path
        at all beside a route that is not a plain ``Route`` (a mount), is not
        among them: Starlette's order of trial decides those.
        """
        if self._always:
            return {}
        templates = [self.routes[index] for _, index in self._templated]
        sole: dict[str, Route] = {}
        for path, indexes in self._fixed.items():
            route = self.routes[indexes[0]]
            shadowed = any(isinstance(t, Route) and t.path_regex.match(path) for t in templates)
            if len(indexes) == 1 and isinstance(route, Route) and not shadowed:
                sole[path] = route
        return sole

    async def app(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Route an HTTP request over its candidate routes; anything else as Starlette does."""
        if scope["type"] != "http" or scope.get("root_path") or self.redirect_slashes:
            await super().app(scope, receive, send)
            return
        scope.setdefault("router", self)
        await self._router_for(scope["path"]).app(scope, receive, send)

    def _router_for(self, path: str) -> Router:
        candidates = [index for prefix, index in self._templated if path.startswith(prefix)]
        candidates += self._fixed.get(path, ())
        candidates += self._always
        key = tuple(sorted(candidates))
        router = self._routers.get(key)
        if router is None:
            routes = [self.routes[index] for index in key]
            router = Router(routes, redirect_slashes=False, default=self.default)
            if len(self._routers) < 4 * len(self.routes):  # a few per route: bounded
                self._routers[key] = router
        return router
