"""The API's rate limits over real sockets: per token, per client address, guesses, proxies."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from starlette.applications import Starlette

from pytest_tempinbox.rate_limits import DEFAULT_GUESSES, RateLimits
from pytest_tempinbox.server.http.rate_guard import RateGuard
from pytest_tempinbox.server.inbox_server import InboxServer
from pytest_tempinbox.server.openapi import openapi_document
from pytest_tempinbox.tenants import hash_line

from .api_support import assert_problem
from .tenants_support import TOKEN_A, TOKEN_B, bearer, tenants_file


def flood(url: str, times: int, headers: dict[str, str] | None = None) -> list[requests.Response]:
    """``times`` requests of ``url`` in a row, on one connection; their answers."""
    with requests.Session() as session:
        return [session.get(url, headers=headers, timeout=10) for _ in range(times)]


def statuses(answers: list[requests.Response]) -> list[int]:
    """The status of each answer."""
    return [answer.status_code for answer in answers]


@pytest.fixture
def limited(tmp_path: Path) -> Iterator[InboxServer]:
    """A server with two tenants, 5 requests a second per token (a burst of 10), no guess limit."""
    limits = RateLimits(token_rate=5, client_rate=2, guesses=0)
    with InboxServer(tenants=tenants_file(tmp_path), rate_limits=limits) as server:
        yield server


def test_a_tokens_flood_meets_429_with_retry_after(limited: InboxServer) -> None:
    answers = flood(limited.api_url + "/inboxes", 30, bearer(TOKEN_A))
    assert statuses(answers)[:10] == [200] * 10, "the burst is answered"
    refused = answers[-1]
    assert_problem(refused, 429, "rate_limited")
    assert int(refused.headers["retry-after"]) >= 1


def test_one_tokens_flood_leaves_another_tokens_requests_answered(limited: InboxServer) -> None:
    assert 429 in statuses(flood(limited.api_url + "/inboxes", 30, bearer(TOKEN_A)))
    answer = requests.get(limited.api_url + "/inboxes", headers=bearer(TOKEN_B), timeout=10)
    assert answer.status_code == 200, answer.text


def test_the_open_routes_are_limited_per_client_address(limited: InboxServer) -> None:
    answers = flood(limited.api_url + "/health", 20)
    assert statuses(answers)[:4] == [200] * 4
    assert_problem(answers[-1], 429, "rate_limited")


def test_a_tenants_own_rate_from_the_tenants_file_holds(tmp_path: Path) -> None:
    path = tmp_path / "tenants.json"
    tenants = [
        {
            "name": "team-a",
            "tokens": [hash_line(TOKEN_A)],
            "rate_limits": {"requests_per_second": 1, "burst": 2},
        },
        {"name": "team-b", "tokens": [hash_line(TOKEN_B)]},
    ]
    path.write_text(json.dumps({"tenants": tenants}))
    with InboxServer(tenants=str(path)) as server:
        assert statuses(flood(server.api_url + "/inboxes", 3, bearer(TOKEN_A))) == [200, 200, 429]
        assert set(statuses(flood(server.api_url + "/inboxes", 20, bearer(TOKEN_B)))) == {200}


def test_repeated_401s_from_one_address_meet_429_even_with_a_good_token(tmp_path: Path) -> None:
    limits = RateLimits(guesses=3)
    with InboxServer(tenants=tenants_file(tmp_path), rate_limits=limits) as server:
        guesses = flood(server.api_url + "/inboxes", 3, bearer("tit_guessed"))
        assert statuses(guesses) == [401, 401, 401]
        held = requests.get(server.api_url + "/inboxes", headers=bearer(TOKEN_A), timeout=10)
        assert_problem(held, 429, "rate_limited")
        assert "without a valid token" in held.json()["detail"]
        assert int(held.headers["retry-after"]) >= 1


def test_without_tenants_the_client_rate_limits_every_route() -> None:
    with InboxServer(rate_limits=RateLimits(client_rate=2)) as server:
        answers = flood(server.api_url + "/info", 10)
        assert statuses(answers)[:4] == [200] * 4
        assert_problem(answers[-1], 429, "rate_limited")


def test_the_open_server_without_the_flags_has_no_rate_limit() -> None:
    with InboxServer() as server:
        assert set(statuses(flood(server.api_url + "/health", 300))) == {200}


def test_a_spoofed_forwarded_header_from_a_direct_client_does_not_change_its_bucket() -> None:
    with InboxServer(rate_limits=RateLimits(client_rate=1)) as server:
        assert 429 in statuses(flood(server.api_url + "/health", 5))
        for headers in ({"X-Forwarded-For": "203.0.113.9"}, {"Forwarded": "for=203.0.113.9"}):
            spoofed = requests.get(server.api_url + "/health", headers=headers, timeout=10)
            assert_problem(spoofed, 429, "rate_limited")


def test_behind_a_trusted_proxy_each_forwarded_client_has_its_own_bucket() -> None:
    limits = RateLimits(client_rate=1, trusted_proxies=["127.0.0.0/8"])
    with InboxServer(rate_limits=limits) as server:
        url = server.api_url + "/health"
        first = {"X-Forwarded-For": "203.0.113.9"}
        assert 429 in statuses(flood(url, 5, first))
        second = {"Forwarded": 'for="[2001:db8::7]:4711";proto=https'}
        assert requests.get(url, headers=second, timeout=10).status_code == 200


def test_every_operation_of_the_openapi_document_lists_the_429_of_the_rate_limits() -> None:
    missing = [
        f"{method.upper()} {path}"
        for path, operations in openapi_document("test")["paths"].items()
        for method, operation in operations.items()
        if "rate_limited" not in operation["responses"].get("429", {}).get("description", "")
    ]
    assert missing == []


def test_with_tenants_token_guessing_is_held_back_by_default(tmp_path: Path) -> None:
    with InboxServer(tenants=tenants_file(tmp_path)) as server:
        answers = flood(server.api_url + "/inboxes", DEFAULT_GUESSES + 1, bearer("tit_guessed"))
        assert statuses(answers) == [401] * DEFAULT_GUESSES + [429]


def test_the_open_server_without_the_flags_has_no_rate_guard_in_its_app() -> None:
    with InboxServer() as server:
        app = server.app()
        assert isinstance(app, Starlette)
        assert RateGuard.__name__ not in [m.cls.__name__ for m in app.user_middleware]  # type: ignore[attr-defined]


def test_the_client_waits_out_a_rate_limit_and_sends_again(limited: InboxServer) -> None:
    from pytest_tempinbox import TempInboxClient

    with TempInboxClient(limited.api_url, token=TOKEN_A) as client:
        inboxes = [client.generate() for _ in range(14)]  # past the burst of 10 at 5 a second
    assert len({inbox.address for inbox in inboxes}) == 14, "each generated once, none lost"
