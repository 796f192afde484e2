"""What an inbox's address may be: generated or chosen, and how one is compared.

The rules every store applies alike (see :mod:`.storage`): an address is looked
up lowercased (ASCII only), a generated one is a random token, a sequence number
and an optional prefix, and a chosen one is a plain dot-atom at a served domain.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Sequence

from ..config import DEFAULT_DOMAIN
from ..errors import InvalidAddress, InvalidRequest

__all__ = [
    "DEFAULT_DOMAIN",
    "MAX_ADDRESS_LENGTH",
    "MAX_LOCAL_PART",
    "PREFIX_PATTERN",
    "check_prefix",
    "chosen_address",
    "fold_address",
    "generated_local_part",
    "normalize_address",
    "random_token",
    "served_domain",
]


MAX_ADDRESS_LENGTH = 254
PREFIX_PATTERN = re.compile(r"[a-z0-9._-]{1,32}")
# Lowercase letters and digits: 36 symbols, so 12 of them carry about 62 bits.
_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789"
_RANDOM_LENGTH = 12
_TOKENS = len(_ALPHABET) ** _RANDOM_LENGTH
# \s is str.isspace() here: Unicode white space.
_NOT_IN_ADDRESS = re.compile(r"[\s\x00-\x1f\x7f]")
MAX_LOCAL_PART = 64  # octets (RFC 5321 4.5.3.1.1)
# A dot-atom of RFC 5322 atext, less "/": the API's paths could not name it.
_ATOM = r"[a-z0-9!#$%&'*+=?^_`{|}~-]+"
_CHOSEN_LOCAL_PART = re.compile(rf"{_ATOM}(?:\.{_ATOM})*")


def normalize_address(address: str) -> str:
    """Return ``address`` lowercased, or raise :class:`InvalidAddress` if it is not an address.

    An address has a non-empty local part, an ``@`` and a non-empty domain, at
    most 254 characters in all, and no whitespace or control characters.
    """
    local, at, domain = address.rpartition("@")
    if (
        not at
        or not local
        or not domain
        or len(address) > MAX_ADDRESS_LENGTH
        or _NOT_IN_ADDRESS.search(address)
    ):
        raise InvalidAddress(f"{address[:80]!r} is not an email address")
    return fold_address(address)


def fold_address(address: str) -> str:
    """Return the form of ``address`` that inboxes are keyed by, checking nothing.

    Only ASCII is folded: generated addresses are ASCII, and Unicode lowercasing
    maps look-alikes onto them (the Kelvin sign "\u212a" lowercases to "k").
    """
    return address.lower() if address.isascii() else address


def served_domain(domain: str | None, domains: Sequence[str]) -> str:
    """Return ``domain`` lowercased, the first of ``domains`` for None.

    Raises :class:`InvalidRequest` when it is not one of ``domains``.
    """
    if domain is None:
        return domains[0]
    if domain.lower() not in domains:
        raise InvalidRequest(
            f"domain {domain[:80]!r} is not served here; use one of: {', '.join(domains)}"
        )
    return domain.lower()


def random_token() -> str:
    """Return 12 random characters of ``a-z 0-9`` from :mod:`secrets` (about 62 bits)."""
    return _base36(secrets.randbelow(_TOKENS)).rjust(_RANDOM_LENGTH, _ALPHABET[0])


def check_prefix(prefix: str | None) -> None:
    """Raise :class:`InvalidRequest` unless ``prefix`` may start a generated local part.

    That is 1-32 of ``a-z 0-9 . _ -``, not starting with a dot nor holding two
    dots in a row; None is no prefix.
    """
    if prefix is not None and (
        not PREFIX_PATTERN.fullmatch(prefix) or prefix.startswith(".") or ".." in prefix
    ):
        raise InvalidRequest(
            "prefix must be 1-32 characters of a-z, 0-9, '.', '_' and '-',"
            " not starting with '.' and without '..'"
        )


def generated_local_part(prefix: str | None, token: str, number: int) -> str:
    """Return the local part of generated address ``number`` made with ``token``.

    ``prefix`` (see :func:`check_prefix`, which it passed) starts it.
    """
    local = token + _base36(number)
    return f"{prefix}-{local}" if prefix else local


def chosen_address(address: str, domains: Sequence[str]) -> str:
    """Return ``address`` lowercased if an inbox may be created at it by choice.

    Its domain must be one of ``domains`` (else :class:`InvalidRequest`),
    and its local part what every SMTP client sends unquoted: a dot-atom of
    ``a-z 0-9 !#$%&'*+=?^_`{|}~-`` with single dots between the atoms, at
    most 64 octets; no quoted local part, no ``/`` (the API's paths could
    not name it), no non-ASCII (:class:`InvalidAddress` otherwise).
    """
    folded = normalize_address(address)
    local, _, domain = folded.rpartition("@")
    if len(local) > MAX_LOCAL_PART or not _CHOSEN_LOCAL_PART.fullmatch(local):
        raise InvalidAddress(
            f"{address[:80]!r} cannot be chosen: its local part must be at most"
            f" {MAX_LOCAL_PART} characters of a-z, 0-9 and !#$%&'*+=?^_`{{|}}~-, with"
            " single dots between them (no quoted local part, no '/', no non-ASCII)"
        )
    if domain not in domains:
        raise InvalidRequest(
            f"domain {domain[:80]!r} is not served here; use one of: {', '.join(domains)}"
        )
    return folded


def _base36(number: int) -> str:
    digits = ""
    while True:
        number, digit = divmod(number, 36)
        digits = _ALPHABET[digit] + digits
        if not number:
            return digits
