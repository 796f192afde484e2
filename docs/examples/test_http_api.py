"""The HTTP API spoken directly, as a test in any language would: JSON over HTTP."""

from __future__ import annotations

import smtplib

import requests

from pytest_tempinbox.plugin import TempInboxServer


def test_a_session_with_the_http_api(tempinbox_server: TempInboxServer) -> None:
    """Generate an address, send to it, long-poll its mail, download it, delete it."""
    api = tempinbox_server.api_url  # for example http://127.0.0.1:8025/api
    smtp_host, smtp_port = tempinbox_server.smtp_host, tempinbox_server.smtp_port

    # --8<-- [start:session]
    created = requests.post(f"{api}/generate", json={"prefix": "signup"}, timeout=10)
    assert created.status_code == 201
    email = created.json()["email"]  # signup-...@tempinbox.test

    with smtplib.SMTP(smtp_host, smtp_port, local_hostname="localhost") as smtp:
        smtp.sendmail("app@example.com", [email], b"Subject: Your code\r\n\r\nIt is 482913\r\n")

    # Long-poll: answered as soon as there is a message, or after 10 s with [].
    answer = requests.get(f"{api}/messages/{email}", params={"wait": 10}, timeout=20)
    (message,) = answer.json()
    assert (message["subject"], message["codes"]) == ("Your code", ["482913"])

    raw = requests.get(f"{api}/messages/{email}/{message['id']}/raw", timeout=10)
    assert raw.headers["content-type"] == "message/rfc822"

    deleted = requests.delete(f"{api}/delete/{email}", timeout=10)
    assert deleted.json() == {"email": email, "deleted": True, "purged": 1}

    # Every error is a problem document with a stable code.
    gone = requests.get(f"{api}/messages/{email}", timeout=10)
    assert gone.status_code == 404
    assert gone.headers["content-type"] == "application/problem+json"
    assert gone.json()["code"] == "inbox_not_found"
    # --8<-- [end:session]
