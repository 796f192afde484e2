"""With tenants: a tenant's webhook hears its own inboxes only; ``--webhook`` hears them all."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import requests

from pytest_tempinbox.rate_limits import RateLimits
from pytest_tempinbox.server.inbox_server import InboxServer
from pytest_tempinbox.tenants import Tenants, hash_line

from ..tenants_support import TOKEN_A, TOKEN_B, bearer, generate
from .webhooks_support import Receiver, expected_signature, send


def _tenants(path: Path, hook_a: str, hook_b: str) -> str:
    tenants = [
        {"name": "team-a", "tokens": [hash_line(TOKEN_A)], "webhooks": [hook_a],
         "webhook_secret": "secret-of-a"},
        {"name": "team-b", "tokens": [hash_line(TOKEN_B)], "webhooks": [hook_b]},
    ]  # fmt: skip
    path.write_text(json.dumps({"tenants": tenants}))
    return str(path)


@pytest.mark.parametrize("store", ["memory", "redis"])
def test_a_tenant_s_webhook_hears_its_own_inboxes_only(
    request: pytest.FixtureRequest, tmp_path: Path, store: str
) -> None:
    if store == "redis":
        store = request.getfixturevalue("redis_url")
    with (
        Receiver() as hook_a,
        Receiver() as hook_b,
        Receiver() as everyone,
        InboxServer(
            tenants=_tenants(tmp_path / "tenants.json", hook_a.url, hook_b.url),
            webhooks=[everyone.url],
            store=store,
            rate_limits=RateLimits.off(),
        ) as server,
    ):
        address_a = generate(server.api_url, TOKEN_A)
        address_b = generate(server.api_url, TOKEN_B)
        send(server, address_a)
        send(server, address_b)
        everyone.wait_for(2)
        (heard_a,), (heard_b,) = hook_a.wait_for(1), hook_b.wait_for(1)
        heard_a_later = hook_a.quiet_for(0.3)
    assert heard_a.json()["email"] == address_a
    assert heard_b.json()["email"] == address_b
    assert len(heard_a_later) == 1
    assert heard_a.headers["x-tempinbox-signature"] == expected_signature("secret-of-a", heard_a)
    assert "x-tempinbox-signature" not in heard_b.headers


def test_a_tenant_s_deletion_goes_to_its_own_webhook(tmp_path: Path) -> None:
    with (
        Receiver() as hook_a,
        Receiver() as hook_b,
        InboxServer(
            tenants=_tenants(tmp_path / "tenants.json", hook_a.url, hook_b.url),
            rate_limits=RateLimits.off(),
        ) as server,
    ):
        address = generate(server.api_url, TOKEN_B)
        deleted = requests.delete(
            f"{server.api_url}/delete/{address}", headers=bearer(TOKEN_B), timeout=10
        )
        (hit,) = hook_b.wait_for(1)
        heard_by_a = hook_a.quiet_for(0.3)
    assert deleted.status_code == 200
    assert hit.json() == {**hit.json(), "event": "inbox.deleted", "email": address}
    assert heard_by_a == []


@pytest.mark.parametrize(
    ("entry", "says"),
    [
        ({"webhooks": "http://hooks.test/"}, "webhooks must be a list"),
        ({"webhooks": ["ftp://hooks.test/"]}, "http:// or https://"),
        ({"webhooks": ["http://hooks.test/"], "webhook_secret": ""}, "webhook_secret must be"),
        ({"webhook_secret": "s"}, "webhooks must be a list"),
    ],
)
def test_a_bad_tenant_webhook_is_an_error_naming_the_tenant(
    entry: dict[str, object], says: str
) -> None:
    text = json.dumps({"tenants": [{"name": "team-a", "tokens": [hash_line(TOKEN_A)], **entry}]})
    with pytest.raises(ValueError, match="team-a") as raised:
        Tenants.parse(text)
    assert says in str(raised.value)
