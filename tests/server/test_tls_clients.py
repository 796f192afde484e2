"""AUTH modes with smtplib, and aiosmtplib and swaks in every TLS and AUTH mode."""

from __future__ import annotations

import asyncio
import smtplib
import ssl
from collections.abc import Callable, Coroutine, Iterator
from typing import Any

import aiosmtplib
import pytest

from pytest_tempinbox.server.inbox_server import InboxServer
from pytest_tempinbox.smtp_security import TLS_MODES

from ..helpers import CLIENT_NAME, make_message, run_swaks
from .tls_support import (
    CREDENTIALS,
    PASSWORD,
    STARTTLS_MODES,
    TIMEOUT,
    TLS_ON,
    USER,
    Servers,
    connect,
    secure,
    subjects,
)

# --- smtplib: every AUTH mode -----------------------------------------------------------


@pytest.mark.parametrize("tls", TLS_MODES)
def test_any_credentials_are_accepted_in_mode_any(servers: Servers, tls: str) -> None:
    server = servers(tls, "any")
    address = server.store.generate().address
    with connect(server) as client:
        secure(client, server)
        assert client.login("whoever", "whatever")[0] == 235
        client.send_message(make_message(address))
    assert len(server.store.messages(address)) == 1


@pytest.mark.parametrize("tls", TLS_MODES)
def test_auth_is_not_advertised_in_mode_none(servers: Servers, tls: str) -> None:
    server = servers(tls, "none")
    address = server.store.generate().address
    with connect(server) as client:
        secure(client, server)
        assert not client.has_extn("auth")
        with pytest.raises(smtplib.SMTPNotSupportedError):
            client.login("user", "password")
        assert client.docmd("AUTH PLAIN AHVzZXIAcGFzcw==") == (
            503,
            b"5.5.1 Error: authentication not enabled",
        )
        assert b"AUTH" not in client.help()
        client.send_message(make_message(address))  # no AUTH needed
    assert len(server.store.messages(address)) == 1


@pytest.mark.parametrize("tls", TLS_MODES)
def test_the_configured_credentials_succeed(servers: Servers, tls: str) -> None:
    server = servers(tls, CREDENTIALS)
    address = server.store.generate().address
    with connect(server) as client:
        secure(client, server)
        assert client.login(USER, PASSWORD)[0] == 235
        client.send_message(make_message(address, subject="authenticated"))
    assert subjects(server, address) == ["authenticated"]


@pytest.mark.parametrize("mechanism", ["PLAIN", "LOGIN"])
@pytest.mark.parametrize(("user", "password"), [(USER, "wrong"), ("someone", PASSWORD)])
def test_wrong_credentials_are_refused_with_535(
    servers: Servers, mechanism: str, user: str, password: str
) -> None:
    server = servers("off", CREDENTIALS)
    with connect(server) as client:
        client.ehlo()
        client.user, client.password = user, password
        authobject = client.auth_plain if mechanism == "PLAIN" else client.auth_login
        with pytest.raises(smtplib.SMTPAuthenticationError) as refused:
            client.auth(mechanism, authobject, initial_response_ok=mechanism == "PLAIN")
    assert refused.value.smtp_code == 535
    assert refused.value.smtp_error == b"5.7.8 Authentication credentials invalid"


@pytest.mark.parametrize("tls", TLS_MODES)
def test_mail_without_authenticating_is_refused_with_530(servers: Servers, tls: str) -> None:
    server = servers(tls, CREDENTIALS)
    address = server.store.generate().address
    with connect(server) as client:
        secure(client, server)
        assert client.has_extn("auth")
        with pytest.raises(smtplib.SMTPSenderRefused) as refused:
            client.send_message(make_message(address))
    assert (refused.value.smtp_code, refused.value.smtp_error) == (
        530,
        b"5.7.0 Authentication required",
    )
    assert server.store.messages(address) == []


def test_a_failed_login_can_be_retried_in_the_same_session(servers: Servers) -> None:
    server = servers("off", CREDENTIALS)
    address = server.store.generate().address
    with connect(server) as client:
        with pytest.raises(smtplib.SMTPAuthenticationError):
            client.login(USER, "typo")
        assert client.login(USER, PASSWORD)[0] == 235
        client.send_message(make_message(address))
    assert len(server.store.messages(address)) == 1


# --- aiosmtplib -------------------------------------------------------------------------

Run = Callable[[Coroutine[Any, Any, object]], object]


@pytest.fixture(scope="module")
def run() -> Iterator[Run]:
    """Run a coroutine on one event loop kept for the module.

    aiosmtplib closes a TLS connection without waiting for the TLS shutdown to
    finish; a loop closed right after (as by asyncio.run) can leave the socket
    open. Here the shutdowns finish on later runs, and before the loop closes.
    """
    loop = asyncio.new_event_loop()
    yield loop.run_until_complete
    loop.run_until_complete(asyncio.sleep(0.1))
    loop.close()


def aiosmtplib_options(server: InboxServer, *, trust: bool = True) -> dict[str, object]:
    options: dict[str, object] = {
        "hostname": server.smtp_host,
        "port": server.smtp_port,
        "local_hostname": CLIENT_NAME,
        "timeout": TIMEOUT,
        "use_tls": server.tls == "implicit",
        "start_tls": server.tls in STARTTLS_MODES,
    }
    if trust and server.tls != "off":
        options["tls_context"] = server.ssl_context()
    return options


@pytest.mark.parametrize("smtp_auth", ["any", "none", CREDENTIALS])
@pytest.mark.parametrize("tls", TLS_MODES)
def test_aiosmtplib_delivers_in_every_mode(
    servers: Servers, run: Run, tls: str, smtp_auth: str
) -> None:
    server = servers(tls, smtp_auth)
    address = server.store.generate().address
    credentials = {} if smtp_auth == "none" else {"username": USER, "password": PASSWORD}
    message = make_message(address, subject="from aiosmtplib")
    run(aiosmtplib.send(message, **aiosmtplib_options(server), **credentials))  # type: ignore[arg-type]
    assert subjects(server, address) == ["from aiosmtplib"]


@pytest.mark.parametrize("tls", TLS_MODES)
def test_aiosmtplib_sees_535_for_a_wrong_password(servers: Servers, run: Run, tls: str) -> None:
    server = servers(tls, CREDENTIALS)
    address = server.store.generate().address
    options = aiosmtplib_options(server)
    with pytest.raises(aiosmtplib.SMTPAuthenticationError) as refused:
        run(aiosmtplib.send(make_message(address), username=USER, password="nope", **options))  # type: ignore[arg-type]
    assert refused.value.code == 535


def test_aiosmtplib_sees_530_without_credentials(servers: Servers, run: Run) -> None:
    server = servers("starttls", CREDENTIALS)
    address = server.store.generate().address
    with pytest.raises(aiosmtplib.SMTPSenderRefused) as refused:
        run(aiosmtplib.send(make_message(address), **aiosmtplib_options(server)))  # type: ignore[arg-type]
    assert refused.value.code == 530


@pytest.mark.parametrize("tls", TLS_ON)
def test_aiosmtplib_without_the_ca_refuses_the_certificate(
    servers: Servers, run: Run, tls: str
) -> None:
    server = servers(tls)
    address = server.store.generate().address
    options = aiosmtplib_options(server, trust=False)
    with pytest.raises((ssl.SSLCertVerificationError, aiosmtplib.SMTPConnectError)) as refused:
        run(aiosmtplib.send(make_message(address), **options))  # type: ignore[arg-type]
    error: BaseException | None = refused.value
    while error is not None and not isinstance(error, ssl.SSLCertVerificationError):
        error = error.__cause__ or error.__context__
    assert isinstance(error, ssl.SSLCertVerificationError)
    assert server.store.messages(address) == []


# --- swaks ------------------------------------------------------------------------------


def swaks(server: InboxServer, address: str, *extra: str, trust: bool = True) -> str:
    """Run swaks against ``server`` in its TLS mode; return what it printed, asserting nothing."""
    tls = {"starttls": ["--tls"], "required": ["--tls"], "implicit": ["--tls-on-connect"]}
    options = ["--header", "Subject: from swaks", *tls.get(server.tls, []), *extra]
    if server.tls != "off":
        options.append("--tls-verify")
        if trust:
            assert server.ca_path is not None
            options += ["--tls-ca-path", server.ca_path]
    result = run_swaks(server, address, *options, timeout=TIMEOUT)
    return f"exit status {result.returncode}\n{result.stdout}{result.stderr}"


@pytest.mark.parametrize("smtp_auth", ["any", "none", CREDENTIALS])
@pytest.mark.parametrize("tls", TLS_MODES)
def test_swaks_delivers_in_every_mode(servers: Servers, tls: str, smtp_auth: str) -> None:
    server = servers(tls, smtp_auth)
    address = server.store.generate().address
    auth = [] if smtp_auth == "none" else ["--auth", "PLAIN", "--auth-user", USER]
    auth += [] if smtp_auth == "none" else ["--auth-password", PASSWORD]
    output = swaks(server, address, *auth)
    assert output.startswith("exit status 0\n"), output
    assert subjects(server, address) == ["from swaks"]


@pytest.mark.parametrize("tls", TLS_MODES)
def test_swaks_sees_535_for_a_wrong_password(servers: Servers, tls: str) -> None:
    server = servers(tls, CREDENTIALS)
    address = server.store.generate().address
    output = swaks(server, address, "--auth", "LOGIN", "--auth-user", USER, "--auth-password", "x")
    assert not output.startswith("exit status 0\n"), output
    assert "535 5.7.8" in output
    assert server.store.messages(address) == []


def test_swaks_sees_530_without_authenticating(servers: Servers) -> None:
    server = servers("off", CREDENTIALS)
    address = server.store.generate().address
    output = swaks(server, address)
    assert "530 5.7.0 Authentication required" in output, output
    assert server.store.messages(address) == []


def test_swaks_finds_no_auth_in_mode_none(servers: Servers) -> None:
    server = servers("off", "none")
    address = server.store.generate().address
    output = swaks(server, address, "--auth", "--auth-user", USER, "--auth-password", PASSWORD)
    assert not output.startswith("exit status 0\n"), output
    assert "Host did not advertise authentication" in output
    assert server.store.messages(address) == []


def test_swaks_with_required_tls_but_without_starttls_is_refused(servers: Servers) -> None:
    server = servers("required")
    address = server.store.generate().address
    result = run_swaks(server, address, timeout=TIMEOUT)
    assert result.returncode != 0
    assert "530 5.7.0 Must issue a STARTTLS command first" in result.stdout + result.stderr
    assert server.store.messages(address) == []


@pytest.mark.parametrize("tls", TLS_ON)
def test_swaks_without_the_ca_refuses_the_certificate(servers: Servers, tls: str) -> None:
    server = servers(tls)
    address = server.store.generate().address
    output = swaks(server, address, trust=False)
    assert not output.startswith("exit status 0\n"), output
    assert "*** TLS startup failed" in output, output
    assert "certificate verify failed" in output
    assert server.store.messages(address) == []
