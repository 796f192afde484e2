"""A message refused at the end of DATA is in the refusals, per recipient, with its transcript."""

from __future__ import annotations

import json
import smtplib
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
import requests

from pytest_tempinbox import TempInboxClient
from pytest_tempinbox.models import Fault, Refusal
from pytest_tempinbox.server.inbox_server import InboxServer
from pytest_tempinbox.server.store.redis.scripts import REFUSALS

from ...helpers import CLIENT_NAME
from ..tenants_support import (
    PASSWORD_A,
    PASSWORD_B,
    TOKEN_A,
    TOKEN_B,
    USER_A,
    USER_B,
    bearer,
    generate,
    smtp_tenants_file,
)

SIZE_LIMIT = 2000
BIG = b"Subject: big\r\n\r\n" + (b"x" * 70 + b"\r\n") * 40  # 2,896 octets
TOO_BIG = "552 Error: Too much mail data"


@pytest.fixture(params=["memory", "redis"])
def store(request: pytest.FixtureRequest) -> str:
    """The memory store, and a Redis store on the session's real redis-server."""
    return "memory" if request.param == "memory" else str(request.getfixturevalue("redis_url"))


@pytest.fixture(params=["fast lane", "aiosmtpd"])
def login(request: pytest.FixtureRequest) -> bool:
    """Whether the client logs in first, which hands the session over to aiosmtpd's side."""
    return bool(request.param == "aiosmtpd")


@pytest.fixture
def server(store: str) -> Iterator[InboxServer]:
    """A server taking messages of at most :data:`SIZE_LIMIT` octets, AUTH open to any login."""
    with InboxServer(store=store, message_size_limit=SIZE_LIMIT, smtp_auth="any") as running:
        yield running


def _data(
    server: InboxServer,
    recipients: list[str],
    message: bytes,
    *,
    login: tuple[str, str] | None = None,
) -> tuple[int, bytes]:
    """Send ``message`` without SIZE= (which MAIL would refuse at once); DATA's reply."""
    with smtplib.SMTP(server.smtp_host, server.smtp_port, local_hostname=CLIENT_NAME) as smtp:
        if login is not None:
            smtp.login(*login)
        smtp.ehlo_or_helo_if_needed()
        smtp.mail("app@example.test")
        for recipient in recipients:
            smtp.rcpt(recipient)
        return smtp.data(message)


def _anyone(login: bool) -> tuple[str, str] | None:
    return ("user", "password") if login else None


def test_a_too_big_message_is_refused_at_data_with_its_transcript(
    server: InboxServer, login: bool
) -> None:
    with TempInboxClient(server.api_url) as client:
        address = client.generate().address
        assert _data(server, [address], BIG, login=_anyone(login)) == (552, TOO_BIG[4:].encode())
        (refusal,) = client.refused()
    assert (refusal.address, refusal.stage, refusal.reply) == (address, "data", TOO_BIG)
    assert (refusal.client_ip, refusal.helo) == ("127.0.0.1", CLIENT_NAME)
    assert refusal.transcript is not None
    said = [f"{line.side} {line.line}" for line in refusal.transcript.lines]
    assert said[-4:] == [
        "client data",  # as smtplib writes it
        "server 354 End data with <CR><LF>.<CR><LF>",
        f"client <{len(BIG)} octets of message data>",
        f"server {TOO_BIG}",
    ]


def test_the_refusals_json_says_the_stage(server: InboxServer) -> None:
    with TempInboxClient(server.api_url) as client:
        address = client.generate().address
        _data(server, [address, f"nobody-{address}"], BIG)
        data, rcpt = requests.get(server.api_url + "/refused", timeout=10).json()
    assert (data["stage"], data["reply"]) == ("data", TOO_BIG)
    assert (rcpt["stage"], rcpt["reply"]) == ("rcpt", "not a live generated address")
    assert data["transcript"]["lines"][-1] == {
        "at_ms": data["transcript"]["lines"][-1]["at_ms"],
        "from": "server",
        "line": TOO_BIG,
    }


def test_a_refusal_at_data_is_recorded_once_for_each_recipient(server: InboxServer) -> None:
    with TempInboxClient(server.api_url) as client:
        one, other = client.generate().address, client.generate().address
        _data(server, [one, other, one], BIG)
        refusals = client.refused()
    assert sorted(refusal.address for refusal in refusals) == sorted([one, other])
    assert {refusal.stage for refusal in refusals} == {"data"}


def test_a_line_too_long_is_refused_at_data_and_recorded(server: InboxServer, login: bool) -> None:
    with TempInboxClient(server.api_url) as client:
        address = client.generate().address
        code, _ = _data(
            server, [address], b"Subject: x\r\n\r\n" + b"y" * 1001, login=_anyone(login)
        )
        (refusal,) = client.refused()
    assert code == 500
    assert (refusal.stage, refusal.reply) == ("data", "500 Line too long (see RFC5321 4.5.3.1.6)")


def test_a_message_whose_inboxes_were_all_deleted_before_its_end_is_recorded(
    server: InboxServer, login: bool
) -> None:
    with (
        TempInboxClient(server.api_url) as client,
        smtplib.SMTP(server.smtp_host, server.smtp_port, local_hostname=CLIENT_NAME) as smtp,
    ):
        inbox = client.generate()
        if login:
            smtp.login("user", "password")
        smtp.ehlo_or_helo_if_needed()
        smtp.mail("app@example.test")
        smtp.rcpt(inbox.address)
        inbox.delete()
        code, _ = smtp.data(b"Subject: late\r\n\r\nHello.\r\n")
        (refusal,) = client.refused()
    assert code == 554
    assert refusal.stage == "data"
    assert refusal.reply == "554 5.1.1 No live recipients left: the inboxes were deleted"


def test_a_fault_the_test_injected_at_data_is_not_a_refusal(server: InboxServer) -> None:
    with TempInboxClient(server.api_url) as client:
        inbox = client.generate()
        client.add_fault(inbox.address, Fault("data", code=554, message="5.7.1 Spam"))
        assert _data(server, [inbox.address], b"Subject: x\r\n\r\nHi.\r\n")[0] == 554
        assert client.refused() == []


def test_a_message_delivered_leaves_no_refusal(server: InboxServer, login: bool) -> None:
    with TempInboxClient(server.api_url) as client:
        address = client.generate().address
        assert (
            _data(server, [address], b"Subject: x\r\n\r\nHi.\r\n", login=_anyone(login))[0] == 250
        )
        assert client.refused() == []


# Tenants: a bytes quota at DATA, and whose refusal it is.

QUOTA = 500
WITHIN_SIZE_OVER_QUOTA = b"Subject: big\r\n\r\n" + (b"x" * 70 + b"\r\n") * 10  # 736 octets


@pytest.fixture
def tenant_server(store: str, tmp_path: Path) -> Iterator[InboxServer]:
    """Two tenants with SMTP credentials, team-a with a bytes quota; messages of 2,000 octets."""
    with InboxServer(
        tenants=smtp_tenants_file(tmp_path, {"bytes": QUOTA}),
        store=store,
        message_size_limit=SIZE_LIMIT,
    ) as running:
        yield running


def _refused(server: InboxServer, token: str) -> list[dict[str, object]]:
    response = requests.get(f"{server.api_url}/refused", headers=bearer(token), timeout=10)
    assert response.status_code == 200, response.text
    found: list[dict[str, object]] = response.json()
    return found


def test_a_message_over_the_bytes_quota_is_refused_at_data_and_recorded(
    tenant_server: InboxServer,
) -> None:
    address = generate(tenant_server.api_url, TOKEN_A)
    code, _ = _data(tenant_server, [address], WITHIN_SIZE_OVER_QUOTA, login=(USER_A, PASSWORD_A))
    (refusal,) = _refused(tenant_server, TOKEN_A)
    assert code == 552
    assert (refusal["address"], refusal["stage"]) == (address, "data")
    assert str(refusal["reply"]).startswith("552 5.2.2 Mailbox full: the inbox's tenant")
    assert str(refusal["transcript"]).count("552 5.2.2") == 1


def test_a_refusal_at_data_is_the_logged_in_tenant_s_alone(tenant_server: InboxServer) -> None:
    address = generate(tenant_server.api_url, TOKEN_B)
    _data(tenant_server, [address], BIG, login=(USER_B, PASSWORD_B))
    (refusal,) = _refused(tenant_server, TOKEN_B)
    assert (refusal["stage"], refusal["reply"]) == ("data", TOO_BIG)
    assert _refused(tenant_server, TOKEN_A) == []


def test_a_refusal_at_data_without_a_login_is_the_inbox_owner_s_alone(
    tenant_server: InboxServer,
) -> None:
    address = generate(tenant_server.api_url, TOKEN_A)
    assert _data(tenant_server, [address], WITHIN_SIZE_OVER_QUOTA)[0] == 552
    (refusal,) = _refused(tenant_server, TOKEN_A)
    assert (refusal["address"], refusal["stage"]) == (address, "data")
    assert _refused(tenant_server, TOKEN_B) == []


def test_a_refusal_at_data_without_a_login_goes_to_each_recipient_s_owner(
    tenant_server: InboxServer,
) -> None:
    mine, theirs = (
        generate(tenant_server.api_url, TOKEN_A),
        generate(tenant_server.api_url, TOKEN_B),
    )
    assert _data(tenant_server, [mine, theirs], BIG)[0] == 552
    assert [refusal["address"] for refusal in _refused(tenant_server, TOKEN_A)] == [mine]
    assert [refusal["address"] for refusal in _refused(tenant_server, TOKEN_B)] == [theirs]


# The Redis log's entries, written by servers before stages.


def _entries(redis_url: str, *entries: list[object]) -> None:
    with redis.Redis.from_url(redis_url) as connection:
        for entry in entries:
            connection.lpush(REFUSALS, json.dumps(entry))


def test_an_entry_of_seven_items_reads_as_a_refusal_at_rcpt(redis_url: str) -> None:
    at = "2099-01-01T12:00:00+00:00"  # not yet too old to list
    transcript = {
        "client": {"address": "127.0.0.1", "ehlo": "old.test"},
        "tls": None,
        "auth": None,
        "started_at": "2099-01-01T12:00:00Z",
        "lines": [{"at_ms": 1.0, "from": "server", "line": "550 5.1.1 no"}],
        "lines_cut": 0,
    }
    with InboxServer(store=redis_url) as server, TempInboxClient(server.api_url) as client:
        _entries(redis_url, ["2099-01-01T12:00:00+00:00", "a@x.test", "no", None, None])
        _entries(redis_url, [at, "b@x.test", "no", "127.0.0.1", "old.test", None, transcript])
        newest, oldest = client.refused()
    assert (newest.address, newest.stage) == ("b@x.test", "rcpt")
    assert newest.transcript is not None
    assert newest.transcript.lines[-1].line == "550 5.1.1 no"
    assert (oldest.address, oldest.stage, oldest.transcript) == ("a@x.test", "rcpt", None)


def test_a_refusal_at_data_without_a_transcript_keeps_its_stage_in_redis(redis_url: str) -> None:
    with (
        InboxServer(store=redis_url, message_size_limit=SIZE_LIMIT, transcripts=False) as server,
        TempInboxClient(server.api_url) as client,
    ):
        address = client.generate().address
        _data(server, [address], BIG)
        (refusal,) = client.refused()
        with redis.Redis.from_url(redis_url) as connection:
            (entry,) = connection.lrange(REFUSALS, 0, -1)
    assert (refusal.stage, refusal.transcript) == ("data", None)
    assert len(json.loads(entry)) == 8


def test_a_refusal_reads_from_the_json_of_a_server_before_stages() -> None:
    old = {"at": "2026-05-04T12:00:01.250Z", "address": "a@x.test", "reply": "no"}
    assert Refusal.from_json(old).stage == "rcpt"
    with pytest.raises(ValueError, match="not a refusal stage: 'mail'"):
        Refusal.from_json({**old, "stage": "mail"})
