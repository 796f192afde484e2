"""The SMTP listener over real sockets: greeting, routing, storage, limits, AUTH, real clients."""

from __future__ import annotations

import asyncio
import logging
import os
import smtplib
import subprocess
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import aiosmtplib
import pytest

from pytest_tempinbox.server.inbox_server import InboxServer

from ..helpers import CLIENT_NAME, RawSMTP, make_message, run_swaks

if TYPE_CHECKING:
    import requests

HOSTNAME = "mx.tempinbox.test"
# Seconds: every socket and subprocess gives up after this instead of hanging the run.
TIMEOUT = 10.0
SMALL_LIMIT = 10_000
SMTP_SOURCE = "/usr/sbin/smtp-source"


@contextmanager
def connect(server: InboxServer) -> Iterator[smtplib.SMTP]:
    """An smtplib client with a socket timeout, EHLO not yet sent."""
    with smtplib.SMTP(
        server.smtp_host, server.smtp_port, local_hostname=CLIENT_NAME, timeout=TIMEOUT
    ) as client:
        yield client


def generate(http: requests.Session, server: InboxServer) -> str:
    """Generate a fresh address on ``server``."""
    response = http.post(server.api_url + "/generate", timeout=TIMEOUT)
    assert response.status_code == 201
    email: str = response.json()["email"]
    return email


def messages(http: requests.Session, server: InboxServer, address: str) -> list[dict[str, Any]]:
    """The inbox's messages as JSON, fetched at once (no wait)."""
    response = http.get(f"{server.api_url}/messages/{address}", timeout=TIMEOUT)
    assert response.status_code == 200, response.text
    found: list[dict[str, Any]] = response.json()
    return found


def open_transaction(client: RawSMTP, address: str, mail_from: str = "a@example.com") -> None:
    """MAIL, RCPT and DATA after EHLO: the server then waits for the content."""
    assert client.command(f"MAIL FROM:<{mail_from}>")[0] == 250
    assert client.command(f"RCPT TO:<{address}>")[0] == 250
    assert client.command("DATA")[0] == 354


def raw_message(address: str, subject: str) -> bytes:
    """A small message in wire form, ending with the terminating dot line."""
    return (
        f"From: a@example.com\r\nTo: {address}\r\nSubject: {subject}\r\n\r\nBody.\r\n.\r\n"
    ).encode()


@pytest.fixture(scope="module")
def small_server() -> Iterator[InboxServer]:
    """A server of its own whose message size limit is small, to test the limit quickly."""
    with InboxServer(hostname=HOSTNAME, message_size_limit=SMALL_LIMIT) as srv:
        yield srv


@pytest.fixture
def ehlo_smtp(raw_smtp: RawSMTP) -> RawSMTP:
    """The raw connection after a successful EHLO."""
    assert raw_smtp.command(f"EHLO {CLIENT_NAME}")[0] == 250
    return raw_smtp


# --- greeting and EHLO ------------------------------------------------------------------------


def test_greeting_names_the_configured_hostname(raw_smtp: RawSMTP) -> None:
    code, text = raw_smtp.greeting
    assert code == 220
    assert text.split()[0] == HOSTNAME


def test_ehlo_answers_with_the_configured_hostname(server: InboxServer) -> None:
    with connect(server) as client:
        code, reply = client.ehlo()
    assert code == 250
    assert reply.decode().splitlines()[0] == HOSTNAME


def test_ehlo_advertises_size_8bitmime_smtputf8_and_auth(server: InboxServer) -> None:
    with connect(server) as client:
        client.ehlo()
        features = client.esmtp_features
    assert features["size"] == "10485760"
    assert "8bitmime" in features
    assert "smtputf8" in features
    assert {"PLAIN", "LOGIN"} <= set(features["auth"].upper().split())


def test_help_lists_every_command_a_client_needs(raw_smtp: RawSMTP) -> None:
    raw_smtp.send(b"HELP\r\n")
    code, text = raw_smtp.reply()
    assert code == 250
    assert {"EHLO", "MAIL", "RCPT", "DATA", "QUIT"} <= set(text.split(":", 1)[-1].split())


# --- RCPT routing ---------------------------------------------------------------------------


def test_live_generated_address_is_accepted_at_rcpt(ehlo_smtp: RawSMTP, address: str) -> None:
    assert ehlo_smtp.command("MAIL FROM:<a@example.com>")[0] == 250
    assert ehlo_smtp.command(f"RCPT TO:<{address}>")[0] == 250


def test_recipient_matching_ignores_case(
    server: InboxServer, http: requests.Session, address: str
) -> None:
    with connect(server) as client:
        refused = client.sendmail(
            "a@example.com", [address.upper()], make_message(address.upper()).as_bytes()
        )
    assert refused == {}
    assert len(messages(http, server, address)) == 1


def test_never_generated_address_at_own_domain_is_refused_at_rcpt(
    ehlo_smtp: RawSMTP, address: str
) -> None:
    # Same domain and shape as a live address, but never handed out.
    never_generated = "x" + address
    assert ehlo_smtp.command("MAIL FROM:<a@example.com>")[0] == 250
    code, text = ehlo_smtp.command(f"RCPT TO:<{never_generated}>")
    assert (code, text.split()[0]) == (550, "5.1.1")


def test_outside_domain_is_refused_at_rcpt_no_relaying(ehlo_smtp: RawSMTP) -> None:
    assert ehlo_smtp.command("MAIL FROM:<a@example.com>")[0] == 250
    code, text = ehlo_smtp.command("RCPT TO:<someone@example.com>")
    assert (code, text.split()[0]) == (550, "5.1.1")


def test_deleted_address_is_refused_at_rcpt(
    ehlo_smtp: RawSMTP, http: requests.Session, api: str, address: str
) -> None:
    assert http.delete(f"{api}/delete/{address}", timeout=TIMEOUT).status_code == 200
    assert ehlo_smtp.command("MAIL FROM:<a@example.com>")[0] == 250
    code, text = ehlo_smtp.command(f"RCPT TO:<{address}>")
    assert (code, text.split()[0]) == (550, "5.1.1")


def test_each_accepted_recipient_gets_its_own_copy(
    server: InboxServer, http: requests.Session
) -> None:
    first, second = generate(http, server), generate(http, server)
    unknown = "nobody-" + first
    with connect(server) as client:
        refused = client.sendmail(
            "sender@example.com", [first, unknown, second], make_message(first).as_bytes()
        )
    assert list(refused) == [unknown]
    assert refused[unknown][0] == 550

    copies = [messages(http, server, first), messages(http, server, second)]
    assert [len(found) for found in copies] == [1, 1]
    (one,), (two,) = copies
    assert one["id"] != two["id"]
    assert (one["inbox"], two["inbox"]) == (first, second)
    for copy in (one, two):
        assert copy["envelope"] == {"mail_from": "sender@example.com", "rcpt_to": [first, second]}
    # The refused address never became an inbox.
    response = http.get(f"{server.api_url}/messages/{unknown}", timeout=TIMEOUT)
    assert response.status_code == 404


def test_null_sender_is_accepted_as_empty_mail_from(
    server: InboxServer, http: requests.Session, address: str
) -> None:
    with connect(server) as client:
        client.sendmail("", [address], make_message(address).as_bytes())
    (found,) = messages(http, server, address)
    assert found["envelope"]["mail_from"] == ""


# --- storage --------------------------------------------------------------------------------


def test_message_is_stored_before_the_data_reply(
    server: InboxServer, http: requests.Session, address: str
) -> None:
    with connect(server) as client:
        client.ehlo()
        for number in range(50):
            client.sendmail(
                "a@example.com", [address], make_message(address, f"n{number}").as_bytes()
            )
            # No wait: the 250 to DATA promises the message is already readable.
            found = messages(http, server, address)
            assert len(found) == number + 1
            assert found[-1]["subject"] == f"n{number}"


def test_raw_is_the_data_exactly_as_received_and_dot_unstuffed(
    ehlo_smtp: RawSMTP, server: InboxServer, http: requests.Session, address: str
) -> None:
    on_the_wire = (
        b"From: a@example.com\r\n"
        b"To: " + address.encode() + b"\r\n"
        b"Subject: raw\r\n"
        b"\r\n"
        b"..x\r\n"
        b"...\r\n"
        b"a.b  \r\n"
        b"\r\n"
        b".\r\n"
    )
    expected = (
        b"From: a@example.com\r\n"
        b"To: " + address.encode() + b"\r\n"
        b"Subject: raw\r\n"
        b"\r\n"
        b".x\r\n"
        b"..\r\n"
        b"a.b  \r\n"
        b"\r\n"
    )
    open_transaction(ehlo_smtp, address)
    ehlo_smtp.send(on_the_wire)
    assert ehlo_smtp.reply()[0] == 250

    (found,) = messages(http, server, address)
    response = http.get(f"{server.api_url}/messages/{address}/{found['id']}/raw", timeout=TIMEOUT)
    assert response.status_code == 200
    assert response.content == expected


# --- size limit -----------------------------------------------------------------------------


def test_message_over_the_size_limit_is_refused_and_the_connection_stays_usable(
    small_server: InboxServer, http: requests.Session
) -> None:
    address = generate(http, small_server)
    client = RawSMTP(small_server.smtp_host, small_server.smtp_port)
    try:
        assert client.command(f"EHLO {CLIENT_NAME}")[0] == 250
        open_transaction(client, address)
        line = b"x" * 78 + b"\r\n"
        client.send(line * (SMALL_LIMIT // len(line) + 10) + b".\r\n")
        assert client.reply()[0] == 552
        assert messages(http, small_server, address) == []

        open_transaction(client, address)
        client.send(raw_message(address, "after the refusal"))
        assert client.reply()[0] == 250
    finally:
        client.close()
    assert [found["subject"] for found in messages(http, small_server, address)] == [
        "after the refusal"
    ]


@pytest.mark.parametrize(
    ("size", "expected"), [(SMALL_LIMIT, 250), (SMALL_LIMIT + 1, 552)], ids=["at", "above"]
)
def test_mail_from_size_above_the_limit_is_refused_at_once(
    small_server: InboxServer, size: int, expected: int
) -> None:
    client = RawSMTP(small_server.smtp_host, small_server.smtp_port)
    try:
        assert client.command(f"EHLO {CLIENT_NAME}")[0] == 250
        assert client.command(f"MAIL FROM:<a@example.com> SIZE={size}")[0] == expected
    finally:
        client.close()


# --- AUTH -----------------------------------------------------------------------------------


def test_login_accepts_any_credentials_and_mail_then_flows(
    server: InboxServer, http: requests.Session, address: str
) -> None:
    with connect(server) as client:
        code, _ = client.login("user", "any password")
        assert code == 235
        client.sendmail("a@example.com", [address], make_message(address).as_bytes())
    assert len(messages(http, server, address)) == 1


@pytest.mark.parametrize("mechanism", ["PLAIN", "LOGIN"])
def test_auth_mechanism_accepts_any_credentials(server: InboxServer, mechanism: str) -> None:
    with connect(server) as client:
        client.ehlo()
        client.user, client.password = "someone", "not-checked"
        authobject = client.auth_plain if mechanism == "PLAIN" else client.auth_login
        code, _ = client.auth(mechanism, authobject, initial_response_ok=False)
    assert code == 235


# --- errors ---------------------------------------------------------------------------------


def test_handler_exception_answers_451_without_internals_and_is_logged(
    private_server: InboxServer,
    http: requests.Session,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def broken_deliver(*args: object) -> list[object]:
        raise RuntimeError("secret internals")

    address = generate(http, private_server)
    monkeypatch.setattr(private_server.store, "deliver", broken_deliver)
    caplog.set_level(logging.ERROR, logger="pytest_tempinbox.server.smtp")
    with connect(private_server) as client, pytest.raises(smtplib.SMTPDataError) as refused:
        client.sendmail("a@example.com", [address], make_message(address).as_bytes())

    error = refused.value.smtp_error
    code, text = refused.value.smtp_code, error.decode() if isinstance(error, bytes) else error
    assert (code, text.split()[0]) == (451, "4.3.0")
    assert "secret" not in text
    assert "RuntimeError" not in text
    logged = [r for r in caplog.records if r.name == "pytest_tempinbox.server.smtp"]
    assert logged
    assert logged[0].levelno == logging.ERROR
    assert logged[0].exc_info is not None
    assert str(logged[0].exc_info[1]) == "secret internals"


def test_mail_before_ehlo_is_a_bad_sequence(raw_smtp: RawSMTP) -> None:
    assert raw_smtp.command("MAIL FROM:<a@example.com>")[0] == 503


def test_rcpt_before_mail_is_a_bad_sequence(ehlo_smtp: RawSMTP, address: str) -> None:
    assert ehlo_smtp.command(f"RCPT TO:<{address}>")[0] == 503


def test_data_before_rcpt_is_a_bad_sequence(ehlo_smtp: RawSMTP) -> None:
    assert ehlo_smtp.command("MAIL FROM:<a@example.com>")[0] == 250
    assert ehlo_smtp.command("DATA")[0] == 503


# --- SMTPUTF8 -------------------------------------------------------------------------------


def send_smtputf8(client: RawSMTP, address: str) -> None:
    """Send a message with a UTF-8 envelope sender, From header and subject."""
    assert client.command("MAIL FROM:<jöhn@exämple.com> SMTPUTF8")[0] == 250
    assert client.command(f"RCPT TO:<{address}>")[0] == 250
    assert client.command("DATA")[0] == 354
    client.send(
        (
            f"From: Jöhn <jöhn@exämple.com>\r\nTo: {address}\r\nSubject: Grüße ✓\r\n"
            "\r\nHällo.\r\n.\r\n"
        ).encode()
    )
    assert client.reply()[0] == 250


def test_smtputf8_message_is_accepted_with_its_utf8_envelope_sender(
    ehlo_smtp: RawSMTP, server: InboxServer, http: requests.Session, address: str
) -> None:
    send_smtputf8(ehlo_smtp, address)
    (found,) = messages(http, server, address)
    assert found["envelope"]["mail_from"] == "jöhn@exämple.com"


def test_raw_utf8_from_header_and_subject_are_decoded(
    ehlo_smtp: RawSMTP, server: InboxServer, http: requests.Session, address: str
) -> None:
    send_smtputf8(ehlo_smtp, address)
    (found,) = messages(http, server, address)
    assert found["from"] == {"name": "Jöhn", "email": "jöhn@exämple.com"}
    assert found["subject"] == "Grüße ✓"


# --- real clients ---------------------------------------------------------------------------


def test_aiosmtplib_delivers(server: InboxServer, http: requests.Session, address: str) -> None:
    async def send() -> None:
        await aiosmtplib.send(
            make_message(address, "from aiosmtplib"),
            hostname=server.smtp_host,
            port=server.smtp_port,
            local_hostname=CLIENT_NAME,
            timeout=TIMEOUT,
        )

    asyncio.run(send())
    assert [found["subject"] for found in messages(http, server, address)] == ["from aiosmtplib"]


def test_swaks_delivers(server: InboxServer, http: requests.Session, address: str) -> None:
    result = run_swaks(server, address, "--header", "Subject: from swaks", timeout=TIMEOUT)
    assert result.returncode == 0, result.stdout + result.stderr
    (found,) = messages(http, server, address)
    assert found["subject"] == "from swaks"
    assert found["envelope"] == {"mail_from": "sender@example.com", "rcpt_to": [address]}


def test_postfix_smtp_source_delivers(
    server: InboxServer, http: requests.Session, address: str
) -> None:
    if not os.access(SMTP_SOURCE, os.X_OK):
        pytest.skip(f"{SMTP_SOURCE} is not installed (Debian package postfix)")
    result = subprocess.run(
        [
            SMTP_SOURCE,
            "-c", "-m", "5", "-s", "1",
            "-M", CLIENT_NAME,
            "-t", address,
            "-f", "sender@example.com",
            "-S", "from smtp-source",
            f"{server.smtp_host}:{server.smtp_port}",
        ],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    found = messages(http, server, address)
    assert len(found) == 5
    assert {message["subject"] for message in found} == {"from smtp-source"}


# --- concurrency ----------------------------------------------------------------------------


def test_concurrent_sessions_store_every_message(
    server: InboxServer, http: requests.Session
) -> None:
    sessions, per_session = 8, 10
    addresses = [generate(http, server) for _ in range(sessions)]

    def send_all(address: str) -> None:
        with connect(server) as client:
            for number in range(per_session):
                client.sendmail(
                    "a@example.com", [address], make_message(address, f"n{number}").as_bytes()
                )

    with ThreadPoolExecutor(max_workers=sessions) as pool:
        # list() re-raises any worker's exception here.
        list(pool.map(send_all, addresses))

    for address in addresses:
        subjects = [found["subject"] for found in messages(http, server, address)]
        assert sorted(subjects) == sorted(f"n{number}" for number in range(per_session))


def test_the_short_dir_leaves_aiosmtpd_every_command_mechanism_and_hook() -> None:
    """Each connection's tables, built from a dir() listing only their names, are whole."""
    from pytest_tempinbox.server.smtp.handler import InboxHandler
    from pytest_tempinbox.server.smtp.protocol import TrackedSMTP
    from pytest_tempinbox.server.store.memory.store import Store

    def named(obj: object, prefix: str) -> set[str]:
        names = object.__dir__(obj)
        return {name.removeprefix(prefix) for name in names if name.startswith(prefix)}

    loop = asyncio.new_event_loop()
    try:
        handler = InboxHandler(Store())
        protocol = TrackedSMTP(
            handler, set(), max_connections=1, data_line_limit=1000, hostname="x.test", loop=loop
        )
    finally:
        loop.close()
    assert set(protocol._smtp_methods) == named(protocol, "smtp_")
    assert set(protocol._handle_hooks) == named(handler, "handle_")
    assert {"LOGIN", "PLAIN"} <= set(protocol._auth_methods)
    assert len(protocol._auth_methods) == len(named(protocol, "auth_") | named(handler, "auth_"))


@pytest.mark.parametrize("advertise_auth", [True, False])
def test_the_ehlo_reply_is_handed_to_aiosmtpd_as_one_write(advertise_auth: bool) -> None:
    """aiosmtpd writes each reply line it is given on its own: the lines come joined."""
    from aiosmtpd.smtp import Envelope, Session

    from pytest_tempinbox.server.smtp.service import InboxHandler
    from pytest_tempinbox.server.store.memory.store import Store

    handler = InboxHandler(Store(), advertise_auth=advertise_auth)
    lines = ["250-x.test", "250-SIZE 10", "250-AUTH LOGIN PLAIN", "250 HELP"]

    async def ehlo() -> list[str]:
        session = Session(asyncio.get_running_loop())
        return await handler.handle_EHLO(None, session, Envelope(), "client.test", lines)  # type: ignore[arg-type]

    expected = lines if advertise_auth else [line for line in lines if "AUTH" not in line]
    assert asyncio.run(ehlo()) == ["\r\n".join(expected)]
