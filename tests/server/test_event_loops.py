"""The server on each event loop it offers: asyncio's own and uvloop.

The suite runs its servers on ``auto`` (uvloop where installed); these run the
paths where the loops differ (the fast lane and its hand-over to aiosmtpd,
STARTTLS, implicit TLS, a fault's drop, a long-poll over HTTP) on both, named.
"""

from __future__ import annotations

import smtplib
from collections.abc import Iterator
from email.message import EmailMessage

import pytest
import requests

from pytest_tempinbox.config import ServerConfig
from pytest_tempinbox.models import Fault
from pytest_tempinbox.server.inbox_server import InboxServer

from ..helpers import CLIENT_NAME
from .store_support import LOOPS
from .tls_support import HOSTNAME, TIMEOUT, connect, secure, subjects

pytest.importorskip("trustme")


@pytest.fixture(params=LOOPS)
def loop_kind(request: pytest.FixtureRequest) -> str:
    """The name of the event loop under test."""
    kind: str = request.param
    return kind


@pytest.fixture
def plain(loop_kind: str) -> Iterator[InboxServer]:
    """A plain server on the loop under test."""
    with InboxServer(hostname=HOSTNAME, event_loop=loop_kind) as server:
        yield server


def _message(to: str, subject: str) -> EmailMessage:
    message = EmailMessage()
    message["From"] = "app@example.test"
    message["To"] = to
    message["Subject"] = subject
    message.set_content("Hello.")
    return message


def test_the_server_runs_on_the_loop_asked_for(plain: InboxServer, loop_kind: str) -> None:
    loop = plain._loop
    assert loop is not None
    assert type(loop).__module__.split(".")[0] == loop_kind


@pytest.mark.parametrize("login", [False, True], ids=["fast lane", "handed over at AUTH"])
def test_mail_arrives(plain: InboxServer, login: bool) -> None:
    address = plain.store.generate().address
    with smtplib.SMTP(plain.smtp_host, plain.smtp_port, local_hostname=CLIENT_NAME) as client:
        if login:
            client.login("user", "password")
        for number in range(3):
            client.send_message(_message(address, f"number {number}"))
    assert subjects(plain, address) == ["number 0", "number 1", "number 2"]


@pytest.mark.parametrize("tls", ["starttls", "implicit"])
def test_mail_arrives_over_tls(loop_kind: str, tls: str) -> None:
    with InboxServer(hostname=HOSTNAME, tls=tls, event_loop=loop_kind) as server:
        address = server.store.generate().address
        with connect(server) as client:
            secure(client, server)
            client.send_message(_message(address, "secret"))
        assert subjects(server, address) == ["secret"]


def test_a_dropped_connection_stores_nothing(plain: InboxServer) -> None:
    address = plain.store.generate().address
    plain.store.add_fault(address, Fault(stage="data", disconnect=True))
    with (
        pytest.raises(smtplib.SMTPServerDisconnected),
        smtplib.SMTP(
            plain.smtp_host, plain.smtp_port, local_hostname=CLIENT_NAME, timeout=TIMEOUT
        ) as client,
    ):
        client.send_message(_message(address, "lost"))
    assert subjects(plain, address) == []


def test_a_long_poll_answers_over_http(plain: InboxServer) -> None:
    address = plain.store.generate().address
    with smtplib.SMTP(plain.smtp_host, plain.smtp_port, local_hostname=CLIENT_NAME) as client:
        client.send_message(_message(address, "polled"))
    response = requests.get(
        f"{plain.api_url}/messages/{address}", params={"wait": "5"}, timeout=TIMEOUT
    )
    assert [message["subject"] for message in response.json()] == ["polled"]


def test_an_unknown_loop_is_refused() -> None:
    with pytest.raises(ValueError, match="'trio' is not an event loop"):
        ServerConfig(event_loop="trio")
