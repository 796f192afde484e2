"""With tenants, another tenant's message's transcript is a 404 like a missing one."""

from __future__ import annotations

import smtplib

import requests

from pytest_tempinbox.server.inbox_server import InboxServer

from ..tenants_support import TOKEN_A, TOKEN_B, bearer, generate, tenant_server

__all__ = ["tenant_server"]  # the fixture, imported for these tests


def test_another_tenant_s_transcript_is_a_404_like_a_missing_one(
    tenant_server: InboxServer,
) -> None:
    api = tenant_server.api_url
    address = generate(api, TOKEN_A)
    with smtplib.SMTP(tenant_server.smtp_host, tenant_server.smtp_port) as client:
        client.sendmail("app@example.test", [address], b"Subject: hi\r\n\r\nHello.\r\n")
    id = tenant_server.store.messages(address)[0].id
    own = requests.get(
        f"{api}/messages/{address}/{id}/transcript", headers=bearer(TOKEN_A), timeout=10
    )
    other = requests.get(
        f"{api}/messages/{address}/{id}/transcript", headers=bearer(TOKEN_B), timeout=10
    )
    missing = requests.get(
        f"{api}/messages/nobody@{address.partition('@')[2]}/{id}/transcript",
        headers=bearer(TOKEN_B),
        timeout=10,
    )
    assert own.status_code == 200
    assert other.status_code == missing.status_code == 404
    assert other.json()["code"] == missing.json()["code"]
