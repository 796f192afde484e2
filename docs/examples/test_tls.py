"""Clients that verify the server's certificate, and an application's AUTH failure path.

The functions take the server as the ``tempinbox_server`` fixture gives it. Here
the servers are this module's own, started as ``--tempinbox-tls`` and
``--tempinbox-smtp-auth app:s3cret`` would start the plugin's.
"""

from __future__ import annotations

import asyncio
import shutil
import smtplib
import ssl
from collections.abc import Iterator
from email.message import EmailMessage
from pathlib import Path

import aiosmtplib
import pytest

from pytest_tempinbox import InboxServer, TempInboxClient
from pytest_tempinbox.plugin import TempInboxServer

USER, PASSWORD = "app", "s3cret"


def welcome(to: str) -> EmailMessage:
    """A welcome mail to ``to``."""
    message = EmailMessage()
    message["From"] = "app@example.com"
    message["To"] = to
    message["Subject"] = "Welcome"
    message.set_content("Hello!")
    return message


# --8<-- [start:smtplib]
def send_with_starttls(server: TempInboxServer, message: EmailMessage) -> None:
    """STARTTLS (tls = starttls or required), verifying the certificate against the CA."""
    with smtplib.SMTP(server.smtp_host, server.smtp_port, local_hostname="localhost") as smtp:
        smtp.starttls(context=server.ssl_context())
        smtp.login(USER, PASSWORD)
        smtp.send_message(message)


def send_with_smtps(server: TempInboxServer, message: EmailMessage) -> None:
    """Implicit TLS (tls = implicit): TLS from the first byte."""
    context = ssl.create_default_context(cafile=server.ca_path)  # as server.ssl_context()
    with smtplib.SMTP_SSL(
        server.smtp_host, server.smtp_port, local_hostname="localhost", context=context
    ) as smtp:
        smtp.login(USER, PASSWORD)
        smtp.send_message(message)
        # --8<-- [end:smtplib]


# --8<-- [start:aiosmtplib]
async def send_with_aiosmtplib(server: TempInboxServer, message: EmailMessage) -> None:
    """Send with aiosmtplib in any TLS mode; it upgrades with STARTTLS by itself when offered."""
    await aiosmtplib.send(
        message,
        hostname=server.smtp_host,
        port=server.smtp_port,
        use_tls=server.tls == "implicit",
        tls_context=server.ssl_context(),
        username=USER,
        password=PASSWORD,
    )
    # --8<-- [end:aiosmtplib]


# --8<-- [start:auth-failure]
class MailUnavailable(Exception):
    """The application's own error: it cannot send mail, and says why."""


def send_receipt(host: str, port: int, password: str, to: str) -> None:
    """Stands in for the application's mail code, with its handling of a refused login."""
    try:
        with smtplib.SMTP(host, port, local_hostname="localhost") as smtp:
            smtp.login(USER, password)
            smtp.send_message(welcome(to))
    except smtplib.SMTPAuthenticationError as exc:
        raise MailUnavailable(f"the SMTP server refused our login ({exc.smtp_code})") from exc


def test_a_wrong_smtp_password_is_reported(tempinbox_server: TempInboxServer) -> None:
    """Run with --tempinbox-smtp-auth app:s3cret: any other password gets 535."""
    server = tempinbox_server
    with pytest.raises(MailUnavailable, match=r"refused our login \(535\)"):
        send_receipt(server.smtp_host, server.smtp_port, "not-the-password", "x@tempinbox.test")
        # --8<-- [end:auth-failure]


@pytest.fixture(scope="module")
def tempinbox_server() -> Iterator[InboxServer]:
    """The plugin's fixture as ``--tempinbox-smtp-auth app:s3cret`` starts it (TLS off)."""
    with InboxServer(smtp_auth=f"{USER}:{PASSWORD}") as server:
        yield server


@pytest.fixture(scope="module", params=["starttls", "required", "implicit"])
def tls_server(request: pytest.FixtureRequest) -> Iterator[InboxServer]:
    """A server in each TLS mode, with one user name and password."""
    with InboxServer(tls=request.param, smtp_auth=f"{USER}:{PASSWORD}") as server:
        yield server


@pytest.fixture(scope="module")
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    """One event loop for the module's aiosmtplib sends.

    aiosmtplib closes a TLS connection without waiting for the TLS shutdown; a
    loop closed at once (asyncio.run) may leave the socket open, which Python
    warns about. On a loop that goes on, the shutdown finishes.
    """
    loop = asyncio.new_event_loop()
    yield loop
    loop.run_until_complete(asyncio.sleep(0.1))
    loop.close()


def deliver_and_read(server: InboxServer, send: str, loop: asyncio.AbstractEventLoop) -> str:
    """Send a welcome mail to a new address with ``send``; return the subject received."""
    with TempInboxClient(server.api_url, transport=server.local_transport()) as client:
        inbox = client.generate()
        message = welcome(inbox.address)
        if send == "aiosmtplib":
            loop.run_until_complete(send_with_aiosmtplib(server, message))
        elif server.tls == "implicit":
            send_with_smtps(server, message)
        else:
            send_with_starttls(server, message)
        return inbox.wait_for_message(timeout=5).subject


@pytest.mark.parametrize("send", ["smtplib", "aiosmtplib"])
def test_clients_that_trust_the_ca_deliver(
    tls_server: InboxServer, send: str, loop: asyncio.AbstractEventLoop
) -> None:
    """Both smtplib and aiosmtplib, given the CA, send in every TLS mode."""
    assert deliver_and_read(tls_server, send, loop) == "Welcome"


def django_version() -> tuple[int, ...]:
    """The installed Django's version, as (major, minor, ...)."""
    import django

    return tuple(django.VERSION[:2])


def test_the_django_project_sends_over_tls(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Django example project's tests pass with STARTTLS and with implicit TLS.

    Django's settings are global to a process, so the project runs in a pytest
    subprocess of its own, as ``cd tls_django && pytest`` would.
    """
    project = Path(__file__).parent / "tls_django"
    shutil.copytree(
        project, pytester.path, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__")
    )
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    plugins: tuple[str, ...] = ("-p", "pytest_django.plugin", "-p", "pytest_tempinbox.plugin")
    if django_version() >= (6, 1):
        # The project sets the EMAIL_* settings and shares a connection, which Django 6.1
        # deprecates: its warnings about the project's own code pass, no other.
        for module in ("pytest_django.plugin", "pytest_django.fixtures", "mail_site.tests"):
            plugins += ("-W", f"ignore::PendingDeprecationWarning:{module}")
    pytester.runpytest_subprocess(*plugins).assert_outcomes(passed=2)
    result = pytester.runpytest_subprocess(*plugins, "--tempinbox-tls", "implicit")
    result.assert_outcomes(passed=2)
