"""The in-process transport answers exactly as HTTP does."""

from __future__ import annotations

import subprocess
import sys

import pytest

from pytest_tempinbox.client import HTTPTransport
from pytest_tempinbox.errors import ServerUnavailable
from pytest_tempinbox.server import InboxServer
from pytest_tempinbox.transport import Answer, Transport

from .helpers import make_message, send

CASES = [
    ("GET", "/info", None, None),
    ("GET", "/openapi.json", None, None),
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
    ("POST", "/generate", None, b'{"prefix": 5}'),
    ("POST", "/generate", None, b"[1"),
    ("POST", "/generate", None, b'{"prefix": "' + b"a" * 70_000 + b'"}'),
    ("PUT", "/generate", None, None),
    ("GET", "/nope", None, None),
    ("DELETE", "/delete/nobody@tempinbox.test", None, None),
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
    (stored,) = server.store.get(address).messages
    path = path.format(address=address, id=stored.id)
    answers: dict[str, Answer] = {
        name: transport.request(method, path, params=params, body=body, timeout=10)
        for name, transport in transports.items()
    }
    assert answers["local"] == answers["http"]


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
from pytest_tempinbox.client import TempInboxClient
from pytest_tempinbox.server import InboxServer
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
