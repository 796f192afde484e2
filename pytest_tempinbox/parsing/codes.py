"""One-time codes: the code-shaped words of a message, ranked most likely first.

Standard library only, no I/O, and never raises on a message's text. How a
word is judged is told in :func:`find_codes`; what its words, its line and its
HTML element say is read by :mod:`pytest_tempinbox.parsing.code_context`.
:func:`pick_code` is :meth:`Message.code <pytest_tempinbox.models.Message.code>`.

The context of a word is read in a window of a few lines around it, so the
work grows linearly with the text, and the loop over words honours a
``deadline`` and ``clock`` as :func:`pytest_tempinbox.parsing.budget.late` does.
"""

from __future__ import annotations

import heapq
import re
import time

from .budget import CLOCK_EVERY, Clock, late
from .code_context import (
    alone_on_line,
    no_word,
    other_number,
    words_after,
    words_before,
)
from .code_emphasis import element_emphasis, emphasised
from .code_shapes import MIXED_TOKEN, beside_base64, code_word, random_looking

__all__ = ["Candidate", "find_codes", "pick_code", "rank_codes"]


# Letters and digits a code may not touch. Chinese and Japanese characters are
# not among them: "验证码123456" holds the code 123456.
_ALNUM = "0-9A-Za-z_\u00c0-\u024f\u0370-\u04ff"
# A code-shaped word: 4-10 capitals and digits with a digit somewhere, or groups
# of them joined by "-" (or digit groups joined by a space: "123 456"). It starts
# with two characters of the class, so that the scan skips other characters, and
# the capital of every word, in C.
_TOKEN = re.compile(
    rf"[0-9A-Z](?=[0-9A-Z])(?<![{_ALNUM}].)(?=[0-9A-Z]*[0-9-])"
    r"(?:(?<=\d)\d{2,3}([ -])\d{3,4}(?:\1\d{3,4})?"
    r"|[0-9A-Z]{2,4}(?:-[0-9A-Z]{3,5}){1,3}"
    r"|[0-9A-Z]{3,9})"
    rf"(?![{_ALNUM}])"
)
_LOOKED_UP = 8  # candidates (and occurrences of each) looked up in the HTML one by one

# The weight of each kind of evidence; a word's score is the sum over the kinds it has.
_NEAR, _ALONE_ON_LINE, _EMPHASISED, _SUBJECT = "near", "alone", "emphasised", "subject"
_WEIGHTS = {_NEAR: 3, _ALONE_ON_LINE: 2, _EMPHASISED: 2, _SUBJECT: 1}


class Candidate:
    """One code-shaped word of a message, with why it is (or is not) likely a code.

    ``reasons`` maps each kind of evidence to the words shown for it (``next
    to "code"``); ``score`` is their weight. ``excluded`` says why the word is
    not a code at all ("a year"), or is None.
    """

    __slots__ = ("code", "excluded", "kept", "mixed", "order", "reasons", "score")

    def __init__(self, code: str, order: int, mixed: bool = False) -> None:
        self.code = code
        self.order = order
        self.mixed = mixed  # has small letters: a code only when something says so
        self.reasons: dict[str, str] = {}
        self.score = 0
        self.excluded: str | None = None
        self.kept = False  # an occurrence of it is not excluded

    def why(self) -> str:
        """The reasons for the score in words, or why it is no code."""
        if self.excluded is not None:
            return self.excluded
        return ", ".join(self.reasons.values()) or "nothing around it says code"

    def __repr__(self) -> str:
        return f"<Candidate {self.code!r} {self.score}: {self.why()}>"


# --- ranking -----------------------------------------------------------------------


def _occurrence(
    candidate: Candidate, text: str, start: int, end: int, floor: int, in_subject: bool
) -> None:
    """Judge one occurrence of a code-shaped word, adding to what is known of it.

    A word is excluded only when every occurrence of it is.
    """
    token = candidate.code
    excluded = other_number(text, start, end, token, floor)
    near = None
    if excluded is None:
        excluded, near = words_before(text, start, floor, token)
    if excluded is None:
        excluded, after_near = words_after(text, end, near is not None)
        near = near or after_near
    if excluded is None and near is None:
        if len(token) == 4 and token[:2] in ("19", "20"):
            excluded = "a year"
        elif text[start - 1 : start] == "#":
            excluded = 'after "#"'  # "#4821": an issue, an order, a colour
    if excluded is not None:
        if not candidate.kept and candidate.excluded is None:
            candidate.excluded = excluded
        return
    candidate.kept = True
    candidate.excluded = None
    reasons = candidate.reasons
    if near is not None:
        if _NEAR not in reasons:
            reasons[_NEAR] = f'next to "{near}"'
        if in_subject:
            reasons[_SUBJECT] = "in the subject"
    if _ALONE_ON_LINE not in reasons and alone_on_line(text, start, end):
        reasons[_ALONE_ON_LINE] = "alone on its line"


def rank_codes(
    subject: str,
    body: str,
    html: str | None = None,
    *,
    deadline: float | None = None,
    clock: Clock = time.monotonic,
) -> list[Candidate]:
    """Return every code-shaped word of a message, most likely code first.

    ``body`` is the text body, or the HTML's visible text when there is no text
    part; ``html`` (the HTML body), when given, tells which words are set apart
    by their element. Words excluded as numbers of another kind come last,
    with ``excluded`` set. See :func:`find_codes`.
    """
    candidates: dict[str, Candidate] = {}
    count = 0
    for text, in_subject in ((subject, True), (body, False)):
        floor = 0
        matches = heapq.merge(
            _TOKEN.finditer(text), MIXED_TOKEN.finditer(text), key=lambda match: match.start()
        )
        for match in matches:
            count += 1
            if not count % CLOCK_EVERY and late(count, deadline, clock):
                break
            start, end = match.span()
            token = match.group()
            mixed = match.re is MIXED_TOKEN
            if mixed and (
                not random_looking(token)
                or code_word(token)
                or no_word(text, start, end, token, letters=True)
                or beside_base64(text, start, end)
            ):
                continue  # a word among words: the words before it still count for the next
            if not mixed and (no_word(text, start, end, token) or code_word(token)):
                floor = end
                continue
            candidate = candidates.get(token)
            if candidate is None:
                candidate = candidates[token] = Candidate(token, len(candidates), mixed)
            _occurrence(candidate, text, start, end, floor, in_subject)
            floor = end
    kept = [item for item in candidates.values() if item.excluded is None]
    if html and kept:
        _emphasise(kept, html, deadline, clock)
    ranked = []
    for candidate in kept:
        candidate.score = sum(map(_WEIGHTS.__getitem__, candidate.reasons))
        # A grouped word ("123 456", "ABCD-EFGH"), or one with small letters, is a code
        # only when something says so.
        if candidate.score or not (
            candidate.mixed or " " in candidate.code or "-" in candidate.code
        ):
            ranked.append(candidate)
    if len(ranked) > 1:
        ranked.sort(key=_rank)
    if len(kept) < len(candidates):
        ranked += [item for item in candidates.values() if item.excluded is not None]
    return ranked


def _rank(candidate: Candidate) -> tuple[int, int]:
    return -candidate.score, candidate.order


def _emphasise(kept: list[Candidate], html: str, deadline: float | None, clock: Clock) -> None:
    """Add the emphasis of the HTML to the candidates whose whole element stands out."""
    looked_up = kept
    if len(kept) > _LOOKED_UP:
        # Many candidates: one pass over the HTML costs less than looking each one up.
        # That pass reads capitals and digits only; words in mixed case are few, and
        # are looked up one by one.
        standing_out = emphasised(html, deadline, clock)
        for candidate in kept:
            why = standing_out.get(candidate.code)
            if why is not None:
                candidate.reasons[_EMPHASISED] = f"emphasised ({why})"
        looked_up = [candidate for candidate in kept if candidate.mixed][:_LOOKED_UP]
    for candidate in looked_up:
        code = candidate.code
        start = html.find(code)
        for _ in range(_LOOKED_UP):
            if start < 0:
                break
            end = start + len(code)
            low = max(start - 200, 0)
            before = html[low:start].rstrip()
            if before[-1:] == ">" and html[end : end + 200].lstrip()[:2] == "</":
                why = element_emphasis(html, low + len(before) - 1)  # at that ">"
                if why is not None:
                    candidate.reasons[_EMPHASISED] = f"emphasised ({why})"
                    break
            start = html.find(code, end)


def find_codes(
    subject: str,
    body: str,
    html: str | None = None,
    *,
    deadline: float | None = None,
    clock: Clock = time.monotonic,
) -> list[str]:
    """Return the likely one-time codes of a message, unique, most likely first.

    ``body`` is the text body, or the HTML's visible text when there is no
    text part; ``html``, when given, only tells which words stand out.

    A code is a word (not touching another letter or digit; Chinese and
    Japanese characters do not count as letters here) that is 4-8 ASCII digits,
    or 6-10 capitals and digits with at least one of each; or, when its
    context says it is a code, digit groups joined by one space or dash
    (``123 456``, ``1234-5678``) or groups of capitals and digits joined by
    dashes (``ABCD-EFGH``), reported as written. Not words, so never codes:
    anything in a chunk holding ``://`` or ``@`` or starting ``www.``, words
    next to ``/``, and words joined by ``-.,:`` to more digits or letters
    (``3.14159``, ``12:30``, ``2026-11-22``, ``INV-AB12CD``).

    Left out as numbers of another kind: years (``1900``-``2099``, unless a
    code word is next to it), written dates, amounts (a currency sign or code
    before or after, "total", "Betrag"), phone numbers ("call", "Tel.", digit
    groups), postal codes (after a street or "zip", "Springfield, IL 62704",
    "10115 Berlin"), durations and counts ("15 minutes", "3 attempts", "24
    Stunden", "10分钟"), coupons, and numbers labelled as an order, invoice,
    reference, ticket, account or customer number ("Order #", "Bestellnummer
    lautet", "numéro de commande :").

    The rest are ordered by score, then by first appearance (the subject
    first): next to a word meaning "code" (before it in its sentence or on the
    line before, or after it in its sentence) 3; alone on its line 2; the whole
    text of an HTML element that stands out (``<strong>``, ``<b>``,
    ``<h1>``-``<h3>``, ``<code>``, ``<pre>``, ``<kbd>``, or a large font size,
    letter spacing, a monospace font or bold in its inline style) 2; next to a
    code word in the subject, 1 more.
    """
    return [
        item.code
        for item in rank_codes(subject, body, html, deadline=deadline, clock=clock)
        if item.excluded is None
    ]


# --- the one code ------------------------------------------------------------------

_SHAPE = "4-8 digits, 6-10 capitals and digits, or 6-10 mixed-case letters and digits"
_LISTED = 10  # candidates listed in a failure at most


def _listed(candidates: list[Candidate], with_reasons: bool = True) -> str:
    shown = [
        f"{item.code!r} ({item.why()})" if with_reasons else repr(item.code)
        for item in candidates[:_LISTED]
    ]
    if len(candidates) > _LISTED:
        shown.append(f"and {len(candidates) - _LISTED} more")
    return ", ".join(shown)


def _body(text: str | None, html: str | None) -> str:
    if text is not None:
        return text
    if html:
        from .html import html_text  # html.parser and its patterns: only for HTML mail

        return html_text(html)
    return ""


def pick_code(
    subject: str,
    text: str | None,
    html: str | None,
    pattern: str | re.Pattern[str] | None = None,
    *,
    about: str,
) -> str:
    """Return the one code of a message's subject and bodies; see :meth:`Message.code`.

    ``about`` names the message in a failure (:func:`.failures.about`). Raises
    :class:`~pytest_tempinbox.errors.MailAssertionError` saying what the
    message held instead.
    """
    __tracebackhide__ = True
    from ..errors import MailAssertionError

    if pattern is not None:
        return _pick_by_pattern(subject, text, html, pattern, about)
    ranked = rank_codes(subject, _body(text, html), html)
    kept = [item for item in ranked if item.excluded is None]
    excluded = [item for item in ranked if item.excluded is not None]
    if kept and kept[0].score and (len(kept) == 1 or kept[1].score < kept[0].score):
        return kept[0].code
    if kept and kept[0].score:
        tied = [item for item in kept if item.score == kept[0].score]
        raise MailAssertionError(
            f"{len(tied)} codes in {about} are equally likely: {_listed(tied)};"
            " pass pattern=... to pick one"
        )
    if kept:
        listed = _listed(kept, with_reasons=False)
        if len(kept) > 1:
            found = f"{len(kept)} words look like codes ({listed}), but none is"
        else:
            found = f"1 word looks like a code ({listed}), but it is not"
        found += (
            ' next to a word such as "code", alone on its line or emphasised;'
            " pass pattern=... to pick one"
        )
    elif excluded:
        found = f"the words that look like codes ({_SHAPE}) are not: {_listed(excluded)}"
    else:
        found = f"no word in it looks like a code ({_SHAPE})"
    raise MailAssertionError(f"no one-time code in {about}: {found}.")


def _pick_by_pattern(
    subject: str, text: str | None, html: str | None, pattern: str | re.Pattern[str], about: str
) -> str:
    __tracebackhide__ = True
    from ..errors import MailAssertionError
    from .failures import shorten
    from .match import collapse_space, searchable_text

    compiled = re.compile(pattern) if isinstance(pattern, str) else pattern
    found: dict[str, None] = {}
    for searched in (subject, *searchable_text(text, html)):
        for match in compiled.finditer(searched):
            value = match.group(1) if compiled.groups else match.group()
            if value is not None:
                found.setdefault(value, None)
    if len(found) == 1:
        return next(iter(found))
    shown = f"'{shorten(compiled.pattern, 80)}'"  # as written in the test, backslashes single
    if not found:
        codes = find_codes(subject, collapse_space(_body(text, html)), html)
        hint = f"; the likely codes in it: {', '.join(map(repr, codes[:_LISTED]))}" if codes else ""
        raise MailAssertionError(
            f"pattern {shown} matches nothing in {about}"
            f" (searched its subject, text body and HTML's visible text){hint}."
        )
    values = [repr(shorten(value, 40)) for value in list(found)[:_LISTED]]
    if len(found) > _LISTED:
        values.append(f"and {len(found) - _LISTED} more")
    raise MailAssertionError(
        f"pattern {shown} matches {len(found)} different strings in {about}: {', '.join(values)}."
    )
