"""The API with tenants, over real sockets: tokens, and each tenant's inboxes its own."""

from __future__ import annotations

import shutil
import subprocess

import pytest
import requests

from pytest_tempinbox import TempInboxClient
from pytest_tempinbox.errors import InboxNotFound, TempInboxError
from pytest_tempinbox.server.inbox_server import InboxServer

from ..helpers import make_message, send
from .api_support import assert_problem
from .tenants_support import TOKEN_A, TOKEN_B, bearer, generate, tenant_server

__all__ = ["tenant_server"]  # the fixture, imported for these tests


def test_a_request_without_a_token_answers_401_with_a_bearer_challenge(
    tenant_server: InboxServer,
) -> None:
    response = requests.post(tenant_server.api_url + "/generate", timeout=10)
    assert_problem(response, 401, "unauthorized")
    assert response.headers["www-authenticate"].startswith("Bearer")


@pytest.mark.parametrize(
    "authorization",
    ["Bearer tit_guessed", "Bearer", "Basic dGVhbS1hOnNlY3JldA==", f"bearer {TOKEN_A}x", ""],
)
def test_a_wrong_token_answers_401_and_is_never_echoed(
    tenant_server: InboxServer, authorization: str
) -> None:
    response = requests.get(
        tenant_server.api_url + "/info", headers={"Authorization": authorization}, timeout=10
    )
    assert_problem(response, 401, "unauthorized")
    assert "tit_" not in response.text


def test_the_probes_and_the_api_description_answer_without_a_token(
    tenant_server: InboxServer,
) -> None:
    for path in ("/health", "/ready", "/openapi.json"):
        assert requests.get(tenant_server.api_url + path, timeout=10).status_code == 200


def test_a_tenant_reads_its_own_inbox_and_its_mail(tenant_server: InboxServer) -> None:
    api = tenant_server.api_url
    address = generate(api, TOKEN_A)
    send(tenant_server, make_message(address, subject="Mine"))
    response = requests.get(
        f"{api}/messages/{address}", params={"wait": "5"}, headers=bearer(TOKEN_A), timeout=10
    )
    assert response.status_code == 200
    assert [message["subject"] for message in response.json()] == ["Mine"]


def test_inboxes_lists_the_callers_live_inboxes_with_their_counts(
    tenant_server: InboxServer,
) -> None:
    api = tenant_server.api_url
    first, second = generate(api, TOKEN_A), generate(api, TOKEN_A)
    theirs = generate(api, TOKEN_B)
    send(tenant_server, make_message(first))
    requests.get(f"{api}/messages/{first}?wait=5", headers=bearer(TOKEN_A), timeout=10)
    requests.delete(f"{api}/delete/{second}", headers=bearer(TOKEN_A), timeout=10)
    listed = requests.get(api + "/inboxes", headers=bearer(TOKEN_A), timeout=10).json()
    assert [(inbox["email"], inbox["messages"]) for inbox in listed["inboxes"]] == [(first, 1)]
    listed = requests.get(api + "/inboxes", headers=bearer(TOKEN_B), timeout=10).json()
    assert [inbox["email"] for inbox in listed["inboxes"]] == [theirs]


def test_inboxes_answers_404_on_a_server_without_tenants(api: str) -> None:
    assert_problem(requests.get(api + "/inboxes", timeout=10), 404, "not_found")


def test_the_client_sends_its_token_and_reads_only_its_tenants_inboxes(
    tenant_server: InboxServer,
) -> None:
    with (
        TempInboxClient(tenant_server.api_url, token=TOKEN_A) as mine,
        TempInboxClient(tenant_server.api_url, token=TOKEN_B) as theirs,
    ):
        inbox = mine.generate()
        send(tenant_server, make_message(inbox.address, subject="Code 1234"))
        assert inbox.wait_for_message(timeout=5).subject == "Code 1234"
        with pytest.raises(InboxNotFound):
            theirs.messages(inbox.address)


def test_a_client_without_a_token_is_told_the_server_wants_one(
    tenant_server: InboxServer,
) -> None:
    with TempInboxClient(tenant_server.api_url) as client, pytest.raises(TempInboxError) as info:
        client.generate()
    assert "Bearer" in str(info.value)


def test_a_client_is_given_a_token_or_a_transport_not_both(tenant_server: InboxServer) -> None:
    with pytest.raises(ValueError, match="token"):
        TempInboxClient(
            tenant_server.api_url, token=TOKEN_A, transport=tenant_server.local_transport()
        )


def test_the_in_process_transport_answers_nothing_but_the_probes_without_a_token(
    tenant_server: InboxServer,
) -> None:
    with TempInboxClient(
        tenant_server.api_url, transport=tenant_server.local_transport()
    ) as client:
        with pytest.raises(TempInboxError, match="Bearer"):
            client.generate()
        victim = generate(tenant_server.api_url, TOKEN_A)
        with pytest.raises(TempInboxError, match="Bearer"):
            client.messages(victim)


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
def test_curl_with_a_tenants_token_generates_and_without_one_is_refused(
    tenant_server: InboxServer,
) -> None:
    url = tenant_server.api_url + "/generate"
    with_token = subprocess.run(
        [
            "curl",
            "-s",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
            "-X",
            "POST",
            url,
            "-H",
            f"Authorization: Bearer {TOKEN_B}",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    without = subprocess.run(
        ["curl", "-s", "-i", "-X", "POST", url], capture_output=True, text=True, check=True
    )
    assert with_token.stdout == "201"
    assert without.stdout.startswith("HTTP/1.1 401")
    assert "www-authenticate: Bearer" in without.stdout.lower().replace("bearer", "Bearer")
