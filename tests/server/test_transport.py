"""The in-process transport answers exactly as HTTP does."""

from __future__ import annotations

import asyncio
import smtplib
import subprocess
import sys
import threading
import time

import pytest

from pytest_tempinbox.client.http import HTTPTransport, TempInboxClient
from pytest_tempinbox.errors import ServerUnavailable
from pytest_tempinbox.server.inbox_server import InboxServer
from pytest_tempinbox.transport import Answer, Transport

from ..helpers import CLIENT_NAME, make_message, record, send

CASES = [
    ("GET", "/info", None, None),
    ("GET", "/openapi.json", None, None),
    ("GET", "/ca.pem", None, None),
    ("GET", "/messages/nobody@tempinbox.test", None, None),
    ("GET", "/messages/not-an-address", None, None),
    ("GET", "/messages/{address}", {"wait": "soon"}, None),
    ("GET", "/messages/{address}", {"after": "nope"}, None),
    ("GET", "/messages/{address}", {"wait": "0.01"}, None),
    ("GET", "/messages/{address}/{id}", None, None),
    ("GET", "/messages/{address}/{id}/raw", None, None),
    ("GET", "/messages/{address}/{id}/attachments/0", None, None),
    ("GET", "/messages/{address}/{id}/attachments/1", None, None),
    ("GET", "/messages/{address}/none", None, None),
    ("GET", "/messages/a%2Fb@tempinbox.test", None, None),
    ("GET", "/messages/{address}/", None, None),
    ("GET", "/messages/{ADDRESS}", None, None),
    ("GET", "/messages/{address}", {"wait": "5"}, None),
    ("GET", "/messages/{address}", {"wait": "-1"}, None),
    ("GET", "/messages/{address}", {"wait": "nan"}, None),
    ("GET", "/messages/{address}", {"after": "{id}"}, None),
    ("GET", "/messages/{address}", {"after": "{id}", "wait": "0.05"}, None),
    ("GET", "/messages/{address}", {"after": ""}, None),
    ("GET", "/messages/" + "a" * 20_000 + "@tempinbox.test", None, None),
    ("POST", "/generate", None, b'{"ttl": 0}'),
    ("POST", "/generate", None, b'{"domain": "elsewhere.test"}'),
    ("POST", "/generate", None, b'{"prefix": "x", "extra": 1}'),
    ("POST", "/generate", None, b'{"prefix": "UP"}'),
    ("POST", "/generate", None, b"\xff"),
    ("DELETE", "/delete/not-an-address", None, None),
    ("DELETE", "/delete/{address}/more", None, None),
    ("GET", "/delete/{address}", None, None),
    ("POST", "/generate", None, b'{"prefix": 5}'),
    ("POST", "/generate", None, b"[1"),
    ("POST", "/generate", None, b'{"prefix": "' + b"a" * 70_000 + b'"}'),
    ("PUT", "/generate", None, None),
    ("GET", "/nope", None, None),
    ("DELETE", "/delete/nobody@tempinbox.test", None, None),
    ("POST", "/faults/{address}", None, b'{"stage": "rcpt", "code": 451, "times": 2}'),
    ("POST", "/faults/{address}", None, b'{"stage": "data", "delay": 0}'),
    ("POST", "/faults/nobody@tempinbox.test", None, b'{"stage": "data", "disconnect": true}'),
    ("GET", "/faults/{address}", None, None),
    ("DELETE", "/faults/{address}", None, None),
    ("PUT", "/faults/{address}", None, None),
    ("GET", "/events/nobody@tempinbox.test", None, None),
    ("GET", "/events/not-an-address", None, None),
    ("GET", "/events/{address}", {"after": "nope"}, None),
]


@pytest.fixture(scope="module")
def transports(server: InboxServer) -> dict[str, Transport]:
    return {"http": HTTPTransport(server.api_url), "local": server.local_transport()}


@pytest.mark.parametrize(("method", "path", "params", "body"), CASES)
def test_local_answers_equal_http_answers(
    server: InboxServer,
    transports: dict[str, Transport],
    address: str,
    method: str,
    path: str,
    params: dict[str, str] | None,
    body: bytes | None,
) -> None:
    message = make_message(address)
    message.add_attachment(b"data", maintype="application", subtype="octet-stream")
    send(server, message)
    (stored,) = record(server, address).messages
    path = path.format(address=address, ADDRESS=address.upper(), id=stored.id)
    params = {key: value.format(id=stored.id) for key, value in (params or {}).items()}
    answers: dict[str, Answer] = {
        name: transport.request(method, path, params=params, body=body, timeout=10)
        for name, transport in transports.items()
    }
    assert answers["local"] == answers["http"]
    # Awaited, the in-process transport answers alike too.
    local = server.local_transport()
    awaited = asyncio.run(local.request_async(method, path, params=params, body=body, timeout=10))
    assert awaited == answers["http"]


@pytest.mark.parametrize("name", ["http", "local"])
def test_a_long_poll_answers_alike_when_mail_arrives(
    server: InboxServer, transports: dict[str, Transport], address: str, name: str
) -> None:
    timer = threading.Timer(0.1, send, (server, make_message(address, subject="late")))
    timer.start()
    answer = transports[name].request(
        "GET", f"/messages/{address}", params={"wait": "5"}, timeout=10
    )
    timer.join()
    assert answer.status == 200
    assert [message["subject"] for message in answer.json()] == ["late"]
    assert answer.content == b"[" + record(server, address).messages[0].json + b"]"


def test_delete_answers_alike_but_for_the_address(
    server: InboxServer, transports: dict[str, Transport]
) -> None:
    answers = {}
    for name, transport in transports.items():
        address = server.store.generate().address
        send(server, make_message(address))
        answer = transport.request("DELETE", f"/delete/{address}", timeout=10)
        answers[name] = answer.content.replace(address.encode(), b"ADDRESS")
        assert answer.status == 200
    assert answers["local"] == answers["http"] == b'{"email":"ADDRESS","deleted":true,"purged":1}'


def test_generate_answers_alike_but_for_the_address(
    transports: dict[str, Transport],
) -> None:
    http, local = (
        transports[name].request("POST", "/generate", body=b'{"prefix": "x"}', timeout=10)
        for name in ("http", "local")
    )
    assert (
        (http.status, http.content_type)
        == (local.status, local.content_type)
        == (
            201,
            "application/json",
        )
    )
    assert http.json().keys() == local.json().keys()
    assert local.json()["messages_url"].startswith(http.json()["messages_url"].split("/x-")[0])


def test_local_transport_of_a_stopped_server_is_unavailable() -> None:
    with InboxServer() as server:
        transport = server.local_transport()
    with pytest.raises(ServerUnavailable, match="stopped"):
        transport.request("GET", "/info", timeout=5)


def test_a_stopped_server_has_no_local_transport() -> None:
    server = InboxServer()
    with pytest.raises(RuntimeError, match="not running"):
        server.local_transport()


def test_a_server_used_only_in_process_never_starts_uvicorn() -> None:
    code = """
import sys
from pytest_tempinbox.client.http import TempInboxClient
from pytest_tempinbox.server.inbox_server import InboxServer
with InboxServer() as server:
    client = TempInboxClient(server.api_url, transport=server.local_transport())
    client.generate().delete()
print("uvicorn" in sys.modules)
"""
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    # Nor, then, its graceful shutdown, which pauses 0.1 s on every stop.
    assert result.stdout.strip() == "False"


def test_in_process_calls_are_safe_while_the_loop_delivers(server: InboxServer) -> None:
    """The in-process transport reads and changes the store from the test's thread."""
    client = TempInboxClient(server.api_url, transport=server.local_transport())
    inboxes = [client.generate() for _ in range(4)]
    rounds = 60

    def deliver() -> None:
        with smtplib.SMTP(server.smtp_host, server.smtp_port, local_hostname=CLIENT_NAME) as smtp:
            for number in range(rounds):
                message = make_message(inboxes[0].address, subject=f"m{number}")
                smtp.send_message(message, to_addrs=[inbox.address for inbox in inboxes])

    sender = threading.Thread(target=deliver)
    sender.start()
    seen = 0
    while sender.is_alive() or seen < rounds:
        # Reads see a growing prefix of the arrivals, in order, while mail comes in...
        subjects = [message.subject for message in inboxes[0].messages()]
        assert subjects == [f"m{number}" for number in range(len(subjects))]
        seen = len(subjects)
        # ...and inboxes come and go beside it.
        client.generate().delete()
        time.sleep(0.0005)  # a spinning reader would starve the loop of the GIL
    sender.join()
    for inbox in inboxes:
        assert len(inbox.wait_for_messages(rounds)) == rounds
        assert inbox.delete() == rounds
