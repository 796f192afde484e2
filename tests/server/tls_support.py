"""Tools of the TLS and AUTH tests: the modes, the credentials, and smtplib connections."""

from __future__ import annotations

import smtplib
from collections.abc import Callable

from pytest_tempinbox.server.inbox_server import InboxServer

from ..helpers import CLIENT_NAME

TIMEOUT = 10.0
USER, PASSWORD = "app-user", "s3cret:with-colon"
CREDENTIALS = f"{USER}:{PASSWORD}"
HOSTNAME = "mx.tempinbox.test"
STARTTLS_MODES = ("starttls", "required")
TLS_ON = ("starttls", "required", "implicit")

Servers = Callable[..., InboxServer]


def connect(server: InboxServer, *, host: str | None = None) -> smtplib.SMTP:
    """An smtplib client in the server's TLS mode, EHLO not yet sent.

    Implicit TLS is SMTP_SSL with the server's context; for the STARTTLS modes the
    connection is still plain: call :func:`secure` to upgrade it.
    """
    host = host or server.smtp_host
    if server.tls == "implicit":
        return smtplib.SMTP_SSL(
            host,
            server.smtp_port,
            local_hostname=CLIENT_NAME,
            timeout=TIMEOUT,
            context=server.ssl_context(),
        )
    return smtplib.SMTP(host, server.smtp_port, local_hostname=CLIENT_NAME, timeout=TIMEOUT)


def secure(client: smtplib.SMTP, server: InboxServer) -> None:
    """EHLO, and STARTTLS with the server's CA when the mode uses STARTTLS."""
    client.ehlo()
    if server.tls in STARTTLS_MODES:
        code, _ = client.starttls(context=server.ssl_context())
        assert code == 220
        client.ehlo()


def subjects(server: InboxServer, address: str) -> list[str]:
    return [message.message().subject for message in server.store.messages(address)]
