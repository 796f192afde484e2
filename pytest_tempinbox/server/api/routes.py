"""The API's routes: one table for the HTTP app and the in-process transport.

Each :class:`Route` is a path template under ``/api``, the methods it answers
with the endpoint of each, and, for the calls a test makes all the time, the
answer the in-process transport may compute in the caller's thread. The
Starlette app (:mod:`pytest_tempinbox.server.http.app`) builds its routes from
:data:`ROUTES`; the in-process transport (:mod:`pytest_tempinbox.server.in_process`)
finds a request's route with :func:`match`, over the same templates compiled
the way Starlette compiles them, so both answer the same paths alike. No web
framework is imported here.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping
from importlib import import_module
from types import ModuleType

from .. import providers
from . import inboxes, messages, refusals
from .endpoints import Reply
from .request import Request

__all__ = ["API_PREFIX", "ROUTES", "Direct", "Endpoint", "Route", "match"]

API_PREFIX = "/api"

Endpoint = Callable[[Request], Awaitable[Reply]]
"""An endpoint: the request (see :class:`~.request.Request`) -> its reply."""

Direct = Callable[[Request, "int | None"], "Reply | None"]
"""An answer in the caller's thread: the request and the parse limit.

It returns None when the answer is for the server's loop: when it must wait, or
parse more raw bytes than the limit (None: no limit) in the caller's thread.
"""

# The regular expressions of Starlette's path convertors.
_CONVERTORS = {"str": "[^/]+", "int": "[0-9]+"}
_PARAMETER = re.compile(r"\{([a-zA-Z_][a-zA-Z0-9_]*)(?::([a-zA-Z_][a-zA-Z0-9_]*))?\}")


class Route:
    """One path of the API: its template, its methods' endpoints, its in-process answer.

    ``template`` is relative to ``prefix``, :data:`API_PREFIX` but for the
    pages beside the API (``/metrics``, the viewer), in Starlette's syntax
    (``{email}``, ``{index:int}``); ``path`` is the two together.
    ``endpoints`` maps each method to its endpoint, the streaming and
    operational routes' too: each takes one :class:`~.request.Request` and
    gives one reply. ``direct``, for a route of one method, is
    its answer in the caller's thread; the in-process transport sends every
    other route to the app. ``uses_base_url`` tells whether its endpoints read
    the base URL: the HTTP app spells it out only for those. ``sends_mail``
    marks a provider's send endpoint, whose body may hold a whole message (see
    :func:`~.endpoints.send_body_limit`) where the API's take at most
    :data:`~.endpoints.MAX_REQUEST_BODY`.
    """

    __slots__ = (
        "_pattern",
        "direct",
        "endpoints",
        "name",
        "path",
        "sends_mail",
        "template",
        "uses_base_url",
    )

    def __init__(
        self,
        name: str,
        template: str,
        endpoints: Mapping[str, Endpoint],
        direct: Direct | None = None,
        *,
        uses_base_url: bool = False,
        prefix: str = API_PREFIX,
        sends_mail: bool = False,
    ) -> None:
        assert direct is None or len(endpoints) == 1, "a direct answer is for one method"
        self.name = name
        self.template = template
        self.path = prefix + template
        self.endpoints = endpoints
        self.direct = direct
        self.uses_base_url = uses_base_url
        self.sends_mail = sends_mail
        self._pattern: re.Pattern[str] | None = None

    @property
    def pattern(self) -> re.Pattern[str]:
        """The template as a regular expression, relative to the prefix, compiled on first use.

        Only the templated routes of the API need theirs, for :func:`match`; the
        HTTP app's router compiles its own.
        """
        if self._pattern is None:
            self._pattern = _compile(self.template)
        return self._pattern

    def __repr__(self) -> str:
        return f"Route({self.name!r}, {self.template!r}, {sorted(self.endpoints)})"


def _compile(template: str) -> re.Pattern[str]:
    """The template as a regular expression, as Starlette's ``compile_path`` makes it."""
    pattern, end = "", 0
    for parameter in _PARAMETER.finditer(template):
        name, convertor = parameter[1], parameter[2] or "str"
        pattern += re.escape(template[end : parameter.start()])
        pattern += f"(?P<{name}>{_CONVERTORS[convertor]})"
        end = parameter.end()
    return re.compile(pattern + re.escape(template[end:]))


def _always(direct: Direct) -> Endpoint:
    """The endpoint of a route whose direct answer never needs the loop, made from that answer."""

    async def endpoint(request: Request) -> Reply:
        reply = direct(request, None)
        assert reply is not None, "this answer never waits"
        return reply

    return endpoint


def _later(module: str, name: str) -> Endpoint:
    """The endpoint ``name`` of ``module`` (relative here or absolute), imported when first called.

    For the routes a test seldom calls (the checks, the event stream, the
    faults, the operational pages, the viewer, the email providers): the
    server starts without their modules, and the first call pays for the
    import, once. The architecture test reads a literal ``module`` as an import.
    """
    found: list[Endpoint] = []

    async def endpoint(request: Request) -> Reply:
        if not found:
            found.append(getattr(import_module(module, __package__), name))
        return await found[0](request)

    endpoint.__qualname__ = endpoint.__name__ = name
    return endpoint


def _provider(name: str, function: str) -> Endpoint:
    """The endpoint ``function`` of the provider ``name``, imported when first called, gated.

    Every provider route goes through :func:`~..providers.gate.answer`: the
    provider's key checked, a recipient's fault answered in its shape.
    """
    found: list[tuple[Callable[..., Awaitable[Reply]], ModuleType, Endpoint]] = []

    async def endpoint(request: Request) -> Reply:
        if not found:
            module = import_module(f"{providers.__name__}.{name}")
            gate = import_module(f"{providers.__name__}.gate")
            found.append((gate.answer, module, getattr(module, function)))
        answer, module, function_of_module = found[0]
        return await answer(name, module, function_of_module, request)

    endpoint.__qualname__ = endpoint.__name__ = function
    return endpoint


ROUTES: tuple[Route, ...] = (
    Route(
        "generate",
        "/generate",
        {"POST": _always(inboxes.generate)},
        inboxes.generate,
        uses_base_url=True,
    ),
    # A read that must wait hops to the server's loop, to long-poll there.
    Route("messages", "/messages/{email}", {"GET": messages.messages}, messages.messages_at_once),
    Route("message", "/messages/{email}/{id}", {"GET": messages.message}),
    Route("raw", "/messages/{email}/{id}/raw", {"GET": messages.raw}),
    Route("transcript", "/messages/{email}/{id}/transcript", {"GET": messages.transcript}),
    Route(
        "attachment",
        "/messages/{email}/{id}/attachments/{index:int}",
        {"GET": messages.attachment},
    ),
    Route(
        "html_check", "/messages/{email}/{id}/html-check", {"GET": _later(".checks", "html_check")}
    ),
    Route(
        "link_check", "/messages/{email}/{id}/link-check", {"GET": _later(".checks", "link_check")}
    ),
    Route(
        "spam_check", "/messages/{email}/{id}/spam-check", {"GET": _later(".checks", "spam_check")}
    ),
    # The caller's inboxes, on a server with tenants (docs/tenants.md).
    Route("inboxes", "/inboxes", {"GET": _later(".tenancy", "inboxes")}),
    # A ticket for the viewer's message frames, which cannot send a token (docs/tenants.md).
    Route("ticket", "/ticket/{email}", {"GET": _later(".tickets", "ticket")}),
    Route("delete", "/delete/{email}", {"DELETE": _always(inboxes.delete)}, inboxes.delete),
    # One route for the three methods, so that a 405's Allow header names them all.
    Route(
        "faults",
        "/faults/{email}",
        {
            "GET": _later(".faults", "faults"),
            "POST": _later(".faults", "add_fault"),
            "DELETE": _later(".faults", "clear_faults"),
        },
    ),
    Route("events", "/events/{email}", {"GET": _later(".events", "events")}),
    Route("info", "/info", {"GET": _later(".operations", "info")}, uses_base_url=True),
    Route("refused", "/refused", {"GET": _always(refusals.refused)}, refusals.refused),
    Route("openapi", "/openapi.json", {"GET": _later(".operations", "openapi")}),
    Route("ca_certificate", "/ca.pem", {"GET": _later(".operations", "ca_certificate")}),
    # The process answers, the store untouched; readiness needs the listeners and the store.
    Route("health", "/health", {"GET": _later(".operations", "health")}),
    Route("ready", "/ready", {"GET": _later(".operations", "ready")}),
    # Beside the API: the metrics, where Prometheus looks for them, and the inbox viewer.
    Route("metrics", "/metrics", {"GET": _later(".operations", "metrics")}, prefix=""),
    Route("viewer", "/", {"GET": _later("..viewer", "page_endpoint")}, prefix=""),
    Route(
        "viewer_asset", "/viewer/{name}", {"GET": _later("..viewer", "asset_endpoint")}, prefix=""
    ),
    Route(
        "viewer_html",
        "/viewer/messages/{email}/{id}/html",
        {"GET": _later("..viewer", "html_endpoint")},
        prefix="",
    ),
    # The email providers' send APIs, each under a prefix of its own (docs/providers.md).
    *(
        Route(
            f"{name}:{method} {prefix}{path}",
            path,
            {method: _provider(name, function)},
            prefix=prefix,
            sends_mail=method == "POST",
        )
        for name, method, path, function in providers.ENDPOINTS
        for prefix in (f"{providers.PREFIX}/{name}", *([""] if name in providers.ROOTED else []))
    ),
)
"""Every route the server answers over HTTP, in the order the app tries them."""

_API = [route for route in ROUTES if route.path.startswith(API_PREFIX + "/")]
_FIXED = {route.template: route for route in _API if "{" not in route.template}
_TEMPLATED: dict[str, list[Route]] = {}
for _route in _API:
    if "{" in _route.template:
        # Grouped by their first segment, always literal, so a path's match compiles
        # only the patterns of its own group (on first use: see Route.pattern).
        _first = _route.template.split("/", 2)[1]
        assert "{" not in _first, f"{_route.template}: the first segment must be literal"
        _TEMPLATED.setdefault(_first, []).append(_route)


def match(path: str) -> tuple[Route, dict[str, str]] | None:
    """The API route of a decoded ``path`` (relative to the prefix) and its parameters, or None.

    The parameters are strings, as the path gives them. Each template matches
    paths of its own shape only, so trying the fixed paths first finds the
    route Starlette's router finds.
    """
    route = _FIXED.get(path)
    if route is not None:
        return route, {}
    for route in _TEMPLATED.get(path.split("/", 2)[1] if path[:1] == "/" else "", ()):
        found = route.pattern.fullmatch(path)
        if found is not None:
            return route, found.groupdict()
    return None
