"""The messages and bytes quotas at SMTP: 452 4.2.2 at RCPT, 552 5.2.2 at DATA (smtplib)."""

from __future__ import annotations

import smtplib
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from pytest_tempinbox.server.inbox_server import InboxServer

from ..helpers import CLIENT_NAME
from .quotas_support import post_generate, quota_tenants_file
from .tenants_support import TOKEN_A, TOKEN_B, bearer

MAIL = b"Subject: hi\r\n\r\nHello.\r\n"


@pytest.fixture(params=["memory", "redis"])
def smtp_quota_server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[InboxServer]:
    """team-a may store 2 messages and 2000 bytes; AUTH is offered (and hands over to aiosmtpd)."""
    store = "memory" if request.param == "memory" else request.getfixturevalue("redis_url")
    tenants = quota_tenants_file(tmp_path, {"messages": 2, "bytes": 2000})
    with InboxServer(tenants=tenants, store=store, smtp_auth="any") as server:
        yield server


@pytest.fixture(params=["fast lane", "aiosmtpd"])
def login(request: pytest.FixtureRequest) -> bool:
    """Whether the client logs in first, which hands the session over to aiosmtpd."""
    return bool(request.param == "aiosmtpd")


def connect(server: InboxServer, login: bool) -> smtplib.SMTP:
    """An SMTP client of ``server``, logged in when ``login``."""
    client = smtplib.SMTP(server.smtp_host, server.smtp_port, local_hostname=CLIENT_NAME)
    if login:
        client.login("user", "password")
    return client


def messages_of(server: InboxServer, address: str) -> int:
    """How many messages team-a's inbox at ``address`` holds."""
    url = f"{server.api_url}/messages/{address}"
    return len(requests.get(url, headers=bearer(TOKEN_A), timeout=10).json())


def test_a_tenant_at_its_messages_quota_gets_452_4_2_2_at_rcpt(
    smtp_quota_server: InboxServer, login: bool
) -> None:
    address = post_generate(smtp_quota_server.api_url, TOKEN_A).json()["email"]
    with connect(smtp_quota_server, login) as client:
        client.sendmail("app@example.test", [address], MAIL)
        client.sendmail("app@example.test", [address], MAIL)
        with pytest.raises(smtplib.SMTPRecipientsRefused) as refused:
            client.sendmail("app@example.test", [address], MAIL)
    code, reply = refused.value.recipients[address]
    assert code == 452
    assert reply.startswith(b"4.2.2 Mailbox full")
    assert b"quota of 2 messages" in reply
    assert messages_of(smtp_quota_server, address) == 2


def test_a_message_past_the_bytes_quota_gets_552_5_2_2_at_data_and_is_not_stored(
    smtp_quota_server: InboxServer, login: bool
) -> None:
    address = post_generate(smtp_quota_server.api_url, TOKEN_A).json()["email"]
    big = b"Subject: big\r\n\r\n" + (b"x" * 70 + b"\r\n") * 40
    with connect(smtp_quota_server, login) as client:
        with pytest.raises(smtplib.SMTPDataError) as refused:
            client.sendmail("app@example.test", [address], big)
        client.sendmail("app@example.test", [address], MAIL)  # the session goes on
    assert refused.value.smtp_code == 552
    assert "5.2.2 Mailbox full" in str(refused.value.smtp_error)
    assert messages_of(smtp_quota_server, address) == 1


def test_the_messages_quota_counts_across_a_tenants_inboxes(
    smtp_quota_server: InboxServer,
) -> None:
    first, second = (
        post_generate(smtp_quota_server.api_url, TOKEN_A).json()["email"] for _ in "ab"
    )
    with connect(smtp_quota_server, False) as client:
        client.sendmail("app@example.test", [first], MAIL)
        client.sendmail("app@example.test", [second], MAIL)
        with pytest.raises(smtplib.SMTPRecipientsRefused) as refused:
            client.sendmail("app@example.test", [second], MAIL)
    assert refused.value.recipients[second][0] == 452


def test_deleting_an_inbox_frees_its_messages_from_the_tenants_quota(
    smtp_quota_server: InboxServer,
) -> None:
    api = smtp_quota_server.api_url
    full = post_generate(api, TOKEN_A).json()["email"]
    with connect(smtp_quota_server, False) as client:
        for _ in range(2):
            client.sendmail("app@example.test", [full], MAIL)
        requests.delete(f"{api}/delete/{full}", headers=bearer(TOKEN_A), timeout=10)
        fresh = post_generate(api, TOKEN_A).json()["email"]
        for _ in range(2):
            client.sendmail("app@example.test", [fresh], MAIL)
    assert messages_of(smtp_quota_server, fresh) == 2


def test_another_tenants_inbox_still_takes_mail(smtp_quota_server: InboxServer) -> None:
    full = post_generate(smtp_quota_server.api_url, TOKEN_A).json()["email"]
    other = post_generate(smtp_quota_server.api_url, TOKEN_B).json()["email"]
    with connect(smtp_quota_server, False) as client:
        for _ in range(2):
            client.sendmail("app@example.test", [full], MAIL)
        refused = client.sendmail("app@example.test", [full, other], MAIL)
    assert list(refused) == [full]
    url = f"{smtp_quota_server.api_url}/messages/{other}"
    assert len(requests.get(url, headers=bearer(TOKEN_B), timeout=10).json()) == 1


def test_a_provider_send_over_the_messages_quota_gets_429_in_the_providers_shape(
    tmp_path: Path,
) -> None:
    tenants = quota_tenants_file(tmp_path, {"messages": 1})
    with InboxServer(tenants=tenants) as server:
        address = post_generate(server.api_url, TOKEN_A).json()["email"]
        url = server.provider_url("postmark") + "/email"
        headers = {**bearer(TOKEN_A), "X-Postmark-Server-Token": "test"}
        body = {"From": "app@example.com", "To": address, "Subject": "hi", "TextBody": "Hello"}
        sent = [requests.post(url, json=body, headers=headers, timeout=10) for _ in range(2)]
        kept = messages_of(server, address)
    assert [response.status_code for response in sent] == [200, 429]
    assert "Message" in sent[1].json()  # Postmark's own error document
    assert "quota of 1 messages" in sent[1].json()["Message"]
    assert kept == 1
