"""Which words may be one-time codes by their shape alone, and which only with evidence.

Data and small tests for :mod:`pytest_tempinbox.parsing.codes`; standard library
only, no I/O.

Capitals and digits (``C6XLDFTM``, ``482913``) are code-shaped whatever surrounds
them. Words with small letters are codes too: Keycloak's email verification by
code sends 8 letters and digits of both cases (``CiHcjgZI``), Hanko's
alphanumeric passcodes 6 (``pKZXcm``). Most words with small letters are words,
though, so such a word counts only when it does not read as one
(:func:`random_looking`) and the evidence that ranks codes holds: a code word
next to it, its own line, or an element that sets it apart.
"""

from __future__ import annotations

import re

from .code_words import CODE, PUNCTUATION, VOCABULARY

__all__ = ["MIXED_TOKEN", "beside_base64", "code_word", "random_looking"]

#: 6-10 ASCII letters and digits with a small letter among them, not touching
#: another letter or digit (nor an underscore or a letter with an accent).
MIXED_TOKEN = re.compile(
    r"(?<![0-9A-Za-z_\u00c0-\u024f\u0370-\u04ff])"
    r"(?=[0-9A-Z]*[a-z])[0-9A-Za-z]{6,10}"
    r"(?![0-9A-Za-z_\u00c0-\u024f\u0370-\u04ff])"
)
_SMALL_RUNS = re.compile(r"[a-z]+")
# The shapes of words written with small letters (see random_looking).
_WORD_SHAPES = (
    r"[a-z]+",
    r"[A-Z][a-z]+",
    r"[a-z]+[A-Z](?:[a-z]{2,}|d)",
    r"[a-z]{2,}[A-Z]{2,3}",
    r"[A-Z](?:[a-z]{2,}|[aeiouyc])(?:[A-Z][a-z]{2,}){0,2}(?:[A-Z][a-z]{2,}|In|On|Up|Id|Me|Us)",
    r"[A-Z][a-z]{2,}[A-Z]{2,3}",
    r"[A-Z]{3,}[a-z]{3,}",
)
_VOWELS = frozenset("aeiou")
_HEX = frozenset("0123456789abcdefABCDEF")
_CLUSTER = re.compile(r"[^aeiouy]{3}")  # three consonants at the start of a run
_STARTS = ("str", "spr", "scr", "spl", "thr", "chr", "sch", "phr", "shr", "chw")
_WORD_SHAPE = re.compile("|".join(f"(?:{shape})" for shape in _WORD_SHAPES))

_BASE64_LINE = re.compile(r"[A-Za-z0-9+/=_-]{40,}")
_NEIGHBOURS = 2048  # characters looked at on either side for the lines around a word


def code_word(token: str) -> bool:
    """Tell whether ``token`` is itself a word meaning "code" (``ONE-TIME``, ``Passcode``)."""
    word = token.strip(PUNCTUATION).lower()
    if VOCABULARY.exact.get(word) == CODE:
        return True
    return any(
        word.startswith(stem) and VOCABULARY.exact[stem] == CODE
        for stem in VOCABULARY.stems.get(word[:3], ())
    )


def random_looking(word: str) -> bool:
    """Tell whether a word with small letters reads as random characters rather than a word.

    A word, maybe with digits at its end, is one of: small letters (``password``), a
    capital and small letters (``Welcome``), small letters and then a capitalised
    word or an acronym (``iPhone``, ``camelCase``, ``userId``, ``macOS``), two or
    three capitalised words (``GitHub``, ``McDonald``, ``YouTube``, ``DeadBeef``), a
    capitalised word and an acronym (``PostgreSQL``), or an acronym and small
    letters (``SQLite``).
    Anything else reads as random (``CiHcjgZI``, ``pKZXcm``, ``a8Kd2LmQ``): a few
    random codes read as words and are missed, never taken for another code.
    ``0x`` starts a hexadecimal number, never a code.
    """
    if word[:2] in ("0x", "0X") and all(char in _HEX for char in word[2:]):
        return False
    letters = word.rstrip("0123456789")
    if not letters.isalpha():
        return bool(letters)  # digits between letters
    if not _WORD_SHAPE.fullmatch(letters):
        return True
    for match in _SMALL_RUNS.finditer(letters):
        run = match.group()
        if len(run) < 3:
            continue
        if not _VOWELS & set(run):
            return True
        # After a capital vowel the run is the middle of a word: "Android", "Instagram".
        after_vowel = letters[match.start() - 1 : match.start()] in ("A", "E", "I", "O", "U")
        if not after_vowel and _CLUSTER.match(run) and not run.startswith(_STARTS):
            return True
    return False


def beside_base64(text: str, start: int, end: int) -> bool:
    """Tell whether the line of ``text[start:end]``, or the one before or after it, is base64."""
    low = max(start - _NEIGHBOURS, 0)
    high = end + _NEIGHBOURS
    line_start = text.rfind("\n", low, start) + 1 or low
    before_start = text.rfind("\n", low, max(line_start - 1, low)) + 1 or low
    line_end = text.find("\n", end, high)
    line_end = min(len(text), high) if line_end < 0 else line_end
    after_end = text.find("\n", line_end + 1, high)
    after_end = min(len(text), high) if after_end < 0 else after_end
    for line in text[before_start:after_end].splitlines():
        if _BASE64_LINE.fullmatch(line.strip()):
            return True
    return False
