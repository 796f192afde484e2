"""The indexed router finds the route Starlette's own router finds, over the server's routes."""

from __future__ import annotations

import re

import pytest
import requests
from starlette.routing import BaseRoute, Match, Mount, Route, Router

from pytest_tempinbox.config import ServerConfig
from pytest_tempinbox.server.api.routes import API_PREFIX
from pytest_tempinbox.server.api.settings import ApiSettings
from pytest_tempinbox.server.http.app import create_app
from pytest_tempinbox.server.http.route_index import IndexedRouter
from pytest_tempinbox.server.inbox_server import InboxServer
from pytest_tempinbox.server.store.memory.store import Store

METHODS = ("GET", "HEAD", "POST", "PUT", "DELETE")


def _concrete(template: str) -> str:
    return re.sub(
        r"\{[^}]+\}", lambda found: "0" if ":int" in found.group() else "a@b.test", template
    )


def _paths(routes: list[BaseRoute]) -> list[str]:
    paths = {"/", "/nowhere", "/api", "/api/", "/providers", "/providers/ses/x", "/email/"}
    for route in routes:
        if isinstance(route, Route):
            path = _concrete(route.path)
            paths |= {path, path + "/", path.rstrip("/") or "/", path + "/more", path[:-1]}
    return sorted(paths)


def _chosen(routes: list[BaseRoute], path: str, method: str) -> tuple[BaseRoute | None, Match]:
    """The route Starlette's router loop hands the request to, and how it matched."""
    scope = {"type": "http", "path": path, "root_path": "", "method": method}
    partial = None
    for route in routes:
        found, _ = route.matches(scope)
        if found is Match.FULL:
            return route, found
        if found is Match.PARTIAL and partial is None:
            partial = route
    return partial, Match.NONE if partial is None else Match.PARTIAL


@pytest.fixture(scope="module")
def router() -> IndexedRouter:
    app = create_app(Store(), ApiSettings(ServerConfig(), 25))
    assert isinstance(app.router, IndexedRouter)
    return app.router


def test_every_path_of_the_server_finds_starlette_s_route(router: IndexedRouter) -> None:
    routes = list(router.routes)
    checked = 0
    for path in _paths(routes):
        shorter = list(router._router_for(path).routes)
        for method in METHODS:
            assert _chosen(shorter, path, method) == _chosen(routes, path, method), (path, method)
            checked += 1
    assert checked > 500


def test_a_path_matches_among_routes_of_one_path_and_other_kinds() -> None:
    async def app(scope: object, receive: object, send: object) -> None:
        raise AssertionError("not called")

    routes: list[BaseRoute] = [
        Route("/items/{name}", app, methods=["GET"]),
        Route("/items/new", app, methods=["POST"]),  # after a template that matches it too
        Route("/items/new", app, methods=["GET", "DELETE"]),
        Mount("/static", app),
        Route("/", app, methods=["GET"]),
    ]
    router = IndexedRouter(routes)
    for path in ("/items/new", "/items/x", "/static/a.css", "/", "/items", "/itemsx/new"):
        shorter = list(router._router_for(path).routes)
        for method in METHODS:
            assert _chosen(shorter, path, method) == _chosen(routes, path, method), (path, method)
    assert isinstance(router._router_for("/nowhere"), Router)
    assert list(router._router_for("/nowhere").routes) == [routes[3]]  # the Mount: always tried


def test_the_server_answers_404_405_and_a_trailing_slash_as_before() -> None:
    server = InboxServer(smtp_port=0, api_port=0)
    server.start()
    try:
        with requests.Session() as http:
            http.trust_env = False
            origin = server.api_url.removesuffix("/api")
            send = http.get(server.provider_url("sendgrid") + "/v3/mail/send", timeout=10)
            assert send.status_code == 405
            assert send.headers["allow"] == "POST"
            assert send.json()["code"] == "method_not_allowed"
            assert http.get(origin + "/providers/nowhere", timeout=10).status_code == 404
            slashed = http.post(server.api_url + "/generate/", timeout=10, allow_redirects=False)
            assert slashed.status_code == 404
            address = http.post(server.api_url + "/generate", timeout=10).json()["email"]
            assert http.get(f"{server.api_url}/messages/{address}", timeout=10).json() == []
            viewer = http.get(origin + "/", timeout=10)
            assert viewer.status_code == 200
            assert viewer.headers["content-type"].startswith("text/html")
    finally:
        server.stop()


def test_sole_routes_are_the_fixed_paths_no_other_route_could_match() -> None:
    async def app(scope: object, receive: object, send: object) -> None:
        raise AssertionError("not called")

    routes: list[BaseRoute] = [
        Route("/items/{name}", app, methods=["GET"]),
        Route("/items/new", app, methods=["POST"]),  # a template matches it too
        Route("/send", app, methods=["POST"]),
        Route("/twice", app, methods=["GET"]),
        Route("/twice", app, methods=["POST"]),  # two routes: Starlette's order decides
    ]
    assert IndexedRouter(routes).sole_routes() == {"/send": routes[2]}
    assert IndexedRouter([*routes, Mount("/static", app)]).sole_routes() == {}


def test_every_sole_route_of_the_server_is_the_one_starlette_finds(router: IndexedRouter) -> None:
    sole = router.sole_routes()
    assert API_PREFIX + "/generate" in sole
    assert any(path.endswith("/v3/mail/send") for path in sole)
    assert API_PREFIX + "/messages/{email}" not in sole
    routes = list(router.routes)
    for path, route in sole.items():
        for method in METHODS:
            chosen, _ = _chosen(routes, path, method)
            assert chosen is route, (path, method)
