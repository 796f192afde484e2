"""The plugin's ``--tempinbox-webhook``: the session's server posts to it; a bad URL is one line."""

from __future__ import annotations

import pytest

from .webhooks_support import Receiver

USER_TEST = """
import smtplib

def test_signup(tempinbox, tempinbox_server):
    with smtplib.SMTP(tempinbox_server.smtp_host, tempinbox_server.smtp_port) as client:
        client.sendmail("app@example.test", [tempinbox.address], b"Subject: Hi\\r\\n\\r\\nHello")
    assert tempinbox.wait_for_message().subject == "Hi"
"""


def test_the_session_s_server_posts_to_the_plugin_s_webhook(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TEMPINBOX_WEBHOOK_SECRET", "plugin-secret")
    pytester.makepyfile(USER_TEST)
    with Receiver() as receiver:
        result = pytester.runpytest_subprocess("--tempinbox-webhook", receiver.url)
        hit = receiver.wait_for_event("message.received")  # teardown's deletion may pass it
    result.assert_outcomes(passed=1)
    assert hit.json()["message"]["subject"] == "Hi"
    assert hit.headers["x-tempinbox-signature"].startswith("sha256=")


def test_a_webhook_that_is_not_http_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(USER_TEST)
    result = pytester.runpytest_subprocess("--tempinbox-webhook", "ftp://hooks.test/")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--tempinbox-webhook: a webhook is an http:// or https://*"])
