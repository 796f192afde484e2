"""The route table and the table of problem codes, against Starlette and the client."""

from __future__ import annotations

import re

import pytest
from starlette.routing import compile_path

from pytest_tempinbox import errors
from pytest_tempinbox.client.http import _error_from
from pytest_tempinbox.server.api.endpoints import PROBLEM_TYPE, problem_reply
from pytest_tempinbox.server.api.routes import ROUTES, Route, match
from pytest_tempinbox.transport import Answer


@pytest.mark.parametrize("route", ROUTES, ids=lambda route: route.name)
def test_each_template_compiles_as_starlette_compiles_it(route: Route) -> None:
    starlette = compile_path(route.path)[0].pattern
    prefix = route.path.removesuffix(route.template)
    assert starlette == "^" + re.escape(prefix) + route.pattern.pattern + "$"


def test_only_the_everyday_calls_are_answered_in_process() -> None:
    direct = {route.name for route in ROUTES if route.direct is not None}
    assert direct == {"generate", "messages", "delete", "refused"}
    for route in ROUTES:
        if route.direct is not None:
            assert len(route.endpoints) == 1


@pytest.mark.parametrize(
    ("path", "name", "args"),
    [
        ("/generate", "generate", {}),
        ("/refused", "refused", {}),
        ("/messages/a@b.test", "messages", {"email": "a@b.test"}),
        ("/messages/a@b.test/m1", "message", {"email": "a@b.test", "id": "m1"}),
        ("/messages/a@b.test/m1/raw", "raw", {"email": "a@b.test", "id": "m1"}),
        (
            "/messages/a@b.test/m1/attachments/2",
            "attachment",
            {"email": "a@b.test", "id": "m1", "index": "2"},
        ),
        ("/delete/a@b.test", "delete", {"email": "a@b.test"}),
        ("/faults/a@b.test", "faults", {"email": "a@b.test"}),
        ("/openapi.json", "openapi", {}),
    ],
)
def test_match_finds_the_route_and_its_parameters(
    path: str, name: str, args: dict[str, str]
) -> None:
    found = match(path)
    assert found is not None
    assert (found[0].name, found[1]) == (name, args)


@pytest.mark.parametrize(
    "path",
    ["/nope", "/generate/", "/messages/", "/messages/a/b/attachments/x", "/delete/a/b", ""],
)
def test_match_finds_no_route_where_starlette_finds_none(path: str) -> None:
    assert match(path) is None


def test_the_problem_table_holds_every_error_class_with_its_status() -> None:
    for code, error in errors.ERRORS_BY_CODE.items():
        assert errors.PROBLEMS[code] == (error.status, error)
    own_class = {
        code for code, (_, error) in errors.PROBLEMS.items() if error is errors.TempInboxError
    }
    assert own_class == {
        errors.NOT_FOUND,
        errors.METHOD_NOT_ALLOWED,
        errors.URI_TOO_LONG,
        errors.HEADER_TOO_LARGE,
        errors.HOST_NOT_ALLOWED,
        errors.TLS_OFF,
        errors.SHUTTING_DOWN,
        errors.LINK_CHECKS_OFF,
        errors.TOO_MANY_CONNECTIONS,
        errors.RATE_LIMITED,
        errors.INTERNAL_ERROR,
    }


@pytest.mark.parametrize("code", list(errors.PROBLEMS))
def test_the_client_raises_the_class_of_each_code(code: str) -> None:
    status, error = errors.PROBLEMS[code]
    reply = problem_reply(status, code, "what went wrong")
    raised = _error_from(Answer(status, PROBLEM_TYPE, reply.body), "GET /api/x")
    assert type(raised) is error
    assert (raised.status, str(raised)) == (status, "what went wrong")


@pytest.mark.parametrize("route", ROUTES, ids=lambda route: route.name)
def test_each_route_of_the_table_has_an_endpoint_for_each_method(route: Route) -> None:
    # None of them is left for the app to answer by itself: the streaming and
    # operational routes are in the table too, called with one request.
    assert route.endpoints, f"{route.name} answers no method"
    for method, endpoint in route.endpoints.items():
        assert callable(endpoint), f"{route.name} has no endpoint for {method}"
