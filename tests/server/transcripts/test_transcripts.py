"""Each message keeps the SMTP conversation that delivered it: ``GET .../transcript``."""

from __future__ import annotations

import contextlib
import smtplib
import socket
import ssl
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from pytest_tempinbox.server.inbox_server import InboxServer

MAIL = b"Subject: hi\r\n\r\nHello.\r\n"


@pytest.fixture(scope="module")
def server() -> Iterator[InboxServer]:
    """A server keeping transcripts (the default), STARTTLS offered."""
    with InboxServer(hostname="mx.transcripts.test", tls="starttls") as started:
        yield started


def _transcript(server: InboxServer, address: str, index: int = 0) -> dict[str, Any]:
    message = server.store.messages(address)[index]
    response = requests.get(
        f"{server.api_url}/messages/{address}/{message.id}/transcript", timeout=10
    )
    assert response.status_code == 200, response.text
    document: dict[str, Any] = response.json()
    return document


def _lines(document: dict[str, Any]) -> list[tuple[str, str]]:
    return [(line["from"], line["line"]) for line in document["lines"]]


def _folded(lines: list[tuple[str, str]]) -> list[tuple[str, str]]:
    # smtplib writes "rcpt TO:" up to Python 3.12 and "rcpt to:" from 3.13.
    return [(side, line.lower()) for side, line in lines]


def test_plain_conversation_is_kept_from_greeting_to_the_end_of_data(server: InboxServer) -> None:
    address = server.store.generate().address
    with smtplib.SMTP(server.smtp_host, server.smtp_port, local_hostname="client.test") as client:
        client.sendmail("app@example.test", [address], MAIL)
    document = _transcript(server, address)
    lines = _lines(document)
    assert lines[0] == ("server", f"220 mx.transcripts.test Python SMTP {_version()}")
    assert ("client", "ehlo client.test") in lines
    assert ("client", f"rcpt to:<{address}>") in _folded(lines)
    assert ("client", f"<{len(MAIL)} octets of message data>") in lines
    assert lines[-1][0] == "server"
    assert lines[-1][1].startswith("250 2.0.0 OK: queued as")
    assert document["client"] == {"address": "127.0.0.1", "ehlo": "client.test"}
    assert document["tls"] is None
    assert document["auth"] is None
    assert [line["at_ms"] for line in document["lines"]] == sorted(
        line["at_ms"] for line in document["lines"]
    )


def test_starttls_and_auth_plain_keep_the_cipher_and_mask_the_secret(server: InboxServer) -> None:
    address = server.store.generate().address
    context = ssl.create_default_context(cafile=server.ca_path)
    with smtplib.SMTP(server.smtp_host, server.smtp_port, local_hostname="client.test") as client:
        client.starttls(context=context)
        client.login("user", "s3cret-password")
        client.sendmail("app@example.test", [address], MAIL)
    document = _transcript(server, address)
    text = str(document)
    assert "s3cret" not in text
    assert "AHVzZXIAczNjcmV0" not in text
    assert ("client", "AUTH PLAIN ****") in _lines(document)
    assert ("client", "STARTTLS") in _lines(document)
    assert document["tls"]["version"].startswith("TLSv1")
    assert document["tls"]["cipher"]
    assert document["auth"] == {"mechanism": "PLAIN", "username": "user"}


def test_auth_login_answers_are_masked(server: InboxServer) -> None:
    address = server.store.generate().address
    with smtplib.SMTP(server.smtp_host, server.smtp_port, local_hostname="client.test") as client:
        client.ehlo()
        client.user, client.password = "user", "s3cret-password"
        client.auth("LOGIN", client.auth_login, initial_response_ok=False)
        client.sendmail("app@example.test", [address], MAIL)
    document = _transcript(server, address)
    assert "s3cret" not in str(document)
    lines = _lines(document)
    assert ("client", "AUTH LOGIN") in lines
    assert lines.count(("client", "****")) == 2
    assert document["auth"]["mechanism"] == "LOGIN"


def test_second_message_on_a_connection_keeps_the_opening_and_its_own_transaction(
    server: InboxServer,
) -> None:
    first, second = server.store.generate().address, server.store.generate().address
    with smtplib.SMTP(server.smtp_host, server.smtp_port, local_hostname="client.test") as client:
        client.sendmail("app@example.test", [first], MAIL)
        client.sendmail("app@example.test", [second], MAIL)
    lines = _lines(_transcript(server, second))
    assert ("client", "ehlo client.test") in lines
    assert ("client", f"rcpt to:<{second}>") in _folded(lines)
    assert ("client", f"rcpt to:<{first}>") not in _folded(lines)


def test_pipelined_commands_are_kept_in_order(server: InboxServer) -> None:
    address = server.store.generate().address
    with socket.create_connection((server.smtp_host, server.smtp_port), timeout=10) as sock:
        reader = sock.makefile("rb")
        reader.readline()
        sock.sendall(
            b"EHLO pipe.test\r\nMAIL FROM:<a@example.test>\r\nRCPT TO:<"
            + address.encode()
            + b">\r\nDATA\r\n"
        )
        while not reader.readline().startswith(b"354"):
            pass
        sock.sendall(MAIL + b".\r\nQUIT\r\n")
        while not reader.readline().startswith(b"221"):
            pass
    clients = [line for side, line in _lines(_transcript(server, address)) if side == "client"]
    assert clients[:4] == [
        "EHLO pipe.test",
        "MAIL FROM:<a@example.test>",
        f"RCPT TO:<{address}>",
        "DATA",
    ]


def test_a_thousand_noops_are_cut_to_the_bound(server: InboxServer) -> None:
    address = server.store.generate().address
    with smtplib.SMTP(server.smtp_host, server.smtp_port, local_hostname="client.test") as client:
        for _ in range(1000):
            client.noop()
        client.sendmail("app@example.test", [address], MAIL)
    document = _transcript(server, address)
    assert document["lines_cut"] > 0
    assert document["lines"][-1]["line"] == f"... {document['lines_cut']} lines cut"
    assert len(document["lines"]) <= 502


def test_a_flood_of_pipelined_noops_in_a_transaction_is_cut_to_the_bound(
    server: InboxServer,
) -> None:
    address = server.store.generate().address
    with contextlib.ExitStack() as stack:
        sock = stack.enter_context(
            socket.create_connection((server.smtp_host, server.smtp_port), 10)
        )
        reader = stack.enter_context(sock.makefile("rb"))
        reader.readline()
        opening = b"EHLO flood.test\r\nMAIL FROM:<a@example.test>\r\nRCPT TO:<%s>\r\n"
        sock.sendall(opening % address.encode() + b"NOOP\r\n" * 5000 + b"DATA\r\n")
        while not reader.readline().startswith(b"354"):
            pass
        sock.sendall(MAIL + b".\r\nQUIT\r\n")
        while not reader.readline().startswith(b"221"):
            pass
    document = _transcript(server, address)
    lines = _lines(document)
    clients = [line for side, line in lines if side == "client"]
    assert clients[:4] == [
        "EHLO flood.test",
        "MAIL FROM:<a@example.test>",
        f"RCPT TO:<{address}>",
        "NOOP",
    ]
    assert document["lines_cut"] > 4000
    assert len(lines) <= 502
    assert lines[-2][1].startswith("250 2.0.0 OK: queued as ")
    assert lines[-1][1] == f"... {document['lines_cut']} lines cut"


def test_a_message_without_transcript_is_a_404_problem() -> None:
    with InboxServer(transcripts=False) as server:
        address = server.store.generate().address
        with smtplib.SMTP(server.smtp_host, server.smtp_port) as client:
            client.sendmail("app@example.test", [address], MAIL)
        message = server.store.messages(address)[0]
        response = requests.get(
            f"{server.api_url}/messages/{address}/{message.id}/transcript", timeout=10
        )
    assert response.status_code == 404
    assert response.json()["code"] == "message_not_found"
    assert "--no-transcripts" in response.json()["detail"]


def test_an_unknown_message_transcript_is_a_404_problem(server: InboxServer) -> None:
    address = server.store.generate().address
    response = requests.get(f"{server.api_url}/messages/{address}/nope/transcript", timeout=10)
    assert response.status_code == 404
    assert response.json()["code"] == "message_not_found"


def _version() -> str:
    import aiosmtpd

    return aiosmtpd.__version__
