"""Score a message with SpamAssassin, locally and repeatably, and assert on the score.

:func:`spam_report` runs the ``spamassassin`` program once per message, with
the rules installed with it (Debian's ``spamassassin`` package ships them in
``/usr/share/spamassassin``; no ``sa-update``), no network tests (``--local``),
no Bayes and no auto-learning, and a throwaway home directory, so that it
never reads or writes the user's ``~/.spamassassin`` and the same message gets
the same score each time. Its report template is replaced by one made to be
read back: the total, the threshold, and each rule that fired with its exact
score and description. :func:`assert_spam_score` turns the report into a test
assertion. The program is looked for when a message is checked; where it is
missing, :class:`SpamAssassinMissing` says what to install.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import MailAssertionError, SpamAssassinError, SpamAssassinMissing

__all__ = [
    "SpamAssassinError",
    "SpamAssassinMissing",
    "SpamReport",
    "SpamRule",
    "assert_spam_score",
    "spam_report",
]

_BEGIN = "@@TEMPINBOX-SPAM-REPORT@@"
_END = "@@TEMPINBOX-SPAM-REPORT-END@@"
# Site settings for one run, on top of the installed configuration. Bayes and
# auto-learning would make a score depend on the messages checked before;
# ``report_safe 0`` keeps the message as it is and appends the report below it.
_CONFIG = (
    "use_bayes 0",
    "bayes_auto_learn 0",
    "dns_available no",
    "skip_rbl_checks 1",
    "report_safe 0",
    "report_wrap_width 10000",
    "clear_report_template",
    f"report {_BEGIN}",
    "report score=_SCORE_ required=_REQD_ version=_VERSION_",
    "report tests=_TESTSSCORES(,)_",
    "report _SUMMARY_",
    f"report {_END}",
)
_SUMMARY_LINE = re.compile(r"^\s*-?\d+(?:\.\d+)?\s+(\w+)\s+(.*?)\s*$")
_HEADLINE = re.compile(r"score=(\S+) required=(\S+) version=(\S*)")


@dataclass(frozen=True, slots=True)
class SpamRule:
    """One SpamAssassin rule that fired: its name, the points it added and what it means."""

    name: str
    score: float
    description: str

    def to_json(self) -> dict[str, Any]:
        """Return the JSON object form, ``{"name", "score", "description"}``."""
        return {"name": self.name, "score": self.score, "description": self.description}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SpamRule:
        """Build a rule from its JSON object form."""
        return cls(name=data["name"], score=float(data["score"]), description=data["description"])


@dataclass(frozen=True, slots=True)
class SpamReport:
    """What SpamAssassin made of a message.

    ``score`` is the sum of the scores of the ``rules`` that fired (listed
    biggest score first), to three decimals; SpamAssassin's own headers round
    it to one. ``threshold`` is its ``required_score``, from which it calls a
    message spam (5.0 unless the installed configuration changes it);
    ``version`` is SpamAssassin's.
    """

    score: float
    threshold: float
    rules: tuple[SpamRule, ...]
    version: str | None = None

    @property
    def is_spam(self) -> bool:
        """Whether SpamAssassin calls the message spam: its score reaches the threshold."""
        return self.score >= self.threshold

    def to_json(self) -> dict[str, Any]:
        """Return the JSON object form, ``{"score", "threshold", "rules", "version"}``."""
        return {
            "score": self.score,
            "threshold": self.threshold,
            "rules": [rule.to_json() for rule in self.rules],
            "version": self.version,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SpamReport:
        """Build a report from its JSON object form."""
        return cls(
            score=float(data["score"]),
            threshold=float(data["threshold"]),
            rules=tuple(SpamRule.from_json(rule) for rule in data["rules"]),
            version=data.get("version"),
        )


def spam_report(raw: bytes, *, timeout: float = 60.0, program: str = "spamassassin") -> SpamReport:
    """Score the message ``raw`` with SpamAssassin and return its report.

    ``program`` is the name (looked up on ``PATH``) or path of the
    ``spamassassin`` program. One check takes about a second: the program
    starts afresh each time. Raises :class:`SpamAssassinMissing` where the
    program is not found, and :class:`SpamAssassinError` where it fails or
    takes longer than ``timeout`` seconds.
    """
    found = shutil.which(program)
    if found is None:
        raise SpamAssassinMissing(
            f"SpamAssassin is not installed: no {program!r} program"
            f"{' on PATH' if os.sep not in program else ''}. Install it to check spam "
            "scores: apt-get install spamassassin (Debian, Ubuntu), or the "
            "spamassassin package of your system"
        )
    with tempfile.TemporaryDirectory(prefix="tempinbox-spamassassin-") as home:
        prefs = os.path.join(home, "user_prefs")
        with open(prefs, "w", encoding="utf-8"):
            pass  # empty: the user's own preferences are never read
        command = [found, "--local", "--test-mode", "--nocreate-prefs", f"--prefspath={prefs}"]
        command += [f"--cf={line}" for line in _CONFIG]
        # English descriptions whatever the caller's locale; HOME away from the user's.
        environment = {**os.environ, "HOME": home, "LC_ALL": "C", "LANG": "C"}
        try:
            completed = subprocess.run(
                command, input=raw, capture_output=True, timeout=timeout, env=environment
            )
        except subprocess.TimeoutExpired:
            raise SpamAssassinError(
                f"SpamAssassin did not score the message within {timeout:g} s"
            ) from None
        except OSError as exc:
            raise SpamAssassinError(f"SpamAssassin ({found}) could not be run: {exc}") from exc
    stderr = completed.stderr.decode("utf-8", "replace").strip()
    if completed.returncode != 0:
        raise SpamAssassinError(_failure(found, completed.returncode, stderr))
    return _parse(completed.stdout, stderr)


def assert_spam_score(report: SpamReport, below: float = 5.0) -> None:
    """Fail unless the message's spam score is below ``below``.

    The :class:`~pytest_tempinbox.errors.MailAssertionError` gives the score
    against the limit and lists the rules that fired, biggest score first:
    they are what to change in the mail.
    """
    if report.score < below:
        return
    rules = sorted(report.rules, key=lambda rule: (-rule.score, rule.name))
    width = max((len(_points(rule.score)) for rule in rules), default=0)
    names = max((len(rule.name) for rule in rules), default=0)
    lines = [
        f"  {_points(rule.score):>{width}}  {rule.name:<{names}}  {rule.description}"
        for rule in rules
    ]
    raise MailAssertionError(
        f"expected a spam score below {_points(below)}, found {_points(report.score)} "
        f"(SpamAssassin's own threshold: {_points(report.threshold)}). "
        "The rules that fired, biggest score first:\n" + "\n".join(lines)
    )


def _parse(stdout: bytes, stderr: str) -> SpamReport:
    """Read the report that the template of :data:`_CONFIG` appended to the message."""
    # The last marker: the message itself may quote one.
    begin = stdout.rfind(_BEGIN.encode())
    end = stdout.rfind(_END.encode())
    text = stdout[begin + len(_BEGIN) : end].decode("utf-8", "replace") if 0 <= begin < end else ""
    headline = _HEADLINE.search(text)
    if headline is None:
        detail = f": {_last_line(stderr)}" if stderr else ""
        raise SpamAssassinError(f"SpamAssassin gave no report{detail}")
    shown, threshold, version = headline.groups()
    scores: list[tuple[str, float]] = []
    descriptions: dict[str, str] = {}
    for line in text.splitlines():
        if line.startswith("tests="):
            scores = _scores(line)
        elif summary := _SUMMARY_LINE.match(line):
            descriptions[summary.group(1)] = summary.group(2)
    rules = [SpamRule(name, score, descriptions.get(name, "")) for name, score in scores]
    rules.sort(key=lambda rule: (-rule.score, rule.name))
    total = round(sum(rule.score for rule in rules), 3)
    # A plugin may add a score of its own making (AWL, TxRep): trust SpamAssassin's total then.
    if abs(total - _number(shown, total)) > 0.05:
        total = _number(shown, total)
    return SpamReport(
        score=total,
        threshold=_number(threshold, 5.0),
        rules=tuple(rules),
        version=version or None,
    )


def _scores(line: str) -> list[tuple[str, float]]:
    """The rules of ``tests=NAME=score,NAME=score`` (``tests=none`` when none fired)."""
    listed = line.removeprefix("tests=").strip()
    if not listed or listed == "none":
        return []
    pairs = []
    for item in listed.split(","):
        name, _, score = item.partition("=")
        pairs.append((name.strip(), _number(score, 0.0)))
    return pairs


def _failure(program: str, status: int, stderr: str) -> str:
    if "no rules were found" in stderr:
        return (
            f"SpamAssassin ({program}) has no rules installed: install the spamassassin "
            "package of your system, which ships them, or run sa-update"
        )
    detail = f": {_last_line(stderr)}" if stderr else ""
    return f"SpamAssassin ({program}) failed with exit status {status}{detail}"


def _last_line(text: str) -> str:
    return text.strip().splitlines()[-1] if text.strip() else ""


def _number(text: str, default: float) -> float:
    try:
        return float(text)
    except ValueError:
        return default


def _points(score: float) -> str:
    """A score as SpamAssassin's rules write it: up to three decimals, no trailing zeros."""
    text = f"{score:.3f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text
