"""Internationalised addresses: non-ASCII local parts and IDN domains (RFC 6531, SMTPUTF8).

A chosen or prefixed address beyond ASCII, at an IDN domain of the server's,
receives mail over SMTP with ``SMTPUTF8`` (smtplib and aiosmtplib, over real
sockets), and is read, filtered and deleted over HTTP with percent-encoded
paths; without ``SMTPUTF8``, such a recipient gets RFC 6531's ``553 5.6.7``.
An IDN domain is served in its ASCII form (A-labels), and mail or paths in
either form reach the same inbox. Memory store and a real Redis alike.
"""

from __future__ import annotations

import smtplib
from collections.abc import Iterator
from urllib.parse import quote

import aiosmtplib
import pytest
import requests

from pytest_tempinbox.client.http import TempInboxClient
from pytest_tempinbox.errors import InboxNotFound, InvalidRequest
from pytest_tempinbox.server.inbox_server import InboxServer

from ..helpers import CLIENT_NAME, RawSMTP, make_message

IDN = "bücher.example"
A_LABEL = "xn--bcher-kva.example"


@pytest.fixture(params=["memory", "redis"])
def idn_server(request: pytest.FixtureRequest) -> Iterator[InboxServer]:
    """A server whose second domain is an IDN, with the memory store and with a real Redis."""
    store = "memory" if request.param == "memory" else request.getfixturevalue("redis_url")
    with InboxServer(
        store=store, domains=["tempinbox.test", IDN], hostname="mx.tempinbox.test"
    ) as server:
        yield server


@pytest.fixture
def idn_client(idn_server: InboxServer) -> Iterator[TempInboxClient]:
    """A client of :func:`idn_server`."""
    with TempInboxClient(idn_server.api_url) as client:
        yield client


def send_utf8(server: InboxServer, to: str, subject: str = "grüße") -> None:
    """Send over smtplib, which declares SMTPUTF8 for a non-ASCII address."""
    with smtplib.SMTP(server.smtp_host, server.smtp_port, CLIENT_NAME) as smtp:
        smtp.send_message(make_message(to, subject))


def test_the_server_serves_an_idn_domain_as_its_a_labels(
    idn_server: InboxServer, http: requests.Session
) -> None:
    info = http.get(f"{idn_server.api_url}/info").json()

    assert info["domains"] == ["tempinbox.test", A_LABEL]


def test_an_address_at_the_idn_is_generated_in_ascii_from_either_form(
    idn_client: TempInboxClient,
) -> None:
    by_unicode = idn_client.generate(domain=IDN)
    by_ascii = idn_client.generate(domain=A_LABEL.upper())

    assert by_unicode.address.endswith(f"@{A_LABEL}")
    assert by_ascii.address.endswith(f"@{A_LABEL}")


def test_a_chosen_non_ascii_address_receives_mail_declared_smtputf8(
    idn_server: InboxServer, idn_client: TempInboxClient
) -> None:
    inbox = idn_client.generate(address=f"jürgen@{IDN}")

    send_utf8(idn_server, f"jürgen@{IDN}")

    assert inbox.address == f"jürgen@{A_LABEL}"
    (message,) = inbox.messages()
    assert message.subject == "grüße"
    assert message.inbox == inbox.address
    assert message.envelope.rcpt_to == (f"jürgen@{IDN}",)


def test_mail_to_either_form_of_the_domain_reaches_one_inbox(
    idn_server: InboxServer, idn_client: TempInboxClient
) -> None:
    inbox = idn_client.generate(address=f"zoë@{IDN}")

    send_utf8(idn_server, f"zoë@{IDN}", "unicode")
    send_utf8(idn_server, f"ZOË@{A_LABEL}".replace("ZOË", "zoë"), "a-label")

    assert [message.subject for message in inbox.messages()] == ["unicode", "a-label"]


def test_a_prefixed_non_ascii_address_is_generated_and_receives_mail(
    idn_server: InboxServer, idn_client: TempInboxClient
) -> None:
    inbox = idn_client.generate(prefix="bücher", domain=IDN)

    with smtplib.SMTP(idn_server.smtp_host, idn_server.smtp_port, CLIENT_NAME) as smtp:
        refused = smtp.sendmail(
            "app@example.test",
            [inbox.address],
            b"Subject: plain\r\n\r\nbody\r\n",
            mail_options=["SMTPUTF8"],
        )

    assert refused == {}
    assert inbox.address.startswith("bücher-")
    (message,) = inbox.messages()
    assert message.subject == "plain"


async def _send_async(server: InboxServer, to: str) -> None:
    async with aiosmtplib.SMTP(
        hostname=server.smtp_host, port=server.smtp_port, local_hostname=CLIENT_NAME
    ) as smtp:
        await smtp.send_message(make_message(to, "async"))


@pytest.mark.asyncio
async def test_aiosmtplib_delivers_to_a_non_ascii_address(
    idn_server: InboxServer, idn_client: TempInboxClient
) -> None:
    inbox = await idn_client.generate_async(address=f"ñandú@{IDN}")

    await _send_async(idn_server, f"ñandú@{IDN}")

    (message,) = await inbox.messages_async()
    assert message.subject == "async"


def test_a_non_ascii_recipient_without_smtputf8_gets_rfc_6531s_answer(
    idn_server: InboxServer, idn_client: TempInboxClient
) -> None:
    inbox = idn_client.generate(address=f"jürgen@{IDN}")
    smtp = RawSMTP(idn_server.smtp_host, idn_server.smtp_port)
    try:
        assert smtp.command(f"EHLO {CLIENT_NAME}")[0] == 250
        assert smtp.command("MAIL FROM:<app@example.test>")[0] == 250
        answer = smtp.command(f"RCPT TO:<jürgen@{IDN}>".encode())
        after = smtp.command("NOOP")
    finally:
        smtp.close()

    assert answer == (553, "5.6.7 Must declare SMTPUTF8 to send unicode address")
    assert after[0] == 250  # the connection goes on
    assert inbox.messages() == []


def test_a_non_ascii_sender_without_smtputf8_gets_rfc_6531s_answer(
    idn_server: InboxServer,
) -> None:
    smtp = RawSMTP(idn_server.smtp_host, idn_server.smtp_port)
    try:
        assert smtp.command(f"EHLO {CLIENT_NAME}")[0] == 250
        answer = smtp.command("MAIL FROM:<jürgen@example.test>".encode())
        declared = smtp.command("MAIL FROM:<jürgen@example.test> SMTPUTF8".encode())
    finally:
        smtp.close()

    assert answer == (553, "5.6.7 Must declare SMTPUTF8 to send unicode address")
    assert declared[0] == 250


def test_a_non_ascii_inbox_is_read_filtered_and_deleted_over_http(
    idn_server: InboxServer, idn_client: TempInboxClient, http: requests.Session
) -> None:
    created = http.post(f"{idn_server.api_url}/generate", json={"address": f"jürgen@{IDN}"})
    send_utf8(idn_server, f"jürgen+news@{A_LABEL}", "news")
    send_utf8(idn_server, f"jürgen@{A_LABEL}", "other")

    path = quote(f"jürgen@{IDN}", safe="@")
    listed = http.get(f"{idn_server.api_url}/messages/{path}", params={"subaddress": "news"})
    deleted = http.delete(f"{idn_server.api_url}/delete/{path}")

    assert created.status_code == 201
    messages_url = created.json()["messages_url"]
    assert messages_url.endswith("/messages/j%C3%BCrgen@" + A_LABEL)
    assert [message["subject"] for message in listed.json()] == ["news"]
    assert listed.json()[0]["subaddress"] == "news"
    assert deleted.status_code == 200
    assert http.get(messages_url).status_code == 404


def test_the_client_reads_and_deletes_a_non_ascii_inbox(
    idn_server: InboxServer, idn_client: TempInboxClient
) -> None:
    inbox = idn_client.generate(address=f"jürgen@{IDN}")
    send_utf8(idn_server, inbox.address, "hallo")

    found = inbox.wait_for_message(subject="hallo", timeout=5)

    assert found.inbox == inbox.address
    assert inbox.delete() == 1
    with pytest.raises(InboxNotFound):
        idn_client.messages(f"jürgen@{IDN}")


def test_a_non_ascii_local_part_is_kept_in_nfc(
    idn_server: InboxServer, idn_client: TempInboxClient
) -> None:
    decomposed = "ju\u0308rgen"  # "ü" as "u" and a combining diaeresis
    inbox = idn_client.generate(address=f"{decomposed}@tempinbox.test")

    send_utf8(idn_server, "jürgen@tempinbox.test", "composed")

    assert inbox.address == "jürgen@tempinbox.test"
    assert [message.subject for message in inbox.messages()] == ["composed"]


def test_the_in_process_client_reads_a_non_ascii_inbox_by_subaddress(
    idn_server: InboxServer,
) -> None:
    client = TempInboxClient(idn_server.api_url, transport=idn_server.local_transport())
    with client:
        inbox = client.generate(address=f"jürgen@{IDN}")
        send_utf8(idn_server, f"jürgen+ñ@{IDN}", "to ñ")
        send_utf8(idn_server, inbox.address, "plain")

        found = inbox.wait_for_message(subaddress="ñ", timeout=5)
        purged = client.delete(f"jürgen@{IDN}")

    assert (found.subject, found.subaddress) == ("to ñ", "ñ")
    assert purged == 2


@pytest.mark.parametrize("prefix", ["BÜCHER", "bü\u200bcher", "bü cher", "ü" * 33])
def test_a_prefix_beyond_ascii_is_lowercase_letters_and_digits(
    idn_client: TempInboxClient, prefix: str
) -> None:
    with pytest.raises(InvalidRequest, match="lowercase letters or digits beyond ASCII"):
        idn_client.generate(prefix=prefix)


@pytest.mark.parametrize("command", ["MAIL FROM", "RCPT TO"])
def test_an_address_of_bytes_that_are_not_utf8_is_refused_as_malformed(
    idn_server: InboxServer, idn_client: TempInboxClient, command: str
) -> None:
    inbox = idn_client.generate()
    name, _, domain = inbox.address.partition("@")
    bad = f"<{name}+".encode() + b"\xff\xfe@" + domain.encode() + b">"
    smtp = RawSMTP(idn_server.smtp_host, idn_server.smtp_port)
    try:
        assert smtp.command(f"EHLO {CLIENT_NAME}")[0] == 250
        if command == "RCPT TO":
            assert smtp.command("MAIL FROM:<app@example.test> SMTPUTF8")[0] == 250
            answer = smtp.command(b"RCPT TO:" + bad)
        else:
            answer = smtp.command(b"MAIL FROM:" + bad + b" SMTPUTF8")
    finally:
        smtp.close()

    assert answer == (553, "5.1.3 Malformed address: it is not valid UTF-8")
    assert inbox.messages() == []
