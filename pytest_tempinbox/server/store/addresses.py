"""What an inbox's address may be: generated or chosen, and how one is compared.

The rules every store applies alike (see :mod:`.protocol`): an address is looked
up folded (:func:`fold_address`: the local part's ASCII letters lowercased and
the rest in NFC, the domain in its ASCII form, an IDN as A-labels), a generated one is a
random token, a sequence number and an optional prefix, and a chosen one is a
dot-atom at a served domain, with no ``+``: mail to ``name+detail@domain`` is
the inbox ``name@domain``'s, its sub-address ``detail`` (RFC 5233, see
:func:`recipient_inbox`).
"""

from __future__ import annotations

import functools
import re
import secrets
import unicodedata
from collections.abc import Iterable, Sequence

from ...config import DEFAULT_DOMAIN, domain_name
from ...errors import InvalidAddress, InvalidRequest

__all__ = [
    "DEFAULT_DOMAIN",
    "MAX_ADDRESS_LENGTH",
    "MAX_LOCAL_PART",
    "PREFIX_PATTERN",
    "SUBADDRESS_SEPARATOR",
    "check_prefix",
    "chosen_address",
    "fold_address",
    "fold_domain",
    "fold_subaddress",
    "generated_local_part",
    "normalize_address",
    "not_found",
    "random_token",
    "recipient_inbox",
    "served_domain",
    "served_domains",
    "subaddress_of",
]


MAX_ADDRESS_LENGTH = 254
SUBADDRESS_SEPARATOR = "+"
"""What parts an inbox's local part from a sub-address's detail (RFC 5233 3)."""
# Lowercase ASCII letters, digits, ".", "_", "-", and letters and digits beyond ASCII.
PREFIX_PATTERN = re.compile(r"(?:[a-z0-9._-]|[^\x00-\x7f])+")
_MAX_PREFIX = 32
# Lowercase letters and digits: 36 symbols, so 12 of them carry about 62 bits.
_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789"
_RANDOM_LENGTH = 12
_TOKENS = len(_ALPHABET) ** _RANDOM_LENGTH
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
# \s is str.isspace() here: Unicode white space.
_NOT_IN_ADDRESS = re.compile(r"[\s\x00-\x1f\x7f]")
MAX_LOCAL_PART = 64  # octets (RFC 5321 4.5.3.1.1)
# A dot-atom of RFC 5322 atext, less "/" (the API's paths could not name it) and "+"
# (a sub-address's separator), and of RFC 6532's UTF-8 beyond ASCII.
_ATOM = r"(?:[a-z0-9!#$%&'*=?^_`{|}~-]|[^\x00-\x7f])+"
_CHOSEN_LOCAL_PART = re.compile(rf"{_ATOM}(?:\.{_ATOM})*")


def normalize_address(address: str) -> str:
    """Return ``address`` folded (:func:`fold_address`); :class:`InvalidAddress` if it is none.

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

    The ASCII letters of the local part are lowercased, and one beyond ASCII
    is put in NFC; other letters keep their case (Unicode lowercasing maps
    look-alikes onto generated addresses: the Kelvin sign "\u212a" lowercases
    to "k"). The domain is :func:`fold_domain`'s.
    Cheap for an ASCII address, the everyday case: it is lowercased.
    """
    if address.isascii():
        return address.lower()
    local, at, domain = address.rpartition("@")
    if not at:
        return unicodedata.normalize("NFC", address.translate(_ASCII_LOWER))
    folded = unicodedata.normalize("NFC", local.translate(_ASCII_LOWER))
    return f"{folded}@{fold_domain(domain)}"


def fold_domain(domain: str) -> str:
    """Return ``domain`` in the form inboxes are keyed by: lowercase ASCII, an IDN as A-labels.

    ``bücher.example`` folds to ``xn--bcher-kva.example``, so that mail to
    either form reaches one inbox. A name that is no domain is kept, lowercased
    (it matches no inbox); nothing raises.
    """
    if domain.isascii():
        return domain.lower()
    return _fold_idn(domain)


@functools.lru_cache(maxsize=256)
def _fold_idn(domain: str) -> str:
    # IDNA's mapping costs about 0.2 ms a name: a server sees few, again and again.
    try:
        return domain_name(domain)
    except ValueError:
        return unicodedata.normalize("NFC", domain).lower()


def fold_subaddress(detail: str) -> str:
    """Return a sub-address's ``detail`` as messages keep it: folded as a local part is."""
    if detail.isascii():
        return detail.lower()
    return unicodedata.normalize("NFC", detail.translate(_ASCII_LOWER))


def recipient_inbox(address: str) -> tuple[str, str | None]:
    """Return the inbox key mail to ``address`` goes to, and its sub-address (None: none).

    ``Name+Detail@Domain`` goes to ``name@domain`` with the sub-address
    ``detail`` (RFC 5233: the first ``+`` of the local part separates; the
    detail may be empty, or hold more ``+``). A local part that starts with
    ``+`` has no sub-address. Folded as :func:`fold_address` folds; checks nothing.
    """
    folded = fold_address(address)
    if SUBADDRESS_SEPARATOR not in folded:
        return folded, None
    local, at, domain = folded.rpartition("@")
    name, _, detail = local.partition(SUBADDRESS_SEPARATOR)
    if not at or not name:
        return folded, None
    return f"{name}@{domain}", detail


def subaddress_of(inbox: str, rcpt_to: Iterable[str]) -> str | None:
    """Return the sub-address that mail for ``inbox`` came through, among ``rcpt_to``.

    One delivery stores one copy per inbox: when several of its sub-addresses
    (or the address itself) were recipients, the first of them in ``rcpt_to``
    (RCPT order) is the one the copy came through. None when that one had no
    ``+``, or when no recipient is the inbox's.
    """
    for rcpt in rcpt_to:
        key, detail = recipient_inbox(rcpt)
        if key == inbox:
            return detail
    return None


def not_found(address: str) -> str:
    """The message of :class:`~pytest_tempinbox.errors.InboxNotFound` for ``address``.

    A sub-address names no inbox of its own: the message says which inbox to read.
    """
    message = f"no inbox at {address[:80]!r}: never generated, deleted or expired"
    inbox, detail = recipient_inbox(address)
    if detail is None:
        return message
    return (
        f"no inbox at {address[:80]!r}: it is a sub-address of {inbox[:80]!r};"
        f" read that inbox with subaddress={detail[:80]!r}"
    )


def served_domains(domains: Iterable[str]) -> tuple[str, ...]:
    """Return ``domains`` folded (:func:`fold_domain`), each once, in their order."""
    return tuple(dict.fromkeys(fold_domain(domain) for domain in domains))


def served_domain(domain: str | None, domains: Sequence[str]) -> str:
    """Return ``domain`` folded (an IDN as A-labels), the first of ``domains`` for None.

    Raises :class:`InvalidRequest` when it is not one of ``domains``.
    """
    if domain is None:
        return domains[0]
    folded = fold_domain(domain)
    if folded not in domains:
        raise InvalidRequest(
            f"domain {domain[:80]!r} is not served here; use one of: {', '.join(domains)}"
        )
    return folded


def random_token() -> str:
    """Return 12 random characters of ``a-z 0-9`` from :mod:`secrets` (about 62 bits)."""
    return _base36(secrets.randbelow(_TOKENS)).rjust(_RANDOM_LENGTH, _ALPHABET[0])


def check_prefix(prefix: str | None) -> None:
    """Raise :class:`InvalidRequest` unless ``prefix`` may start a generated local part.

    That is 1-32 of ``a-z 0-9 . _ -`` and lowercase letters or digits beyond
    ASCII (the address then needs SMTPUTF8), not starting with a dot nor holding two
    dots in a row; None is no prefix. A ``+`` is refused with its own reason:
    it would make a sub-address.
    """
    if prefix is None:
        return
    if SUBADDRESS_SEPARATOR in prefix:
        raise InvalidRequest(
            f"prefix {prefix[:80]!r} holds '+': mail to name+detail@domain goes to the inbox"
            " name@domain (a sub-address), so no inbox's address has one"
        )
    if (
        len(prefix) > _MAX_PREFIX
        or not PREFIX_PATTERN.fullmatch(prefix)
        or not all(char.isascii() or (char.isalnum() and not char.isupper()) for char in prefix)
        or prefix.startswith(".")
        or ".." in prefix
    ):
        raise InvalidRequest(
            "prefix must be 1-32 characters of a-z, 0-9, '.', '_', '-' and lowercase letters"
            " or digits beyond ASCII, not starting with '.' and without '..'"
        )


def generated_local_part(prefix: str | None, token: str, number: int) -> str:
    """Return the local part of generated address ``number`` made with ``token``.

    ``prefix`` (see :func:`check_prefix`, which it passed) starts it.
    """
    local = token + _base36(number)
    return f"{prefix}-{local}" if prefix else local


def chosen_address(address: str, domains: Sequence[str]) -> str:
    """Return ``address`` folded (:func:`fold_address`) if an inbox may be created at it by choice.

    Its domain must be one of ``domains``, in either form of an IDN (else
    :class:`InvalidRequest`), and its local part what SMTP clients send
    unquoted: a dot-atom of ``a-z 0-9 !#$%&'*=?^_`{|}~-`` and printable
    characters beyond ASCII (RFC 6531: mail to it needs SMTPUTF8), with single
    dots between the atoms, at most 64 octets of UTF-8; no quoted local part,
    no ``/`` (the API's paths could not name it), and no ``+``: mail to
    ``name+detail@`` goes to the inbox ``name@`` (:class:`InvalidAddress`
    otherwise, saying so).
    """
    folded = normalize_address(address)
    local, _, domain = folded.rpartition("@")
    if SUBADDRESS_SEPARATOR in local:
        raise InvalidAddress(
            f"{address[:80]!r} cannot be chosen: it holds '+', and mail to name+detail@domain"
            " goes to the inbox name@domain (a sub-address); choose name@domain and read its"
            " mail with subaddress=detail"
        )
    if (
        len(local.encode("utf-8", "surrogatepass")) > MAX_LOCAL_PART
        or not _CHOSEN_LOCAL_PART.fullmatch(local)
        or not local.isprintable()
    ):
        raise InvalidAddress(
            f"{address[:80]!r} cannot be chosen: its local part must be at most"
            f" {MAX_LOCAL_PART} octets of a-z, 0-9, !#$%&'*=?^_`{{|}}~- and printable"
            " characters beyond ASCII, with single dots between them (no quoted local part,"
            " no '/', no '+')"
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
