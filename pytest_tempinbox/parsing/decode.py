"""Text decoding for the parser: charsets, surrogates, encoded words, base64.

Strings from the ``compat32`` parser come in surrogateescape'd, in declared
charsets that may lie, and with RFC 2047 encoded words; :func:`clean`,
:func:`to_text` and :func:`header_text` make text of them that survives
``.encode("utf-8")``. What they find broken is noted on the parse's
:class:`~pytest_tempinbox.parsing.budget.ParseRun`, whose clock stops the
decoding of a header with very many encoded words. Standard library only and
no I/O.
"""

from __future__ import annotations

import binascii
import codecs
import functools
import re
from encodings import normalize_encoding

from .budget import ParseRun

__all__ = [
    "UUENCODINGS",
    "b64decode",
    "clean",
    "decode_words",
    "header_text",
    "slow",
    "to_text",
    "unfold",
    "uudecode",
]

# --- text: surrogates, charsets, encoded words --------------------------------

_ESCAPED_TO_LATIN1 = {0xDC00 + byte: byte for byte in range(0x80, 0x100)}


@functools.cache
def _patterns() -> tuple[re.Pattern[str], re.Pattern[str]]:
    # Compiled on first need (these ranges take milliseconds): surrogates that
    # never stood for a byte, and text that is non-ASCII but not an escaped byte.
    return re.compile("[\ud800-\udc7f\udd00-\udfff]"), re.compile("[\x80-\ud7ff\ue000-\U0010ffff]")


def clean(text: str) -> str:
    """Text safe to encode as UTF-8: escaped bytes read as UTF-8 where they are, else latin-1."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        pass
    else:
        return text
    # Bytes the ASCII-based parser could not read come back surrogateescape'd
    # (U+DC80-U+DCFF): raw UTF-8 (RFC 6532) headers, or undeclared 8-bit text.
    # Their UTF-8 sequences decode as such and any other byte as latin-1, at C
    # speed: a Python callback per run of bytes takes seconds on a 10 MB header.
    foreign_surrogates, decoded_text = _patterns()
    text = foreign_surrogates.sub("\ufffd", text)
    data = text.encode("utf-8", "surrogateescape")
    decoded = data.decode("utf-8", "surrogateescape")
    if not decoded_text.search(decoded):  # no UTF-8 at all: every byte stands for itself
        return data.decode("latin-1")
    return decoded.translate(_ESCAPED_TO_LATIN1)  # both: slower, but rare


def _undeclared_8bit(text: str) -> bool:
    """Tell whether text from the ASCII-based parser holds bytes that are not UTF-8."""
    try:
        text.encode("utf-8", "surrogateescape").decode("utf-8")
    except UnicodeError:
        return True
    return False


# Quadratic time: 400 KB of body declared "punycode" take seconds to decode.
_SLOW_CODECS = frozenset({"punycode"})
# Mail labelled with a legacy CJK charset often holds characters of its Microsoft
# superset (GBK's in "gb2312" text, UHC's in "euc-kr"), which the strict codec
# rejects; the WHATWG Encoding Standard decodes these labels with the superset.
# Tried only when the declared charset fails, so that valid text reads as before.
_SUPERSETS = {
    "gb2312": "gb18030",
    "gbk": "gb18030",
    "euc_kr": "cp949",
    "shift_jis": "cp932",
    "big5": "big5hkscs",
}
# A text that is not valid UTF-8 keeps its UTF-8 sequences only if its other
# bytes come in fewer runs than this; else it is read as latin-1, as before.
_MAX_FOREIGN_RUNS = 4096
_LATIN1 = "latin-1"
_UTF8_ELSE_LATIN1 = "UTF-8, its other bytes as latin-1"


# Charset names that only some of the supported Pythons know, so that text reads
# the same on each: "windows-31j", IANA's name for Microsoft's Shift_JIS and
# common in Japanese mail, is an alias of cp932 only from Python 3.13 on.
_ALIASES = {"windows_31j": "cp932"}


def _lookup(charset: str | None) -> str:
    """Python's name for a charset; raises LookupError (ValueError for a NUL) if unknown."""
    name = charset or ""
    return codecs.lookup(_ALIASES.get(normalize_encoding(name.lower()), name)).name


def _codec(charset: str | None) -> str | None:
    """Return Python's name for a charset, or None when it is unknown or too slow."""
    try:
        name = _lookup(charset)
    except Exception:  # LookupError, or ValueError for a name with a NUL
        return None
    return None if name in _SLOW_CODECS else name


def slow(charset: str | None) -> bool:
    """Whether Python's codec for ``charset`` is too slow for a large body."""
    try:
        return _lookup(charset) in _SLOW_CODECS
    except Exception:
        return False


def to_text(data: bytes, charset: str | None, run: ParseRun | None = None, where: str = "") -> str:
    """Decode a body's bytes by its declared charset, falling back to UTF-8, then latin-1."""
    # Declared charsets lie (us-ascii over UTF-8) or are unknown to Python; the
    # last resort, latin-1, cannot fail.
    name = clean(charset.strip().strip("\"'"))[:40] if charset else ""
    problem = ""
    if name:
        codec = _codec(name)
        if codec is None:
            problem = f"{'unsupported' if slow(name) else 'unknown'} charset {name!r}"
        else:
            for attempt in (codec, _SUPERSETS.get(codec)):
                if attempt is None:
                    continue
                try:
                    return data.decode(attempt)
                except (LookupError, UnicodeError, ValueError, TypeError):
                    pass
            problem = f"{where} is not valid {name!r}"
    try:
        text, used = data.decode("utf-8"), "UTF-8"
    except UnicodeDecodeError:
        text, used = _utf8_else_latin1(data)
    if run is not None:
        if problem:
            run.note(f"{problem}, decoded as {used}")
        elif used != "UTF-8":
            run.note(f"undeclared 8-bit text in {where}, decoded as {used}")
    return text


def _utf8_else_latin1(data: bytes) -> tuple[str, str]:
    """Decode text that is not valid UTF-8: its UTF-8 sequences as such, its other bytes as latin-1.

    So UTF-8 with a damaged byte stays readable but for that byte, as
    :func:`clean` reads headers. Text without a UTF-8 sequence, or with many
    runs of other bytes, is read as latin-1 throughout (one step per run).
    Returns the text and how it was decoded.
    """
    decoded = data.decode("utf-8", "surrogateescape")
    escaped, decoded_text = _foreign_bytes(), _patterns()[1]
    if not decoded_text.search(decoded):
        return data.decode("latin-1"), _LATIN1
    pieces = []
    position = 0
    for count, match in enumerate(escaped.finditer(decoded)):
        if count == _MAX_FOREIGN_RUNS:
            return data.decode("latin-1"), _LATIN1
        pieces.append(decoded[position : match.start()])
        pieces.append(match.group().encode("utf-8", "surrogateescape").decode("latin-1"))
        position = match.end()
    pieces.append(decoded[position:])
    return "".join(pieces), _UTF8_ELSE_LATIN1


@functools.cache
def _foreign_bytes() -> re.Pattern[str]:
    return re.compile("[\udc80-\udcff]+")  # the bytes surrogateescape stood in for


def b64decode(data: bytes) -> bytes:
    """Decode base64 leniently: junk skipped, a broken length trimmed; ``b""`` if hopeless."""
    try:
        return binascii.a2b_base64(data)  # lenient about junk, strict about length
    except binascii.Error:
        pass
    data = re.sub(rb"[^A-Za-z0-9+/]", b"", data)
    data = data[: len(data) - len(data) % 4] if len(data) % 4 == 1 else data
    try:
        return binascii.a2b_base64(data + b"=" * (-len(data) % 4))
    except binascii.Error:
        return b""


#: The Content-Transfer-Encoding names of uuencode, as the email package knows them.
UUENCODINGS = frozenset({"x-uuencode", "uuencode", "uue", "x-uue"})


def uudecode(data: bytes) -> bytes | None:
    """Decode a uuencoded body as Python 3.11 and later do; None where they give up.

    Python 3.10 decodes with the ``uu`` module, which gives up on a body
    without an ``end`` line and reads on past an empty line; 3.11 and later
    decode the first and give up on the second. Read here as 3.11 reads it, on
    every Python; where this gives None, the body is served undecoded, as the
    email package serves it.
    """
    lines = iter(data.splitlines())
    for line in lines:
        if line.startswith(b"begin "):
            mode = line[6:].partition(b" ")[0]
            try:
                int(mode, base=8)
            except ValueError:
                continue
            break
    else:
        return None
    decoded = []
    for line in lines:
        if not line:
            return None  # cut short
        if line.strip(b" \t\r\n\f") == b"end":
            break
        try:
            decoded.append(binascii.a2b_uu(line))
        except binascii.Error:
            # Broken encoders pad lines past their length byte: read only as far as it says.
            length = (((line[0] - 32) & 63) * 4 + 5) // 3
            try:
                decoded.append(binascii.a2b_uu(line[:length]))
            except binascii.Error:
                return None
    return b"".join(decoded)


_ENCODED_WORD = re.compile(r"=\?([^?\s]+)\?([bBqQ])\?([\x21-\x3e\x40-\x7e]*)\?=")


def decode_words(value: str, run: ParseRun | None = None, where: str = "a header") -> str:
    """Decode RFC 2047 encoded words, leniently: bad ones decode as best they can."""
    if "=?" not in value:
        return value
    pieces: list[str] = []
    pending = bytearray()
    pending_charset = ""
    position = 0
    cut = False
    for count, match in enumerate(_ENCODED_WORD.finditer(value), 1):
        if run is not None and not count % 1024 and run.expired():
            run.cut(f"encoded words in {where} decoded only in part")
            cut = True
            break
        gap = value[position : match.start()]
        charset = match.group(1).split("*", 1)[0]  # drop an RFC 2231 language tag
        adjacent = bool(pending_charset) and (not gap or gap.isspace())
        if not adjacent or charset.lower() != pending_charset.lower():
            # Adjacent words of one charset are joined as bytes first, because
            # encoders split multi-byte characters across words.
            if pending_charset:
                pieces.append(to_text(bytes(pending), pending_charset, run, where))
                pending.clear()
            if not adjacent:
                pieces.append(gap)
        encoded = match.group(3).encode("ascii")
        if match.group(2) in "bB":
            pending += b64decode(encoded)
        else:
            pending += binascii.a2b_qp(encoded, header=True)
        pending_charset = charset
        position = match.end()
    if pending_charset:
        pieces.append(to_text(bytes(pending), pending_charset, run, where))
    pieces.append(value[position:])
    decoded = "".join(pieces)
    if "=?" in decoded and not cut:
        decoded = _decode_sloppy_words(decoded, run, where)
    return decoded


# An encoded word whose text was never encoded: spaces and raw UTF-8 between
# "=?utf-8?q?" and "?=", as some senders (Zitadel, for one) write their subjects.
# Mail clients show the text; so does email.policy.default.
# Only words that the strict pattern above could not read: some text that is not
# encoded-text (a space, a non-ASCII character).
_SLOPPY_WORD = re.compile(
    r"=\?([^?\s]+)\?([qQ])\?([\x21-\x3e\x40-\x7e]*[^\x21-\x3e\x40-\x7e?][^?]*)\?="
)


def _decode_sloppy_words(value: str, run: ParseRun | None, where: str) -> str:
    count = 0
    stopped = False

    def decode(match: re.Match[str]) -> str:
        nonlocal count, stopped
        count += 1
        if run is not None and not stopped and not count % 1024 and run.expired():
            run.cut(f"encoded words in {where} decoded only in part")
            stopped = True
        if stopped:
            return match.group()
        if run is not None and count == 1:
            run.note(f"an encoded word holding unencoded text in {where}")
        charset = match.group(1).split("*", 1)[0]
        text = match.group(3)
        # The raw text was read already (as UTF-8, else latin-1): back to the bytes
        # of the declared charset, so that its "=XX" escapes join them.
        try:
            data = text.encode(charset)
        except (LookupError, UnicodeEncodeError):
            data, charset = text.encode("utf-8", "surrogatepass"), "utf-8"
        return to_text(binascii.a2b_qp(data, header=True), charset, run, where)

    return _SLOPPY_WORD.sub(decode, value)


def unfold(value: object) -> str:
    """A header value on one line: folding's line breaks removed."""
    # Folding only ever inserts a line break before whitespace, so dropping the
    # breaks restores the original line.
    return str(value).replace("\r", "").replace("\n", "").strip()


def header_text(value: object, run: ParseRun | None = None, where: str = "a header") -> str:
    """A header value as text: unfolded, encoded words decoded, never an error."""
    unfolded = unfold(value)
    if run is not None and not unfolded.isascii() and _undeclared_8bit(unfolded):
        run.note(f"undeclared 8-bit text in {where}, decoded as latin-1")
    unfolded = clean(unfolded)
    try:
        return clean(decode_words(unfolded, run, where)).strip()
    except Exception:  # a bug in the decoder must not cost the header
        if run is not None:
            run.note(f"{where} could not be decoded, served raw")
        return unfolded
