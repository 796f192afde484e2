"""Verify a message's DKIM signature offline, against public keys given as a mapping.

A test signs its mail with a throwaway key; the receiving side must not ask
real DNS for that key (there is none, and tests stay offline). So the keys
come from a mapping of DNS names to TXT records, as they would be published:
``{"sel._domainkey.example.com": "v=DKIM1; k=rsa; p=MIIB..."}``, read from a
JSON file by :func:`load_dkim_keys`. :func:`verify_dkim` hands the message to
dkimpy (imported when a message is verified) with a lookup function that
reads that mapping, and turns what dkimpy says into a :class:`DkimResult`:
``pass``, ``fail`` with the reason in words, or ``none`` for an unsigned
message. It never raises on a malformed message or signature. :class:`DkimResult`
is a plain value (:mod:`pytest_tempinbox.values`), re-exported here.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from typing import Any, cast

from ..values import DkimResult, DkimStatus

__all__ = ["DKIMPY_MISSING", "DkimResult", "DkimStatus", "load_dkim_keys", "verify_dkim"]

_SIGNATURE_HEADER = re.compile(rb"^dkim-signature[ \t]*:", re.IGNORECASE | re.MULTILINE)
_BYTES_REPR = re.compile(r"\bb'([^']*)'")

DKIMPY_MISSING = (
    "not verified: DKIM needs dkimpy, which is not installed: pip install 'pytest-tempinbox[dkim]'"
)
"""The reason of a signed message's ``none`` where dkimpy is missing."""


def verify_dkim(raw: bytes, keys: Mapping[str, str]) -> DkimResult:
    """Verify the DKIM signature of the message ``raw`` with the public keys in ``keys``.

    ``keys`` maps DNS names (``selector._domainkey.domain``; any case, a
    trailing dot allowed) to their TXT records; a name it lacks has no key, and
    no real DNS is ever asked. A message with several signatures passes on the
    first that verifies, and otherwise reports the failure of the first (the
    topmost, added last); an unsigned message is ``none``. Never raises for a
    malformed message, signature or key: they are a ``fail`` with the reason.
    A signed message where dkimpy (the ``dkim`` extra) is not installed is
    ``none`` too, its reason saying so.
    """
    if not _signed(raw):
        return DkimResult("none")  # the usual case, without importing dkimpy
    try:
        import dkim  # type: ignore[import-untyped]
    except ImportError:
        return DkimResult("none", reason=DKIMPY_MISSING)

    lookup = _KeyLookup(keys)
    log = _Collector()
    try:
        signer = dkim.DKIM(raw, logger=log)
    except Exception as exc:  # dkimpy raises more than DKIMException on a broken message
        if _signed(raw):
            return DkimResult("fail", reason=f"malformed message: {_words(exc)}")
        return DkimResult("none")
    signatures = [value for name, value in signer.headers if name.lower() == b"dkim-signature"]
    if not signatures:
        return DkimResult("none")
    failures: list[DkimResult] = []
    for index, value in enumerate(signatures):
        outcome = _verify_one(dkim, signer, index, value, lookup, log)
        if outcome.result == "pass":
            return outcome
        failures.append(outcome)
    return failures[0]


def _signed(raw: bytes) -> bool:
    """Tell whether the header section of ``raw`` has a ``DKIM-Signature``; the body is skipped."""
    end = re.search(rb"\r?\n\r?\n", raw)
    return _SIGNATURE_HEADER.search(raw, 0, len(raw) if end is None else end.start()) is not None


def load_dkim_keys(path: str | os.PathLike[str]) -> dict[str, str]:
    """Read a JSON file mapping DNS names to DKIM TXT records, for :func:`verify_dkim`.

    The file holds one object, e.g.
    ``{"sel._domainkey.example.com": "v=DKIM1; k=rsa; p=MIIB..."}``. Raises
    :class:`ValueError` with a one-line message naming the file and what is
    wrong with it: missing, unreadable, not JSON, not an object, or a value
    that is not a string.
    """
    where = f"DKIM keys file {os.fspath(path)}"
    try:
        with open(path, encoding="utf-8") as file:
            text = file.read()
    except FileNotFoundError:
        raise ValueError(f"{where}: no such file") from None
    except UnicodeDecodeError as exc:
        raise ValueError(f"{where}: not UTF-8 text ({exc.reason})") from None
    except OSError as exc:
        raise ValueError(f"{where}: cannot be read ({exc.strerror or exc})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(
            f"{where}: not JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
        ) from None
    if not isinstance(data, dict):
        raise ValueError(
            f"{where}: expected a JSON object mapping DNS names to TXT records, "
            f'like {{"sel._domainkey.example.com": "v=DKIM1; k=rsa; p=..."}}, '
            f"found {_json_type(data)}"
        )
    for name, record in data.items():
        if not isinstance(record, str):
            raise ValueError(
                f"{where}: the TXT record of {name!r} must be a string, found {_json_type(record)}"
            )
    return cast(dict[str, str], data)


def _verify_one(
    dkim: Any, signer: Any, index: int, value: bytes, lookup: _KeyLookup, log: _Collector
) -> DkimResult:
    """Verify the signature at ``index``; ``dkim`` is the dkimpy module."""
    domain, selector = _tag(value, b"d"), _tag(value, b"s")
    try:
        signature, _, _ = signer.verify_headerprep(index)
    except dkim.ValidationError as exc:
        return DkimResult("fail", domain, selector, _invalid_signature(exc))
    except dkim.MessageFormatError as exc:
        reason = f"malformed DKIM-Signature: not a tag=value list ({_words(exc)})"
        return DkimResult("fail", domain, selector, reason)
    except Exception as exc:  # a tag list dkimpy cannot split, and the like
        return DkimResult("fail", domain, selector, f"malformed DKIM-Signature: {_words(exc)}")
    domain = _text(signature[b"d"])
    selector = _text(signature[b"s"])
    name = f"{selector}._domainkey.{domain}"
    lookup.missing.clear()
    log.errors.clear()
    try:
        verified = signer.verify(index, dnsfunc=lookup)
    except dkim.ValidationError as exc:
        if "body hash mismatch" in str(exc):
            return DkimResult("fail", domain, selector, "body hash did not verify")
        return DkimResult("fail", domain, selector, _words(exc))
    except dkim.NaClNotFoundError:
        reason = f"the ed25519 key of {name} needs PyNaCl (pip install pynacl)"
        return DkimResult("fail", domain, selector, reason)
    except dkim.KeyFormatError as exc:
        return DkimResult("fail", domain, selector, f"bad key for {name}: {_words(exc)}")
    except Exception as exc:  # dkimpy lets some malformed values through as plain errors
        return DkimResult("fail", domain, selector, f"could not verify: {_words(exc)}")
    if verified:
        return DkimResult("pass", domain, selector)
    if lookup.missing:
        return DkimResult("fail", domain, selector, f"no key for {name}")
    if log.errors:
        return DkimResult("fail", domain, selector, f"bad key for {name}: {log.errors[-1]}")
    return DkimResult("fail", domain, selector, "signature did not verify")


def _invalid_signature(exc: Exception) -> str:
    """The reason for a signature that dkimpy refused before checking it."""
    words = _words(exc)
    if words.startswith("x= value is past"):
        return f"signature expired ({words})"
    return f"malformed DKIM-Signature: {words}"


class _KeyLookup:
    """dkimpy's ``dnsfunc``: TXT records from the mapping, never from DNS.

    It answers ``None`` for a name the mapping lacks (dkimpy reads that as
    "no key") and remembers the name, so the reason can say which was missing.
    """

    def __init__(self, keys: Mapping[str, str]) -> None:
        self.records = {_dns_name(name): record for name, record in keys.items()}
        self.missing: list[str] = []

    def __call__(self, name: bytes | str, timeout: float = 5.0) -> bytes | None:
        key = _dns_name(_text(name) if isinstance(name, bytes) else name)
        record = self.records.get(key)
        if record is None:
            self.missing.append(key)
            return None
        return record.encode("utf-8")


class _Collector:
    """A stand-in for dkimpy's logger that keeps its errors instead of logging them.

    dkimpy reports a key it cannot use only through its logger; keeping those
    lines gives the reason, and keeps them out of the user's log.
    """

    def __init__(self) -> None:
        self.errors: list[str] = []

    # dkimpy calls the logging.Logger method by its name.
    def isEnabledFor(self, level: int) -> bool:
        return False

    def debug(self, message: object, *args: object) -> None:
        pass

    info = warning = debug

    def error(self, message: object, *args: object) -> None:
        self.errors.append(_BYTES_REPR.sub(r"\1", str(message)))


def _tag(value: bytes, tag: bytes) -> str | None:
    """A tag's value in a DKIM-Signature, read leniently (for a signature dkimpy refused)."""
    found = re.search(rb"(?:^|;)\s*" + tag + rb"\s*=\s*([^;]*)", value)
    if found is None:
        return None
    return _text(found.group(1)).strip() or None


def _dns_name(name: str) -> str:
    return name.strip().rstrip(".").lower()


def _text(value: bytes) -> str:
    return value.decode("utf-8", "replace")


def _words(exc: BaseException) -> str:
    """An exception as one line, without dkimpy's ``b'...'`` around byte strings."""
    text = _BYTES_REPR.sub(r"\1", str(exc) or type(exc).__name__)
    return " ".join(text.split())


def _json_type(value: object) -> str:
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}
    if value is None:
        return "null"
    if isinstance(value, int | float) and not isinstance(value, bool):
        return "a number"
    return names.get(type(value), type(value).__name__)
