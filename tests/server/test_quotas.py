"""Quotas over real sockets: generate until 429, concurrent calls, windows, checks."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from pytest_tempinbox import TempInboxClient
from pytest_tempinbox.errors import QuotaExceeded
from pytest_tempinbox.quotas import Quotas
from pytest_tempinbox.server.inbox_server import InboxServer

from ..helpers import make_message, send
from .quotas_support import generate_at_once, post_generate, quota_tenants_file
from .tenants_support import TOKEN_A, TOKEN_B, bearer


@pytest.fixture(params=["memory", "redis"])
def store(request: pytest.FixtureRequest) -> str:
    """The store a test's servers keep their inboxes in: memory, then a real redis-server."""
    if request.param == "redis":
        url: str = request.getfixturevalue("redis_url")
        return url
    return "memory"


@pytest.fixture
def quota_server(store: str, tmp_path: Path) -> Iterator[InboxServer]:
    """A server whose team-a may hold 3 inboxes at once, and generate 5 per 1 s window."""
    tenants = quota_tenants_file(tmp_path, {"inboxes": 3, "inboxes_per_hour": 5})
    with InboxServer(tenants=tenants, store=store, quotas=Quotas(hour=1.0)) as server:
        yield server


def test_generating_past_the_live_inboxes_quota_answers_429_quota_exceeded(
    quota_server: InboxServer,
) -> None:
    for _ in range(3):
        assert post_generate(quota_server.api_url, TOKEN_A).status_code == 201
    response = post_generate(quota_server.api_url, TOKEN_A)
    assert response.status_code == 429, response.text
    assert response.headers["content-type"] == "application/problem+json"
    problem = response.json()
    assert (problem["code"], problem["quota"], problem["limit"]) == ("quota_exceeded", "inboxes", 3)
    assert problem["retry_after"] is None
    assert "Retry-After" not in response.headers
    assert "inboxes quota (3)" in problem["detail"]


def test_a_deleted_inbox_frees_its_place(quota_server: InboxServer) -> None:
    api = quota_server.api_url
    addresses = [post_generate(api, TOKEN_A).json()["email"] for _ in range(3)]
    deleted = requests.delete(f"{api}/delete/{addresses[0]}", headers=bearer(TOKEN_A), timeout=10)
    assert deleted.status_code == 200
    assert post_generate(api, TOKEN_A).status_code == 201


def test_one_tenants_quota_leaves_another_tenant_alone(quota_server: InboxServer) -> None:
    for _ in range(3):
        post_generate(quota_server.api_url, TOKEN_A)
    assert post_generate(quota_server.api_url, TOKEN_A).status_code == 429
    # team-b has the server's quotas: 100 inboxes by default.
    assert all(post_generate(quota_server.api_url, TOKEN_B).status_code == 201 for _ in range(5))


def test_the_hourly_window_answers_retry_after_and_frees_when_it_ends(
    quota_server: InboxServer,
) -> None:
    api = quota_server.api_url
    for _ in range(5):  # 3 live at most: delete as we go, so that only the window counts
        made = post_generate(api, TOKEN_A)
        assert made.status_code == 201, made.text
        requests.delete(f"{api}/delete/{made.json()['email']}", headers=bearer(TOKEN_A), timeout=10)
    over = post_generate(api, TOKEN_A)
    assert over.status_code == 429
    assert over.json()["quota"] == "inboxes_per_hour"
    assert over.headers["Retry-After"] == "1"  # the window is 1 s here
    time.sleep(1.1)
    assert post_generate(api, TOKEN_A).status_code == 201


def test_fifty_concurrent_generates_with_a_quota_of_ten_make_exactly_ten(
    store: str, tmp_path: Path
) -> None:
    tenants = quota_tenants_file(tmp_path, {"inboxes": 10})
    with InboxServer(tenants=tenants, store=store) as server:
        statuses = generate_at_once([server.api_url], TOKEN_A, 50)
        listed = requests.get(server.api_url + "/inboxes", headers=bearer(TOKEN_A), timeout=10)
    assert sorted(set(statuses)) == [201, 429]
    assert statuses.count(201) == 10
    assert len(listed.json()["inboxes"]) == 10


def test_two_servers_on_one_redis_hold_one_quota_under_concurrent_generates(
    redis_url: str, tmp_path: Path
) -> None:
    tenants = quota_tenants_file(tmp_path, {"inboxes": 100, "inboxes_per_hour": 10})
    with (
        InboxServer(tenants=tenants, store=redis_url) as first,
        InboxServer(tenants=tenants, store=redis_url) as second,
    ):
        statuses = generate_at_once([first.api_url, second.api_url], TOKEN_A, 50)
        listed = requests.get(second.api_url + "/inboxes", headers=bearer(TOKEN_A), timeout=10)
    assert statuses.count(201) == 10
    assert statuses.count(429) == 40
    assert len(listed.json()["inboxes"]) == 10


def test_without_tenants_a_quota_flag_holds_for_everyone(store: str) -> None:
    with InboxServer(store=store, quotas=Quotas(inboxes=2)) as server:
        statuses = [post_generate(server.api_url).status_code for _ in range(3)]
        # The in-process transport meets the same quota.
        answer = server.local_transport().request("POST", "/generate", timeout=5)
    assert statuses == [201, 201, 429]
    assert answer.status == 429
    assert json.loads(answer.content)["code"] == "quota_exceeded"


def test_without_tenants_and_flags_there_is_no_quota(store: str) -> None:
    with InboxServer(store=store) as server:
        assert server.store.quotas is None
        assert generate_at_once([server.api_url], None, 20).count(201) == 20


def test_checks_past_their_quota_per_minute_answer_429_with_retry_after(
    store: str, tmp_path: Path
) -> None:
    tenants = quota_tenants_file(tmp_path, {"checks_per_minute": 2})
    with InboxServer(tenants=tenants, store=store) as server:
        api = server.api_url
        address = post_generate(api, TOKEN_A).json()["email"]
        send(server, make_message(address, body="no links here"))
        wait = f"{api}/messages/{address}?timeout=5"
        messages = requests.get(wait, headers=bearer(TOKEN_A), timeout=10)
        id = messages.json()[0]["id"]
        url = f"{api}/messages/{address}/{id}/link-check"
        statuses = [requests.get(url, headers=bearer(TOKEN_A), timeout=10) for _ in range(3)]
    assert [response.status_code for response in statuses] == [200, 200, 429]
    assert statuses[2].json()["quota"] == "checks_per_minute"
    assert 1 <= int(statuses[2].headers["Retry-After"]) <= 60


def test_the_client_raises_quota_exceeded_with_the_quota_its_value_and_when_it_frees(
    quota_server: InboxServer,
) -> None:
    client = TempInboxClient(quota_server.api_url, token=TOKEN_A)
    for _ in range(5):  # the window's 5, deleted as they come: only the window counts
        client.generate().delete()
    with pytest.raises(QuotaExceeded) as over:
        client.generate()
    assert (over.value.quota, over.value.limit) == ("inboxes_per_hour", 5)
    assert over.value.retry_after == 1
    assert over.value.status == 429
