"""A chosen address: ``POST /api/generate`` with ``{"address": ...}``.

For applications whose test data seeds users with fixed addresses: the inbox is
made at exactly that address, once at a time, on one of the server's domains.
"""

from __future__ import annotations

import asyncio
import secrets
import time
import uuid
from typing import Any

import pytest
import requests

from pytest_tempinbox.client.http import TempInboxClient
from pytest_tempinbox.errors import AddressTaken, InvalidAddress, InvalidRequest
from pytest_tempinbox.server.inbox_server import InboxServer
from pytest_tempinbox.server.store.memory.store import Store

from ..helpers import make_message, send


def fresh(local: str = "seed", domain: str = "tempinbox.test") -> str:
    """An address no test has chosen yet: ``local`` with a unique tag."""
    return f"{local}.{uuid.uuid4().hex[:12]}@{domain}"


def post(http: requests.Session, api: str, body: Any) -> requests.Response:
    """``POST /api/generate`` with ``body`` as JSON."""
    return http.post(f"{api}/generate", json=body)


def assert_problem(response: requests.Response, status: int, code: str) -> str:
    """Check a problem answer; return its detail."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    problem = response.json()
    assert problem["code"] == code
    detail: str = problem["detail"]
    return detail


def test_a_chosen_address_is_created_as_it_is(api: str, http: requests.Session) -> None:
    address = fresh()

    response = post(http, api, {"address": address})

    assert response.status_code == 201
    created = response.json()
    assert created["email"] == address
    assert created["messages_url"] == f"{api}/messages/{address}"
    assert response.headers["location"] == f"/api/messages/{address}"
    assert http.get(created["messages_url"]).json() == []


def test_a_chosen_address_is_lowercased(api: str, http: requests.Session) -> None:
    address = fresh("Alice.Smith", "TempInbox.TEST")

    response = post(http, api, {"address": address})

    assert response.status_code == 201
    assert response.json()["email"] == address.lower()


def test_any_of_the_servers_domains_may_be_chosen(api: str, http: requests.Session) -> None:
    address = fresh(domain="other.test")

    assert post(http, api, {"address": address}).json()["email"] == address


def test_a_live_address_cannot_be_chosen_again(api: str, http: requests.Session) -> None:
    address = fresh()
    assert post(http, api, {"address": address}).status_code == 201

    for spelling in (address, address.upper()):
        detail = assert_problem(post(http, api, {"address": spelling}), 409, "address_taken")
        assert address in detail


def test_a_deleted_address_may_be_chosen_again_and_starts_empty(
    server: InboxServer, api: str, http: requests.Session
) -> None:
    address = fresh()
    assert post(http, api, {"address": address}).status_code == 201
    send(server, make_message(address, subject="first life"))
    assert http.delete(f"{api}/delete/{address}").json()["purged"] == 1

    assert post(http, api, {"address": address}).status_code == 201
    assert http.get(f"{api}/messages/{address}").json() == []


def test_an_expired_chosen_address_may_be_chosen_again(api: str, http: requests.Session) -> None:
    address = fresh()
    first = post(http, api, {"address": address, "ttl": 0.05})
    assert first.status_code == 201
    assert first.json()["expires_at"] is not None
    assert_problem(post(http, api, {"address": address}), 409, "address_taken")

    time.sleep(0.1)

    second = post(http, api, {"address": address})
    assert second.status_code == 201
    assert second.json()["expires_at"] is None


@pytest.mark.parametrize(
    "body",
    [
        {"address": "seed@tempinbox.test", "prefix": "seed"},
        {"address": "seed@tempinbox.test", "domain": "tempinbox.test"},
        {"address": "seed@tempinbox.test", "domain": "other.test"},
    ],
)
def test_address_goes_without_prefix_and_domain(
    api: str, http: requests.Session, body: dict[str, str]
) -> None:
    detail = assert_problem(post(http, api, body), 400, "invalid_request")
    assert "prefix or domain" in detail


def test_an_address_at_a_foreign_domain_is_refused(api: str, http: requests.Session) -> None:
    detail = assert_problem(
        post(http, api, {"address": fresh(domain="gmail.com")}), 400, "invalid_request"
    )
    assert "gmail.com" in detail
    assert "tempinbox.test" in detail


@pytest.mark.parametrize(
    "address",
    [
        "",
        "seed",
        "@tempinbox.test",
        "seed@",
        '"quoted local"@tempinbox.test',
        '"q"@tempinbox.test',
        "a..b@tempinbox.test",
        ".a@tempinbox.test",
        "a.@tempinbox.test",
        "a/b@tempinbox.test",
        "a b@tempinbox.test",
        "a(comment)@tempinbox.test",
        "a,b@tempinbox.test",
        "a\\b@tempinbox.test",
        "j\u200brgen@tempinbox.test",
        "ü" * 33 + "@tempinbox.test",
        "x" * 65 + "@tempinbox.test",
        "a@b@tempinbox.test",
        "a@tempinbox.test\n",
    ],
)
def test_a_malformed_address_is_invalid_address(
    api: str, http: requests.Session, address: str
) -> None:
    assert_problem(post(http, api, {"address": address}), 400, "invalid_address")


@pytest.mark.parametrize("value", [None, 1, ["a@tempinbox.test"], {"a": 1}])
def test_address_must_be_a_string(api: str, http: requests.Session, value: object) -> None:
    detail = assert_problem(post(http, api, {"address": value}), 400, "invalid_request")
    assert "address must be a string" in detail


def test_a_64_character_local_part_with_every_allowed_symbol_is_taken(
    server: InboxServer, api: str, http: requests.Session
) -> None:
    local = ("o'brien!#$%&*=?^_`{|}~-." + uuid.uuid4().hex).ljust(64, "z")
    address = f"{local}@tempinbox.test"

    response = post(http, api, {"address": address})

    assert response.status_code == 201, response.text
    assert response.json()["email"] == address
    send(server, make_message(address, subject="odd but valid"))
    messages = http.get(response.json()["messages_url"]).json()
    assert [message["subject"] for message in messages] == ["odd but valid"]


def test_mail_to_a_chosen_address_is_delivered_in_any_case(
    server: InboxServer, client: TempInboxClient
) -> None:
    inbox = client.generate(address=fresh("alice"))
    send(server, make_message(inbox.address, subject="hello"), to=[inbox.address.upper()])

    (message,) = client.messages(inbox.address)
    assert message.subject == "hello"
    assert message.inbox == inbox.address


def test_the_client_chooses_an_address(client: TempInboxClient) -> None:
    address = fresh("bob")

    inbox = client.generate(address=address.upper())

    assert inbox.address == address
    with pytest.raises(AddressTaken, match="live inbox already"):
        client.generate(address=address)
    assert inbox.delete() == 0
    assert client.generate(address=address).address == address


@pytest.mark.parametrize(
    ("call", "error"),
    [
        ({"address": '"x"@tempinbox.test'}, InvalidAddress),
        ({"address": ""}, InvalidAddress),
        ({"address": fresh(domain="example.com")}, InvalidRequest),
        ({"address": fresh(), "prefix": "x"}, InvalidRequest),
    ],
)
def test_the_client_raises_the_servers_refusal(
    client: TempInboxClient, call: dict[str, str], error: type[Exception]
) -> None:
    with pytest.raises(error):
        client.generate(**call)


def test_the_client_chooses_an_address_awaited(client: TempInboxClient) -> None:
    address = fresh("carol")

    async def main() -> str:
        inbox = await client.generate_async(address=address)
        with pytest.raises(AddressTaken):
            await client.generate_async(address=address)
        return inbox.address

    assert asyncio.run(main()) == address


def test_generated_addresses_step_around_a_chosen_one(monkeypatch: pytest.MonkeyPatch) -> None:
    store = Store()
    monkeypatch.setattr(secrets, "randbelow", lambda _: 0)
    # With no randomness, the next generated address would be this one.
    squatted = store.generate(address="aaaaaaaaaaaab@tempinbox.test")

    generated = store.generate()

    assert generated.address != squatted.address
    assert store.get(squatted.address) is squatted


def test_unguessable_addresses_stay_the_default(api: str, http: requests.Session) -> None:
    email: str = post(http, api, {}).json()["email"]

    local = email.split("@")[0]
    assert len(local) >= 13
    assert local.isalnum()


FACTORY_TEST = """
import pytest
from pytest_tempinbox import AddressTaken

def test_seeded_user(tempinbox_factory):
    alice = tempinbox_factory(address="Seed.User@tempinbox.test")
    assert alice.address == "seed.user@tempinbox.test"
    with pytest.raises(AddressTaken):
        tempinbox_factory(address="seed.user@tempinbox.test")

def test_the_same_address_in_the_next_test(tempinbox_factory, tempinbox_server):
    import smtplib
    inbox = tempinbox_factory(address="seed.user@tempinbox.test")
    with smtplib.SMTP(tempinbox_server.smtp_host, tempinbox_server.smtp_port,
                      local_hostname="client.test") as smtp:
        smtp.sendmail("app@example.com", ["seed.user@tempinbox.test"],
                      b"Subject: welcome back\\r\\n\\r\\nhi\\r\\n")
    assert inbox.wait_for_message(subject="welcome", timeout=10).subject == "welcome back"

def test_next_to_generated_ones(tempinbox_factory):
    chosen = tempinbox_factory(address="seed.user@tempinbox.test")
    generated = tempinbox_factory(prefix="seed")
    assert generated.address != chosen.address
"""


def test_the_factory_makes_a_chosen_address_and_deletes_it_at_teardown(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(FACTORY_TEST)

    pytester.runpytest("-p", "no:randomly").assert_outcomes(passed=3)
