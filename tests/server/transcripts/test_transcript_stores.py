"""Transcripts with the Redis store, through the client, over the aiosmtpd side, and refused."""

from __future__ import annotations

import asyncio
import smtplib

import requests

from pytest_tempinbox import TempInboxClient
from pytest_tempinbox.server.inbox_server import InboxServer

MAIL = b"Subject: hi\r\n\r\nHello.\r\n"


def _send(server: InboxServer, address: str, *, login: bool = False) -> None:
    with smtplib.SMTP(server.smtp_host, server.smtp_port, local_hostname="client.test") as client:
        if login:
            client.login("user", "s3cret-password")
        client.sendmail("app@example.test", [address], MAIL)


def test_redis_store_messages_keep_their_transcript(redis_url: str) -> None:
    with InboxServer(store=redis_url) as server, TempInboxClient(server.api_url) as client:
        inbox = client.generate()
        address = inbox.address
        _send(server, address)
        transcript = inbox.wait_for_message().transcript()
    assert transcript.ehlo == "client.test"
    assert transcript.lines[-1].line.startswith("250 2.0.0 OK: queued as")


def test_client_reads_the_transcript_as_a_typed_object() -> None:
    with InboxServer() as server, TempInboxClient(server.api_url) as client:
        inbox = client.generate()
        address = inbox.address
        _send(server, address, login=True)
        message = inbox.wait_for_message()
        transcript = message.transcript()
        awaited = asyncio.run(message.transcript_async())
    assert transcript == awaited
    assert transcript.auth is not None
    assert (transcript.auth.mechanism, transcript.auth.username) == ("PLAIN", "user")
    assert transcript.client_address == "127.0.0.1"
    assert "C: AUTH PLAIN ****" in str(transcript)
    assert "s3cret" not in str(transcript)


def test_a_session_handed_to_aiosmtpd_keeps_the_lane_s_lines() -> None:
    with InboxServer() as server, TempInboxClient(server.api_url) as client:
        inbox = client.generate()
        address = inbox.address
        with smtplib.SMTP(server.smtp_host, server.smtp_port, local_hostname="c.test") as smtp:
            smtp.ehlo()
            smtp.docmd("HELP")  # the fast lane hands HELP to aiosmtpd
            smtp.sendmail("app@example.test", [address], MAIL)
        lines = [line.line for line in inbox.wait_for_message().transcript().lines]
    assert lines[0].startswith("220 ")
    assert "HELP" in lines
    assert lines.count(lines[0]) == 1  # the greeting once, though two protocols served


def test_the_viewer_has_a_transcript_tab_reading_the_route() -> None:
    with InboxServer() as server:
        origin = server.api_url.removesuffix("/api")
        page = requests.get(f"{origin}/", timeout=10).text
        script = requests.get(f"{origin}/viewer/viewer.js", timeout=10).text
    assert 'id="tab-transcript"' in page
    assert 'id="panel-transcript"' in page
    assert "/transcript`" in script
