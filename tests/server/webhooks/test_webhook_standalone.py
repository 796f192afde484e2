"""The standalone server with ``--webhook``: flags, the secret's variable, usage errors."""

from __future__ import annotations

import signal
import smtplib
import subprocess
import sys

import pytest
import requests

from ...helpers import Standalone, make_message
from .webhooks_support import Hit, Receiver, expected_signature


def _usage(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest_tempinbox", *args],
        capture_output=True,
        text=True,
        timeout=30,
    )


def _posted(*args: str) -> tuple[Hit, str, str]:
    """Run the server with ``args``, mail a new inbox: the webhook request, the inbox, stderr."""
    with Receiver() as receiver:
        process = Standalone("--smtp-port", "0", "--api-port", "0", "--webhook", receiver.url,
                             *args)  # fmt: skip
        try:
            host, port, api = process.read_addresses()
            with requests.Session() as session:
                session.trust_env = False
                email = session.post(f"{api}/generate", timeout=10).json()["email"]
            with smtplib.SMTP(host, port) as client:
                client.send_message(make_message(email, "Signed"))
            (hit,) = receiver.wait_for(1)
            status, _, stderr = process.stop(signal.SIGTERM)
        finally:
            if process.process.poll() is None:
                process.process.kill()
                process.process.communicate()
    assert status == 0, stderr
    return hit, email, stderr


@pytest.mark.parametrize("store", ["memory", "redis"])
def test_the_standalone_server_signs_with_the_environment_s_secret(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, store: str
) -> None:
    if store == "redis":
        store = request.getfixturevalue("redis_url")
    monkeypatch.setenv("TEMPINBOX_WEBHOOK_SECRET", "from-the-environment")
    hit, email, stderr = _posted("--store", store)
    assert hit.json()["email"] == email
    assert hit.headers["x-tempinbox-signature"] == expected_signature("from-the-environment", hit)
    assert "from-the-environment" not in stderr


def test_the_flag_s_secret_signs_over_the_environment_s(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEMPINBOX_WEBHOOK_SECRET", "from-the-environment")
    hit, _, _ = _posted("--webhook-secret", "flag-secret")
    assert hit.headers["x-tempinbox-signature"] == expected_signature("flag-secret", hit)


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("ftp://hooks.example.test/", "http:// or https://"),
        ("hooks.example.test/path", "http:// or https://"),
        ("http:///path", "has no host"),
        ("https://user:pw-9f2@hooks.example.test/", "carries credentials"),
    ],
)
def test_a_webhook_that_is_not_an_http_url_is_a_usage_error(url: str, says: str) -> None:
    result = _usage("--webhook", url)
    assert result.returncode == 2
    assert says in result.stderr
    assert "pw-9f2" not in result.stderr
    assert "Traceback" not in result.stderr
