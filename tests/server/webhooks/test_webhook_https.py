"""``https://`` webhooks: the certificate is verified against the system's CAs."""

from __future__ import annotations

import ssl
import time
from collections.abc import Iterator

import pytest
import trustme

from pytest_tempinbox import TempInboxClient
from pytest_tempinbox.server.inbox_server import InboxServer
from pytest_tempinbox.server.webhooks import client as webhook_client

from .webhooks_support import Receiver, send


@pytest.fixture
def authority() -> trustme.CA:
    """A throwaway CA."""
    return trustme.CA()


@pytest.fixture
def fresh_contexts() -> Iterator[None]:
    """The webhooks' TLS context made again, so that it reads ``SSL_CERT_FILE`` now."""
    webhook_client._contexts.clear()
    yield
    webhook_client._contexts.clear()


def _server_context(authority: trustme.CA) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    authority.issue_cert("localhost").configure_cert(context)
    return context


@pytest.mark.usefixtures("fresh_contexts")
def test_an_https_webhook_trusted_by_the_system_s_cas_is_posted(
    authority: trustme.CA, monkeypatch: pytest.MonkeyPatch
) -> None:
    with authority.cert_pem.tempfile() as ca_file:
        monkeypatch.setenv("SSL_CERT_FILE", ca_file)  # the "system's" CAs for this process
        with (
            Receiver(tls=_server_context(authority)) as receiver,
            InboxServer(webhooks=[receiver.url]) as server,
            TempInboxClient(server.api_url) as client,
        ):
            send(server, client.generate().address)
            (hit,) = receiver.wait_for(1)
    assert hit.json()["event"] == "message.received"


@pytest.mark.usefixtures("fresh_contexts")
def test_an_https_webhook_with_an_untrusted_certificate_is_not_posted(
    authority: trustme.CA,
) -> None:
    with (
        Receiver(tls=_server_context(authority)) as receiver,
        InboxServer(webhooks=[receiver.url]) as server,
        TempInboxClient(server.api_url) as client,
    ):
        assert server.webhooks is not None
        send(server, client.generate().address)
        deadline = time.monotonic() + 10
        while server.webhooks.metrics()["retried"] == 0 and time.monotonic() < deadline:
            time.sleep(0.02)
        hits = receiver.quiet_for(0)
    assert server.webhooks.metrics()["retried"] == 1  # a TLS failure, retried later
    assert hits == []
