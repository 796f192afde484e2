"""What the text around a code-shaped word says of it: its words and its line.

For :mod:`pytest_tempinbox.parsing.codes`, which ranks the words; the words themselves,
in many languages, are in :mod:`pytest_tempinbox.parsing.code_words`, and what its
HTML element says in :mod:`pytest_tempinbox.parsing.code_emphasis`. Standard library
only, no I/O, never raises. Every function reads a bounded window around the
word (a few lines), so ranking stays linear in the text.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable

from .code_words import (
    CJK_UNITS,
    CODE,
    HOLDER,
    IDENT,
    MONEY,
    PHONE,
    PLACE,
    PLACE_SUFFIXES,
    POSTAL,
    PROMO,
    PUNCTUATION,
    UNITS,
    VOCABULARY,
    word_of,
)

__all__ = [
    "alone_on_line",
    "no_word",
    "other_number",
    "words_after",
    "words_before",
]


def _lazy(pattern: str, flags: int = 0) -> Callable[[], re.Pattern[str]]:
    """A regular expression compiled when first needed.

    Most mail needs few of these, and compiling them all would cost several
    milliseconds of import.
    """
    return functools.cache(lambda: re.compile(pattern, flags))


_MONTH = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?"
# What may precede a year that is not a code: "Nov 22, ", "22 November ", "© ".
_BEFORE_YEAR = _lazy(
    rf"(?:{_MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?,?|\d{{1,2}}(?:st|nd|rd|th)?\s+{_MONTH},?"
    r"|©|\(c\)|copyright|(?:©|\(c\)|copyright)\s*\d{4}\s*[-\u2013])\s*\Z",
    re.IGNORECASE,
)
_JOINERS = "-.,:/"
_CURRENCY = "$€£¥₹₽₩¢₺₴"
_AMOUNT_AFTER = _CURRENCY + "%"
_CURRENCY_CODES = ("usd", "eur", "gbp", "chf", "pln", "brl", "rub", "jpy", "cny", "sek")
# A group of an IPv6 address: "2001:db8::1", "fe80::2001".
_IPV6_AFTER = _lazy(r":(?::|[0-9a-fA-F]{1,4}:)")
_IPV6_BEFORE = _lazy(r"(?::|:[0-9a-fA-F]{1,4}):\Z")
# What precedes the offset of a time zone: "10:22:01 -0500", "(GMT+0400)".
_BEFORE_OFFSET = _lazy(r"(?:\d{1,2}:\d{2}(?::\d{2})?|GMT|UTC)\s*\Z", re.IGNORECASE)
_STATE_BEFORE = _lazy(r"[^\W\d_],\s*[A-Z]{2}\s\Z")  # "Springfield, IL 62704"
_CITY_AFTER = _lazy(r" ([A-ZÀ-Þ][^\W\d_]+)(?:[ -]([A-ZÀ-Þ][^\W\d_]+))?\s*(?:[,·|•]|\Z)")
_ADDRESS_SEPARATORS = ("", ",", "·", "|", "•", "-", "\u2013")
_WINDOW = 256  # longer whitespace-free runs are cut here; a code in one is unlikely
_BEFORE = 160  # characters before a word searched for what it is
_AFTER = 80
_PARTS = _lazy("[-'\u2019]")
_WORDS_BEFORE = 16  # words before a code-shaped word looked at, at most
# What the words between a label and a number may be: "Order number: 123", "Ihre
# Bestellnummer lautet 123", "numéro de commande : 123", "订单号: 123".
_NUMBER_WORDS = r"(?:numbers|number|numéro|número|numero|nummer|numer|номер|num|nr|no|n°|nº|id)\.?"
_FILLER = (
    rf"\s|[:#№=(\[\-\u2013\u2014/\uff1a]|号|番号|は|の|是|为|為|{_NUMBER_WORDS}(?!\w)"
    r"|(?:is|ist|lautet|est|es|é|è|jest|was|war|are|of|de|do|da|del|di|du|van|der|des"
    r"|your|ihre|ihr|votre|su|seu|sua|tuo|uw|ваш)(?!\w)"
)
_LABEL_TAIL = _lazy(rf"[^\W\d_]*(?:{_FILLER})*")
_NUMBER_TAIL = _lazy(rf"[^\W\d_]*[\s:#№\-.]*(?:{_NUMBER_WORDS}|#|№|号|番号)(?:{_FILLER})*")
_PHONE_TAIL = _lazy(rf"[^\W\d_]*(?:{_FILLER}|(?:us|at|on|unter|au|al|under|pod|по)(?!\w))*")
_ALONE = " \t*_`\"'()[]<>:.!-\u2013\u2014|"
_WIDE_ENDS = ("\u3002", "\uff01", "\uff1f")  # the full stop and marks of Chinese and Japanese

_NEGATIVE = {  # why a number that a keyword of each kind labels is not a code
    IDENT: 'after "{word}"',
    HOLDER: 'after "{word}"',
    MONEY: 'an amount, after "{word}"',
    PHONE: 'a phone number, after "{word}"',
    POSTAL: 'a postal code, after "{word}"',
    PLACE: 'a postal code, after "{word}"',
    PROMO: 'a coupon, after "{word}"',
}


# --- the words around a word --------------------------------------------------------


def _maybe_keyword(word: str) -> bool:
    """Tell quickly whether a lowercase word may be, or hold, a keyword; most words are not."""
    return (
        word[:3] in VOCABULARY.prefixes
        or not word.isascii()
        or "-" in word
        or "'" in word
        or word.endswith(PLACE_SUFFIXES)
    )


def _keyword(tokens: list[str], index: int, word: str) -> tuple[str, str, str] | None:
    """The keyword at ``tokens[index]``: its kind, its word as written, and what follows it.

    ``word`` is the token in lowercase, punctuation stripped. What follows is
    the rest of the token after the keyword ("s:" after "code" in "codes:"). A
    phrase ending at this token wins over a single word ("zip code" over "code").
    """
    if not word:
        return None
    low = tokens[index].lower()
    lengths = VOCABULARY.phrase_lengths.get(word)
    if lengths is not None:
        for length in lengths:
            start = index + 1 - length
            if start >= 0:
                words = (*(word_of(item) for item in tokens[start:index]), word)
                kind = VOCABULARY.phrases.get(words)
                if kind is not None:
                    phrase = " ".join(item.strip(PUNCTUATION) for item in tokens[start : index + 1])
                    return kind, phrase, low[low.rfind(word) + len(word) :]
    found = _word_keyword(word)
    if found is None and not word.isascii() and max(word) >= "\u3000":
        # Chinese or Japanese: words are not spaced, the last keyword in the run counts.
        matches = VOCABULARY.unspaced.findall(word)
        if matches:
            return VOCABULARY.exact[matches[-1]], matches[-1], low.rpartition(matches[-1])[2]
    if found is None and ("-" in word or "'" in word or "\u2019" in word):
        # "Login-Code", "Bestell-Nr.", "d'ordine": the parts count too, the last first.
        for part in reversed(_PARTS().split(word)):
            found = _word_keyword(part)
            if found is not None:
                break
    if found is None:
        return None
    kind, keyword = found
    return kind, tokens[index].strip(PUNCTUATION), low[low.find(keyword) + len(keyword) :]


def _word_keyword(word: str) -> tuple[str, str] | None:
    """The kind of a word and the keyword in it (itself, or the stem it starts with)."""
    kind = VOCABULARY.exact.get(word)
    if kind is not None:
        return kind, word
    for stem in VOCABULARY.stems.get(word[:3], ()):
        if word.startswith(stem):
            return VOCABULARY.exact[stem], stem
    if word.endswith(PLACE_SUFFIXES):  # "Musterstraße", "Hauptstr", "Kalverstraat"
        return PLACE, word
    return None


def _sentence_start(window: str, start: int, end: int) -> int:
    """Where the last sentence of ``window[start:end]`` starts (``start`` if there is one)."""
    while True:
        cut = max(
            window.rfind(". ", start, end),
            window.rfind("! ", start, end),
            window.rfind("? ", start, end),
        )
        if not window.isascii():
            cut = max(cut, *(window.rfind(mark, start, end) for mark in _WIDE_ENDS))
        if cut < 0:
            return start
        # "Nr. 123" and "St. Louis" end no sentence: the word before a full stop is short.
        word_start = max(window.rfind(" ", start, cut), window.rfind("\n", start, cut)) + 1
        if window[cut] != "." or cut - word_start >= 4 or window[cut - 1 : cut].isdigit():
            return cut + 1
        end = cut


def _region(text: str, start: int, floor: int) -> str:
    """The words before ``text[start]`` that speak of it: its sentence, or the line before.

    The line before counts when the word starts its line ("Your code:" on one
    line, the code on the next).

    Not before ``floor`` (the end of the code-shaped word before this one): a
    label belongs to the first number after it.
    """
    window = text[max(floor, start - _BEFORE) : start]
    newline = window.rfind("\n")
    if newline < 0 or window[newline + 1 :].strip(_ALONE):
        return window[_sentence_start(window, newline + 1, len(window)) :]
    # The word starts its line: the line before (blank lines aside) speaks of it.
    end = len(window[:newline].rstrip())
    previous = window.rfind("\n", 0, end)
    return window[_sentence_start(window, previous + 1, end) :]


def _binds(kind: str, between: str, token: str) -> bool:
    """Tell whether a keyword of a kind other than code labels the number ``between`` words on."""
    if kind == PLACE:
        return token.isdigit() and 4 <= len(token) <= 6
    if kind == PROMO:
        return True
    if kind == HOLDER:
        return _NUMBER_TAIL().fullmatch(between) is not None
    if kind == PHONE:
        return _PHONE_TAIL().fullmatch(between) is not None
    return _LABEL_TAIL().fullmatch(between) is not None  # IDENT, MONEY, POSTAL


def _before(region: str, token: str) -> tuple[str | None, str | None]:
    """What the words before a code-shaped word say: (why it is none, the code word near it).

    The nearest keyword decides; when it is not a code word and does not label
    the number, a code word further back still counts.
    """
    tokens = region.split()
    nearest = True
    for index in range(len(tokens) - 1, max(len(tokens) - _WORDS_BEFORE, 0) - 1, -1):
        word = tokens[index].lower().strip(PUNCTUATION)
        found = _keyword(tokens, index, word) if _maybe_keyword(word) else None
        if found is not None:
            kind, word, rest = found
            if kind == CODE:
                return None, word
            if nearest and _binds(kind, f"{rest} {' '.join(tokens[index + 1 :])}".lower(), token):
                return _NEGATIVE[kind].format(word=word), None
            nearest = False
    return None, None


def words_after(text: str, end: int, near: bool) -> tuple[str | None, str | None]:
    """What follows a code-shaped word says: (why it is none, the code word near it).

    With ``near`` (a code word before it already counts) only a unit is looked for.
    """
    window = text[end : end + _AFTER]
    first = window[:1]
    if first and first in _AMOUNT_AFTER:
        return "an amount", None
    if not window.isascii():
        unit = CJK_UNITS.get(window[1:2] if first == " " else first)
        if unit is not None:
            return unit, None
        for mark in _WIDE_ENDS:
            stop = window.find(mark)
            if stop >= 0:
                window = window[:stop]
    line_end = window.find("\n")
    if line_end >= 0:
        window = window[:line_end]
    if first.isspace():
        unit_word = window.split(None, 1)[:1]
        word = unit_word[0].lower().rstrip(".,;:!?)") if unit_word else ""
        unit = UNITS.get(word)
        if unit is None and word and word[0] in _CURRENCY:
            unit = "an amount"
        if unit is not None:
            return f"{unit} ({word})", None
    if near:
        return None, None
    for mark in (". ", "! ", "? "):
        stop = window.find(mark)
        if stop >= 0:
            window = window[: stop + 1]
    tokens = window.split(None, 12)[:12]
    for index, token in enumerate(tokens):
        word = token.lower().strip(PUNCTUATION)
        found = _keyword(tokens, index, word) if _maybe_keyword(word) else None
        if found is not None:
            if found[0] == PLACE and index < 3 and tokens[0][:1].isupper():
                return f'a street number, before "{found[1]}"', None
            return None, found[1] if found[0] == CODE else None
    return None, None


def alone_on_line(text: str, start: int, end: int) -> bool:
    """Tell whether ``text[start:end]`` is alone on its line (markup and colons aside)."""
    line_start = text.rfind("\n", max(start - _BEFORE, 0), start) + 1
    if not line_start and start > _BEFORE:
        return False
    line_end = text.find("\n", end, end + _AFTER)
    if line_end < 0:
        if len(text) > end + _AFTER:
            return False
        line_end = len(text)
    return not text[line_start:start].strip(_ALONE) and not text[end:line_end].strip(_ALONE)


def no_word(text: str, start: int, end: int, token: str, letters: bool = False) -> bool:
    """Tell whether a code-shaped word is no word of its own, so no candidate at all.

    Of the wrong length, or part of a URL, an address, a path, a decimal, a
    time or a numeric date. With ``letters``, a word of letters alone may be
    one (``CiHcjgZI``), but not one touching ``+`` or ``=`` (base64).
    """
    digits = (
        token.replace(" ", "").replace("-", "") if len(token) > 10 or not token.isalnum() else token
    )
    if digits.isdigit():
        if len(digits) > 8 or (len(digits) < 4):
            return True
        joinable = str.isdigit
    elif len(digits) < 6 or (token == digits and digits.isalpha() and not letters):
        return True
    else:
        joinable = str.isalnum
    before = text[start - 1] if start > 0 else " "
    after = text[end] if end < len(text) else " "
    if "/" in (before, after) or (letters and ("+" in (before, after) or after == "=")):
        return True  # a path segment or a numeric date; base64
    if before in _JOINERS and start > 1 and joinable(text[start - 2]):
        return True
    if after in _JOINERS and end + 1 < len(text) and joinable(text[end + 1]):
        return True
    if before.isspace() and (after.isspace() or after in ".,;:!?)"):
        return False  # a chunk of its own, give or take a full stop: no URL, no address
    left = text[max(start - _WINDOW, 0) : start]
    right = text[end : end + _WINDOW]
    head = left.rsplit(None, 1)[-1] if left and not left[-1].isspace() else ""
    tail = right.split(None, 1)[0] if right and not right[0].isspace() else ""
    chunk = head + token + tail
    return "://" in chunk or "@" in chunk or chunk[:4].lower() == "www."


def _short_group(text: str) -> bool:
    """Tell whether ``text`` starts with a space and a group of 1-4 digits ("+49 30 1234567")."""
    if text[:1] != " " or not text[1:2].isdigit():
        return False
    return len(text) - len(text[1:].lstrip("0123456789")) - 1 <= 4  # 5 digits fill the window


def other_number(text: str, start: int, end: int, token: str, floor: int) -> str | None:
    """Why a code-shaped word is a number of another kind, judged by its neighbours."""
    if not token.isdigit():
        return None
    before = text[start - 1] if start > 0 else " "
    after = text[end : end + 1]
    if before in _CURRENCY:
        return "an amount"
    if before == " " and start >= 2:
        previous = text[start - 2]
        if previous in _CURRENCY or text[max(start - 5, 0) : start - 1].lower().endswith(
            _CURRENCY_CODES
        ):
            return "an amount"
        if previous.isdigit() and _short_group(text[max(start - 6, floor) : start][::-1]):
            return "part of a longer number"
    if after == " " and _short_group(text[end : end + 6]):
        return "part of a longer number"
    if (before == ":" and _IPV6_BEFORE().search(text, max(start - 8, 0), start)) or (
        after == ":" and _IPV6_AFTER().match(text, end, end + 8)
    ):
        return "an IP address"
    if len(token) > 5:
        return None
    if len(token) == 4:
        if before in "+-" and _BEFORE_OFFSET().search(text, max(start - 16, 0), start - 1):
            return "a time zone offset"
        written = _BEFORE_YEAR().search(text, max(start - 32, 0), start)
        if written is not None:
            return "a date" if written.group()[:1].isalnum() else "a year"
    elif _STATE_BEFORE().search(text, max(start - 32, 0), start):
        return "a postal code"
    city = _CITY_AFTER().match(text[end : end + 40].split("\n", 1)[0])
    if city is not None:
        line_start = text.rfind("\n", max(start - 40, 0), start) + 1
        # "10115 Berlin", "Example SA · 75001 Paris", but not "1600 Main Street"
        if text[line_start:start].rstrip()[-1:] in _ADDRESS_SEPARATORS and not any(
            _word_keyword(word.lower()) for word in city.groups() if word
        ):
            return "a postal code"
    return None


def words_before(text: str, start: int, floor: int, token: str) -> tuple[str | None, str | None]:
    """What the words before ``text[start:]`` say: (why it is no code, the code word near it).

    ``floor`` is the end of the code-shaped word before this one: a label
    belongs to the first number after it.
    """
    return _before(_region(text, start, floor), token)
