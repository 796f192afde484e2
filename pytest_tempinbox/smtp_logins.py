"""SMTP credentials per tenant: the tenants file's ``"smtp"`` key, and checking a login.

A tenant may hold SMTP credentials (``docs/tenants.md``, "SMTP credentials")::

    "smtp": {"user": "team-a-app", "password": "sha256:<64 hex digits>"}

or a list of such objects. The password is stored as its SHA-256, as a token
is (``tempinbox --make-token`` makes one: its token is the password, its hash
line the file's). Mail that authenticates with a tenant's credentials is
accepted only for that tenant's inboxes. Standard library only: no server
module is imported here.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["SMTPLogin", "SMTPLogins", "parse_smtp_logins"]

_HASH = re.compile(r"sha256:[0-9a-f]{64}")
_MAX_USER = 256
_KEYS = frozenset({"user", "password"})
# Logins verified, kept at most: only those that matched enter, so guesses cannot fill it.
_CACHED_LOGINS = 4096
# Compared against for an unknown user: a wrong user takes as long to learn as a wrong password.
_NO_HASH = bytes(32)


class SMTPLogin:
    """One SMTP user name and the ``sha256:<hex>`` line of its password."""

    __slots__ = ("password_hash", "user")

    def __init__(self, user: str, password_hash: str) -> None:
        self.user = user
        self.password_hash = password_hash

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SMTPLogin):
            return NotImplemented
        return (self.user, self.password_hash) == (other.user, other.password_hash)

    def __hash__(self) -> int:
        return hash((self.user, self.password_hash))

    def __repr__(self) -> str:
        return f"SMTPLogin(user={self.user!r})"  # never the hash


def parse_smtp_logins(value: Any, where: str) -> tuple[SMTPLogin, ...]:
    """A tenant's ``"smtp"`` value (one object or a list of them), checked; ``where`` names it."""
    entries = value if isinstance(value, list) else [value]
    if not entries:
        raise ValueError(f"{where}: smtp must be an object or a list of at least one")
    logins = []
    for entry in entries:
        if not isinstance(entry, dict) or set(entry) != _KEYS:
            raise ValueError(f'{where}: smtp is {{"user": ..., "password": "sha256:<hex>"}}')
        user, password = entry["user"], entry["password"]
        if not isinstance(user, str) or not 0 < len(user) <= _MAX_USER or not user.isprintable():
            raise ValueError(f"{where}: an SMTP user is 1-{_MAX_USER} printable characters")
        if not isinstance(password, str) or not _HASH.fullmatch(password):
            raise ValueError(
                f"{where}: an SMTP password is stored as 'sha256:' and 64 lowercase hex digits "
                "(make one with --make-token: its token is the password), not the password itself"
            )
        logins.append(SMTPLogin(user, password))
    return tuple(logins)


class SMTPLogins:
    """Every tenant's SMTP logins, by user name: :meth:`tenant_of` checks one.

    A user name may belong to one tenant only (:class:`ValueError` otherwise).
    """

    __slots__ = ("_by_user", "_verified")

    def __init__(self, logins: Mapping[str, Iterable[SMTPLogin]]) -> None:
        self._by_user: dict[bytes, tuple[bytes, str]] = {}
        for tenant, tenant_logins in logins.items():
            for login in tenant_logins:
                user = login.user.encode("utf-8")
                known = self._by_user.get(user)
                if known is not None and known[1] != tenant:
                    raise ValueError(
                        f"tenants {known[1]!r} and {tenant!r} share the SMTP user {login.user!r}"
                    )
                digest = bytes.fromhex(login.password_hash.removeprefix("sha256:"))
                self._by_user[user] = (digest, tenant)
        self._verified: dict[tuple[bytes, bytes], str] = {}

    def __bool__(self) -> bool:
        return bool(self._by_user)

    def tenant_of(self, user: bytes, password: bytes) -> str | None:
        """The tenant whose login ``user`` and ``password`` are; None for wrong credentials.

        The password is hashed and compared in constant time, an unknown user
        against a hash no password has: neither answer's time tells which was wrong.
        """
        known = self._verified.get((user, password))
        if known is not None:
            return known
        digest, tenant = self._by_user.get(user, (_NO_HASH, ""))
        if not hmac.compare_digest(hashlib.sha256(password).digest(), digest) or not tenant:
            return None
        if len(self._verified) < _CACHED_LOGINS:
            self._verified[(user, password)] = tenant
        return tenant
