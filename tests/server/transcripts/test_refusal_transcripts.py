"""Refused recipients keep the SMTP conversation that led to their refusal."""

from __future__ import annotations

import smtplib

import pytest
import requests

from pytest_tempinbox import TempInboxClient
from pytest_tempinbox.server.inbox_server import InboxServer

MAIL = b"Subject: hi\r\n\r\nHello.\r\n"
NOT_LIVE = "nobody-here@tempinbox.test"


def _send_to_nobody(server: InboxServer, *, login: bool = False) -> None:
    with smtplib.SMTP(server.smtp_host, server.smtp_port, local_hostname="client.test") as client:
        if login:
            client.login("user", "s3cret-password")  # aiosmtpd's side serves the session
        with pytest.raises(smtplib.SMTPRecipientsRefused):
            client.sendmail("app@example.test", [NOT_LIVE], MAIL)


def _said(lines: list[str]) -> list[str]:
    return [line.upper() for line in lines]


@pytest.mark.parametrize("login", [False, True], ids=["fast-lane", "aiosmtpd"])
def test_a_refusal_keeps_the_conversation_up_to_its_550(login: bool) -> None:
    with InboxServer() as server, TempInboxClient(server.api_url) as client:
        _send_to_nobody(server, login=login)
        (refusal,) = client.refused()
    transcript = refusal.transcript
    assert transcript is not None
    said = [f"{line.side} {line.line}" for line in transcript.lines]
    assert _said(said[-2:]) == [
        f"CLIENT RCPT TO:<{NOT_LIVE.upper()}>",
        "SERVER 550 5.1.1 RECIPIENT ADDRESS REJECTED: NOT A LIVE GENERATED ADDRESS",
    ]
    assert transcript.ehlo == "client.test"
    assert said[0].startswith("server 220 ")
    assert any(line.line.upper().startswith("MAIL FROM:") for line in transcript.lines)
    assert "s3cret" not in str(transcript)


def test_the_refusals_json_holds_the_transcript_as_the_transcript_route_writes_it() -> None:
    with InboxServer() as server:
        _send_to_nobody(server)
        (refusal,) = requests.get(server.api_url + "/refused", timeout=10).json()
    transcript = refusal["transcript"]
    assert set(transcript) == {"client", "tls", "auth", "started_at", "lines", "lines_cut"}
    assert transcript["lines"][-1]["from"] == "server"
    assert transcript["lines"][-1]["line"].startswith("550 5.1.1")


def test_a_refusal_keeps_only_the_last_20_lines_after_a_count_of_the_others() -> None:
    with InboxServer() as server, TempInboxClient(server.api_url) as client:
        with smtplib.SMTP(server.smtp_host, server.smtp_port) as smtp:
            for _ in range(30):
                smtp.noop()
            with pytest.raises(smtplib.SMTPRecipientsRefused):
                smtp.sendmail("app@example.test", [NOT_LIVE], MAIL)
        (refusal,) = client.refused()
    assert refusal.transcript is not None
    cut = refusal.transcript.lines_cut
    assert cut > 30
    assert len(refusal.transcript.lines) == 1 + 20
    assert refusal.transcript.lines[0].line == f"... {cut} lines cut"
    assert refusal.transcript.lines[-1].line.startswith("550 5.1.1")


def test_a_refusal_keeps_its_transcript_with_the_redis_store(redis_url: str) -> None:
    with InboxServer(store=redis_url) as server, TempInboxClient(server.api_url) as client:
        _send_to_nobody(server)
        (refusal,) = client.refused()
    assert refusal.transcript is not None
    assert refusal.transcript.lines[-1].line.startswith("550 5.1.1")
    assert refusal.transcript.lines[-2].line.upper() == f"RCPT TO:<{NOT_LIVE.upper()}>"


def test_without_transcripts_a_refusal_has_none() -> None:
    with InboxServer(transcripts=False) as server, TempInboxClient(server.api_url) as client:
        _send_to_nobody(server)
        (refusal,) = client.refused()
        (raw,) = requests.get(server.api_url + "/refused", timeout=10).json()
    assert refusal.transcript is None
    assert "transcript" not in raw
