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
from typing import Any

from ..store.protocol import InboxStore
from . import checks, endpoints
from .endpoints import Reply

__all__ = ["API_PREFIX", "ROUTES", "Direct", "Endpoint", "Route", "match"]

API_PREFIX = "/api"

Endpoint = Callable[
    [InboxStore, Mapping[str, Any], Mapping[str, str], bytes, str], Awaitable[Reply]
]
"""An endpoint: (store, path parameters, query parameters, body, base URL) -> reply.

The body is the request's for ``POST`` and empty otherwise; the base URL is the
server's root URL as the request names it.
"""

Direct = Callable[
    [InboxStore, Mapping[str, Any], Mapping[str, str], bytes, str, "int | None"], "Reply | None"
]
"""An answer in the caller's thread: an endpoint's arguments and the parse limit.

It returns None when the answer is for the server's loop: when it must wait, or
parse more raw bytes than the limit (None: no limit) in the caller's thread.
"""

# The regular expressions of Starlette's path convertors.
_CONVERTORS = {"str": "[^/]+", "int": "[0-9]+"}
_PARAMETER = re.compile(r"\{([a-zA-Z_][a-zA-Z0-9_]*)(?::([a-zA-Z_][a-zA-Z0-9_]*))?\}")


class Route:
    """One path of the API: its template, its methods' endpoints, its in-process answer.

    ``template`` is relative to :data:`API_PREFIX`, in Starlette's syntax
    (``{email}``, ``{index:int}``). ``endpoints`` maps each method to its
    endpoint, or to None when the HTTP app answers it itself (it needs the
    server's settings or streams). ``direct``, for a route of one method, is
    its answer in the caller's thread; the in-process transport sends every
    other route to the app. ``uses_base_url`` tells whether its endpoints read
    the base URL: the HTTP app spells it out only for those.
    """

    __slots__ = ("direct", "endpoints", "name", "pattern", "template", "uses_base_url")

    def __init__(
        self,
        name: str,
        template: str,
        endpoints: Mapping[str, Endpoint | None],
        direct: Direct | None = None,
        *,
        uses_base_url: bool = False,
    ) -> None:
        assert direct is None or len(endpoints) == 1, "a direct answer is for one method"
        self.name = name
        self.template = template
        self.endpoints = endpoints
        self.direct = direct
        self.uses_base_url = uses_base_url
        self.pattern = _compile(template)

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


def _generate_now(
    store: InboxStore,
    args: Mapping[str, Any],
    query: Mapping[str, str],
    body: bytes,
    base_url: str,
    parse_limit: int | None,
) -> Reply:
    return endpoints.generate(store, body, base_url)


def _always(direct: Direct) -> Endpoint:
    """The endpoint of a route whose direct answer never needs the loop, made from that answer."""

    async def endpoint(
        store: InboxStore,
        args: Mapping[str, Any],
        query: Mapping[str, str],
        body: bytes,
        base_url: str,
    ) -> Reply:
        reply = direct(store, args, query, body, base_url, None)
        assert reply is not None, "this answer never waits"
        return reply

    return endpoint


async def _messages(
    store: InboxStore, args: Mapping[str, Any], query: Mapping[str, str], body: bytes, base_url: str
) -> Reply:
    return await endpoints.messages(
        store,
        args["email"],
        query.get("after"),
        query.get("wait"),
        subject=query.get("subject"),
        sender=query.get("from"),
        text=query.get("text"),
        subaddress=query.get("subaddress"),
    )


def _messages_now(
    store: InboxStore,
    args: Mapping[str, Any],
    query: Mapping[str, str],
    body: bytes,
    base_url: str,
    parse_limit: int | None,
) -> Reply | None:
    return endpoints.messages_now(
        store,
        args["email"],
        query.get("after"),
        query.get("wait"),
        parse_limit,
        subject=query.get("subject"),
        sender=query.get("from"),
        text=query.get("text"),
        subaddress=query.get("subaddress"),
    )


async def _message(
    store: InboxStore, args: Mapping[str, Any], query: Mapping[str, str], body: bytes, base_url: str
) -> Reply:
    return await endpoints.message(store, args["email"], args["id"])


async def _raw(
    store: InboxStore, args: Mapping[str, Any], query: Mapping[str, str], body: bytes, base_url: str
) -> Reply:
    return endpoints.raw(store, args["email"], args["id"])


async def _html_check(
    store: InboxStore, args: Mapping[str, Any], query: Mapping[str, str], body: bytes, base_url: str
) -> Reply:
    return await checks.html_check(store, args["email"], args["id"], query)


async def _spam_check(
    store: InboxStore, args: Mapping[str, Any], query: Mapping[str, str], body: bytes, base_url: str
) -> Reply:
    return await checks.spam_check(store, args["email"], args["id"])


async def _attachment(
    store: InboxStore, args: Mapping[str, Any], query: Mapping[str, str], body: bytes, base_url: str
) -> Reply:
    return await endpoints.attachment(store, args["email"], args["id"], int(args["index"]))


def _delete_now(
    store: InboxStore,
    args: Mapping[str, Any],
    query: Mapping[str, str],
    body: bytes,
    base_url: str,
    parse_limit: int | None,
) -> Reply:
    return endpoints.delete(store, args["email"])


async def _faults(
    store: InboxStore, args: Mapping[str, Any], query: Mapping[str, str], body: bytes, base_url: str
) -> Reply:
    return endpoints.faults(store, args["email"])


async def _add_fault(
    store: InboxStore, args: Mapping[str, Any], query: Mapping[str, str], body: bytes, base_url: str
) -> Reply:
    return endpoints.add_fault(store, args["email"], body)


async def _clear_faults(
    store: InboxStore, args: Mapping[str, Any], query: Mapping[str, str], body: bytes, base_url: str
) -> Reply:
    return endpoints.clear_faults(store, args["email"])


def _refused_now(
    store: InboxStore,
    args: Mapping[str, Any],
    query: Mapping[str, str],
    body: bytes,
    base_url: str,
    parse_limit: int | None,
) -> Reply:
    since, similar_to = query.get("since"), query.get("similar_to")
    return endpoints.refused(store, since, similar_to, query.get("limit"))


async def _health(
    store: InboxStore, args: Mapping[str, Any], query: Mapping[str, str], body: bytes, base_url: str
) -> Reply:
    return endpoints.health()


async def _openapi(
    store: InboxStore, args: Mapping[str, Any], query: Mapping[str, str], body: bytes, base_url: str
) -> Reply:
    from ... import __version__
    from ..openapi import openapi_document  # a large document: loaded when asked for

    return Reply(200, endpoints.encode_json(openapi_document(__version__)))


ROUTES: tuple[Route, ...] = (
    Route(
        "generate",
        "/generate",
        {"POST": _always(_generate_now)},
        _generate_now,
        uses_base_url=True,
    ),
    # A read that must wait hops to the server's loop, to long-poll there.
    Route("messages", "/messages/{email}", {"GET": _messages}, _messages_now),
    Route("message", "/messages/{email}/{id}", {"GET": _message}),
    Route("raw", "/messages/{email}/{id}/raw", {"GET": _raw}),
    Route("attachment", "/messages/{email}/{id}/attachments/{index:int}", {"GET": _attachment}),
    Route("html_check", "/messages/{email}/{id}/html-check", {"GET": _html_check}),
    Route("link_check", "/messages/{email}/{id}/link-check", {"GET": None}),
    Route("spam_check", "/messages/{email}/{id}/spam-check", {"GET": _spam_check}),
    Route("delete", "/delete/{email}", {"DELETE": _always(_delete_now)}, _delete_now),
    # One route for the three methods, so that a 405's Allow header names them all.
    Route(
        "faults", "/faults/{email}", {"GET": _faults, "POST": _add_fault, "DELETE": _clear_faults}
    ),
    Route("events", "/events/{email}", {"GET": None}),
    Route("info", "/info", {"GET": None}),
    Route("refused", "/refused", {"GET": _always(_refused_now)}, _refused_now),
    Route("openapi", "/openapi.json", {"GET": _openapi}),
    Route("ca_certificate", "/ca.pem", {"GET": None}),
    # The process answers, the store untouched; readiness needs the listeners and the store.
    Route("health", "/health", {"GET": _health}),
    Route("ready", "/ready", {"GET": None}),
)
"""Every route of the API, in the order the app tries them."""

_FIXED = {route.template: route for route in ROUTES if "{" not in route.template}
_TEMPLATED = tuple((route.pattern.fullmatch, route) for route in ROUTES if "{" in route.template)


def match(path: str) -> tuple[Route, dict[str, str]] | None:
    """The route of a decoded ``path`` (relative to the prefix) and its parameters, or None.

    The parameters are strings, as the path gives them. Each template matches
    paths of its own shape only, so trying the fixed paths first finds the
    route Starlette's router finds.
    """
    route = _FIXED.get(path)
    if route is not None:
        return route, {}
    for fullmatch, route in _TEMPLATED:
        found = fullmatch(path)
        if found is not None:
            return route, found.groupdict()
    return None
