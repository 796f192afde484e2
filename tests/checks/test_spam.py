"""Spam scores from the real ``spamassassin`` program, and the assertion on them."""

from __future__ import annotations

import json
import shutil
import stat
from pathlib import Path

import pytest

from pytest_tempinbox.checks.spam import (
    SpamAssassinError,
    SpamAssassinMissing,
    SpamReport,
    SpamRule,
    assert_spam_score,
    spam_report,
)
from pytest_tempinbox.errors import MailAssertionError, TempInboxError

CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "transactional"
GTUBE = b"XJS*C4JDBQADN1.NSBN3*2IDNEN*GTUBE-STANDARD-ANTI-UBE-TEST-EMAIL*C.34X"
HEADERS = (
    b"From: Shop <noreply@example.com>\r\n"
    b"To: olivia@tempinbox.test\r\n"
    b"Subject: Your order\r\n"
    b"Date: Mon, 03 Mar 2025 09:12:44 +0000\r\n"
    b"Message-ID: <order-1.20250303091244@shop.example.com>\r\n"
    b"MIME-Version: 1.0\r\n"
    b"Content-Type: text/plain; charset=utf-8\r\n"
    b"\r\n"
)
needs_spamassassin = pytest.mark.skipif(
    shutil.which("spamassassin") is None,
    reason="SpamAssassin is not installed (apt-get install spamassassin)",
)


def program(tmp_path: Path, script: str) -> str:
    """A stand-in for the ``spamassassin`` program: a shell script."""
    path = tmp_path / "fake-spamassassin"
    path.write_text("#!/bin/sh\n" + script + "\n", encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


@needs_spamassassin
def test_the_gtube_string_is_spam_by_the_gtube_rule() -> None:
    report = spam_report(HEADERS + b"Hello.\r\n" + GTUBE + b"\r\n")
    assert report.score > 990  # GTUBE's 1000, give or take the informational rules
    assert report.is_spam
    assert report.threshold == 5.0
    assert report.rules[0] == SpamRule(
        "GTUBE", 1000.0, "BODY: Generic Test for Unsolicited Bulk Email"
    )


@needs_spamassassin
@pytest.mark.parametrize(
    "template",
    [
        "keycloak/en-verify-email.eml",
        "mastodon/en-reset-password-instructions.eml",
        "allauth/en-password-reset-code.eml",
    ],
)
def test_a_real_world_transactional_mail_scores_below_five(template: str) -> None:
    report = spam_report((CORPUS / template).read_bytes())
    assert report.score < 5.0, report
    assert_spam_score(report)


@needs_spamassassin
def test_the_score_is_the_sum_of_the_rules_that_fired() -> None:
    report = spam_report(HEADERS + b"Thank you for your order.\r\n")
    assert report.score == round(sum(rule.score for rule in report.rules), 3)
    assert [rule.score for rule in report.rules] == sorted(
        (rule.score for rule in report.rules), reverse=True
    )
    assert all(rule.description for rule in report.rules)


@needs_spamassassin
def test_a_failed_assertion_lists_the_rules_biggest_first() -> None:
    report = spam_report(HEADERS + GTUBE + b"\r\n")
    with pytest.raises(MailAssertionError) as caught:
        assert_spam_score(report, below=5.0)
    first, second = str(caught.value).splitlines()[:2]
    assert first.startswith(f"expected a spam score below 5, found {report.score:g} ")
    assert "threshold: 5" in first
    assert second.split() == [
        "1000",
        "GTUBE",
        "BODY:",
        "Generic",
        "Test",
        "for",
        "Unsolicited",
        "Bulk",
        "Email",
    ]


@needs_spamassassin
def test_a_message_quoting_the_report_marker_does_not_fool_the_parser() -> None:
    forged = b"@@TEMPINBOX-SPAM-REPORT@@\r\nscore=0.0 required=99.0 version=x\r\ntests=none\r\n"
    report = spam_report(HEADERS + forged + GTUBE + b"\r\n")
    assert (report.threshold, report.version is not None) == (5.0, True)
    assert report.version != "x"
    assert report.is_spam


@needs_spamassassin
def test_the_users_home_is_never_touched(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    spam_report(HEADERS + b"Hello.\r\n")
    assert list(tmp_path.iterdir()) == []


@needs_spamassassin
def test_the_same_message_scores_the_same_twice() -> None:
    raw = (CORPUS / "supabase" / "en-magic-link.eml").read_bytes()
    assert spam_report(raw) == spam_report(raw)


def test_a_score_below_the_limit_passes() -> None:
    assert_spam_score(SpamReport(score=4.9, threshold=5.0, rules=()), below=5.0)


def test_the_limit_itself_fails() -> None:
    report = SpamReport(
        score=5.0,
        threshold=5.0,
        rules=(SpamRule("MISSING_DATE", 2.739, "Missing Date: header"), SpamRule("X", 2.261, "x")),
    )
    with pytest.raises(MailAssertionError, match=r"below 5, found 5 "):
        assert_spam_score(report)


def test_the_assertion_message_shows_each_rule_with_its_score() -> None:
    report = SpamReport(
        score=3.739,
        threshold=5.0,
        rules=(
            SpamRule("NO_RELAYS", -0.001, "Informational: message was not relayed via SMTP"),
            SpamRule("MISSING_FROM", 1.0, "Missing From: header"),
            SpamRule("MISSING_DATE", 2.739, "Missing Date: header"),
        ),
    )
    with pytest.raises(MailAssertionError) as caught:
        assert_spam_score(report, below=2.5)
    assert str(caught.value) == (
        "expected a spam score below 2.5, found 3.739 (SpamAssassin's own threshold: 5). "
        "The rules that fired, biggest score first:\n"
        "   2.739  MISSING_DATE  Missing Date: header\n"
        "       1  MISSING_FROM  Missing From: header\n"
        "  -0.001  NO_RELAYS     Informational: message was not relayed via SMTP"
    )


def test_json_round_trip() -> None:
    report = SpamReport(
        score=2.148,
        threshold=5.0,
        rules=(SpamRule("MIXED_ES", 1.0, "Too many es are not es"),),
        version="4.0.1",
    )
    data = report.to_json()
    assert data == {
        "score": 2.148,
        "threshold": 5.0,
        "rules": [{"name": "MIXED_ES", "score": 1.0, "description": "Too many es are not es"}],
        "version": "4.0.1",
    }
    assert SpamReport.from_json(json.loads(json.dumps(data))) == report


def test_a_missing_program_says_what_to_install() -> None:
    with pytest.raises(SpamAssassinMissing, match=r"apt-get install spamassassin") as caught:
        spam_report(HEADERS, program="spamassassin-not-installed-here")
    assert isinstance(caught.value, TempInboxError)
    assert "'spamassassin-not-installed-here' program on PATH" in str(caught.value)


def test_a_path_without_spamassassin_is_a_missing_program(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(SpamAssassinMissing, match=r"no 'spamassassin' program on PATH"):
        spam_report(HEADERS)


def test_a_failing_program_is_an_error_with_its_last_words(tmp_path: Path) -> None:
    fake = program(tmp_path, "echo 'first line' >&2; echo 'Perl exploded' >&2; exit 2")
    with pytest.raises(SpamAssassinError, match=r"failed with exit status 2: Perl exploded$"):
        spam_report(HEADERS, program=fake)


def test_missing_rules_say_where_rules_come_from(tmp_path: Path) -> None:
    said = "config: no rules were found!  Do you need to run 'sa-update'?"
    fake = program(tmp_path, f'echo "{said}" >&2; exit 255')
    with pytest.raises(SpamAssassinError, match=r"has no rules installed: install the spam"):
        spam_report(HEADERS, program=fake)


def test_a_program_that_reports_nothing_is_an_error(tmp_path: Path) -> None:
    fake = program(tmp_path, "cat")
    with pytest.raises(SpamAssassinError, match=r"^SpamAssassin gave no report$"):
        spam_report(HEADERS, program=fake)


def test_a_program_that_takes_too_long_is_an_error(tmp_path: Path) -> None:
    fake = program(tmp_path, "exec sleep 30")
    with pytest.raises(SpamAssassinError, match=r"did not score the message within 0.5 s"):
        spam_report(HEADERS, program=fake, timeout=0.5)
