"""Servers with quotas, for the tests of quotas (``docs/tenants.md``, "Quotas")."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import requests

from pytest_tempinbox.tenants import hash_line

from .tenants_support import TOKEN_A, TOKEN_B, bearer


def quota_tenants_file(directory: Path, quotas_a: dict[str, Any]) -> str:
    """A tenants file of ``team-a`` (with ``quotas_a``) and ``team-b`` (the server's); its path."""
    path = directory / "tenants.json"
    tenants = [
        {"name": "team-a", "tokens": [hash_line(TOKEN_A)], "quotas": quotas_a},
        {"name": "team-b", "tokens": [hash_line(TOKEN_B)]},
    ]
    path.write_text(json.dumps({"tenants": tenants}))
    return str(path)


def post_generate(api: str, token: str | None = None) -> requests.Response:
    """``POST /api/generate``, with ``token``'s header if given."""
    headers = bearer(token) if token else {}
    return requests.post(api + "/generate", headers=headers, timeout=10)


def generate_at_once(apis: list[str], token: str | None, calls: int) -> list[int]:
    """``calls`` generate requests at once, spread over ``apis``; their statuses."""
    with ThreadPoolExecutor(max_workers=calls) as pool:
        futures = [pool.submit(post_generate, apis[n % len(apis)], token) for n in range(calls)]
        return [future.result().status_code for future in futures]
