"""Remote mode with a tenant's token: ``--tempinbox-token`` and ``$TEMPINBOX_TOKEN``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_tempinbox.server.inbox_server import InboxServer

from ..server.tenants_support import TOKEN_A, tenants_file

TEST_FILE = """
import smtplib
from email.message import EmailMessage

def test_mail_arrives(tempinbox, tempinbox_server):
    message = EmailMessage()
    message["From"], message["To"], message["Subject"] = "app@example.com", tempinbox.address, "Hi"
    message.set_content("Hello")
    with smtplib.SMTP(tempinbox_server.smtp_host, tempinbox_server.smtp_port) as smtp:
        smtp.send_message(message)
    assert tempinbox.wait_for_message(timeout=5).subject == "Hi"
"""


@pytest.fixture
def shared(tmp_path: Path) -> Iterator[InboxServer]:
    """A running server with tenants, as a shared one would be."""
    with InboxServer(tenants=tenants_file(tmp_path)) as server:
        yield server


def test_the_token_option_reaches_a_server_with_tenants(
    pytester: pytest.Pytester, shared: InboxServer
) -> None:
    pytester.makepyfile(TEST_FILE)
    result = pytester.runpytest("--tempinbox-url", shared.api_url, "--tempinbox-token", TOKEN_A)
    result.assert_outcomes(passed=1)


def test_the_token_of_the_environment_is_used(
    pytester: pytest.Pytester, shared: InboxServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TEMPINBOX_TOKEN", TOKEN_A)
    pytester.makepyfile(TEST_FILE)
    result = pytester.runpytest("--tempinbox-url", shared.api_url)
    result.assert_outcomes(passed=1)


@pytest.mark.parametrize("token", [None, "tit_wrong"], ids=["no token", "wrong token"])
def test_a_missing_or_wrong_token_is_one_usage_error_at_start(
    pytester: pytest.Pytester, shared: InboxServer, token: str | None
) -> None:
    pytester.makepyfile(TEST_FILE)
    given = [] if token is None else ["--tempinbox-token", token]
    result = pytester.runpytest("--tempinbox-url", shared.api_url, *given)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.stderr.lines if line.startswith("ERROR:")]
    assert len(errors) == 1
    assert "401" in errors[0]
    assert "--tempinbox-token" in errors[0]
    assert "tit_wrong" not in result.stderr.str()
