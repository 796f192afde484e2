"""Two tenants on one server, for the tests of the API with tenants."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from pytest_tempinbox.rate_limits import RateLimits
from pytest_tempinbox.server.inbox_server import InboxServer
from pytest_tempinbox.tenants import hash_line

TOKEN_A = "tit_alpha-token-of-team-a"
TOKEN_B = "tit_bravo-token-of-team-b"


def tenants_file(directory: Path) -> str:
    """A tenants file of ``team-a`` and ``team-b``, one token each; its path."""
    path = directory / "tenants.json"
    tenants = [
        {"name": "team-a", "tokens": [hash_line(TOKEN_A)]},
        {"name": "team-b", "tokens": [hash_line(TOKEN_B)]},
    ]
    path.write_text(json.dumps({"tenants": tenants}))
    return str(path)


USER_A, PASSWORD_A = "team-a-app", "tit_smtp-password-of-team-a"
USER_B, PASSWORD_B = "team-b-app", "tit_smtp-password-of-team-b"


def smtp_tenants_file(directory: Path, quotas_a: dict[str, Any] | None = None) -> str:
    """A tenants file of ``team-a`` and ``team-b``, each with SMTP credentials; its path.

    ``team-a``'s are written as one object, ``team-b``'s as a list of one;
    ``quotas_a``: ``team-a``'s quotas, if any.
    """
    path = directory / "tenants.json"
    tenants: list[dict[str, Any]] = [
        {
            "name": "team-a",
            "tokens": [hash_line(TOKEN_A)],
            "smtp": {"user": USER_A, "password": hash_line(PASSWORD_A)},
        },
        {
            "name": "team-b",
            "tokens": [hash_line(TOKEN_B)],
            "smtp": [{"user": USER_B, "password": hash_line(PASSWORD_B)}],
        },
    ]
    if quotas_a is not None:
        tenants[0]["quotas"] = quotas_a
    path.write_text(json.dumps({"tenants": tenants}))
    return str(path)


def bearer(token: str) -> dict[str, str]:
    """The ``Authorization`` header of ``token``."""
    return {"Authorization": f"Bearer {token}"}


def generate(api: str, token: str) -> str:
    """A new inbox of the tenant of ``token``; its address."""
    response = requests.post(api + "/generate", headers=bearer(token), timeout=10)
    assert response.status_code == 201, response.text
    address: str = response.json()["email"]
    return address


@pytest.fixture(params=["memory", "redis"])
def tenant_server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[InboxServer]:
    """A running server with two tenants, on the memory store and on Redis."""
    store = "memory"
    if request.param == "redis":
        store = request.getfixturevalue("redis_url")
    # Rate limits off: these tests try every route without a token, many 401s from one address
    # (tests/server/test_rate_limits*.py hold the limits).
    with InboxServer(
        tenants=tenants_file(tmp_path), store=store, rate_limits=RateLimits.off()
    ) as server:
        yield server
