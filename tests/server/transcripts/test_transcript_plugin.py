"""The plugin's ``--tempinbox-no-transcripts``: the session's server keeps no SMTP conversation."""

from __future__ import annotations

import pytest

_MAIL_TEST = """
import smtplib

import pytest


def send(tempinbox, tempinbox_server):
    with smtplib.SMTP(
        tempinbox_server.smtp_host, tempinbox_server.smtp_port, local_hostname="app.test"
    ) as client:
        client.sendmail("app@example.test", [tempinbox.address], "Subject: hi\\r\\n\\r\\nHello.")
    return tempinbox.wait_for_message()


def test_kept(tempinbox, tempinbox_server):
    lines = send(tempinbox, tempinbox_server).transcript().lines
    assert lines[0].line.startswith("220 ")


def test_not_kept(tempinbox, tempinbox_server):
    message = send(tempinbox, tempinbox_server)
    with pytest.raises(Exception, match="--no-transcripts"):
        message.transcript()
"""


def test_transcripts_are_kept_by_default(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(_MAIL_TEST)
    pytester.runpytest_subprocess("-k", "test_kept").assert_outcomes(passed=1, deselected=1)


def test_the_option_turns_them_off(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(_MAIL_TEST)
    result = pytester.runpytest_subprocess("--tempinbox-no-transcripts", "-k", "test_not_kept")
    result.assert_outcomes(passed=1, deselected=1)


def test_the_ini_key_turns_them_off_too(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\ntempinbox_no_transcripts = true\n")
    pytester.makepyfile(_MAIL_TEST)
    pytester.runpytest_subprocess("-k", "test_not_kept").assert_outcomes(passed=1, deselected=1)
