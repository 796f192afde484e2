"""Tenants and their API tokens: the ``--tenants`` file, read once at start.

The file is JSON (see ``docs/tenants.md``)::

    {"tenants": [{"name": "team-a", "tokens": ["sha256:<64 hex digits>", ...]}]}

A token is never stored, only its SHA-256; :func:`make_token` makes one and the
line to paste. :meth:`Tenants.tenant_of` finds a presented token's tenant by a
dictionary look-up of its hash, and keeps the tokens it verified, so that a
known token costs one look-up per request. No server module is imported here.
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .quotas import Quotas
    from .rate_limits import Rate

from .smtp_logins import SMTPLogin, SMTPLogins, parse_smtp_logins

__all__ = ["HASH_PREFIX", "Tenants", "hash_line", "make_token"]

HASH_PREFIX = "sha256:"
_HASH = re.compile(r"sha256:[0-9a-f]{64}")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_TENANT_KEYS = frozenset(
    {"name", "tokens", "quotas", "rate_limits", "smtp", "webhooks", "webhook_secret"}
)
# Verified tokens kept at most: only tokens that matched enter, so guesses cannot fill it.
_CACHED_TOKENS = 4096


def hash_line(token: str) -> str:
    """The line the tenants file stores for ``token``: ``sha256:`` and its hex digest."""
    return HASH_PREFIX + hashlib.sha256(token.encode("utf-8")).hexdigest()


def make_token() -> tuple[str, str]:
    """A new random token (``tit_`` and 43 URL-safe characters) and its :func:`hash_line`."""
    token = "tit_" + secrets.token_urlsafe(32)
    return token, hash_line(token)


class Tenants:
    """The tenants of a server: each one's name and the hashes of its tokens.

    ``by_hash`` maps each stored ``sha256:<hex>`` line to its tenant's name; a
    hash may belong to one tenant only (:class:`ValueError` otherwise, as for
    every other mistake in the file). ``source`` names the file in messages.
    ``smtp`` holds each tenant's SMTP credentials (``"smtp"`` in the file,
    :mod:`pytest_tempinbox.smtp_logins`), ``smtp_logins`` checks one.
    ``webhooks`` holds each tenant's own webhook URLs and secret (``"webhooks"``
    and ``"webhook_secret"`` in the file; docs/webhooks.md).
    """

    __slots__ = (
        "_verified",
        "by_hash",
        "names",
        "quotas",
        "rate_limits",
        "smtp",
        "smtp_logins",
        "source",
        "webhooks",
    )

    def __init__(
        self,
        tenants: Mapping[str, Iterable[str]],
        source: str = "tenants",
        rate_limits: Mapping[str, Rate] | None = None,
        smtp: Mapping[str, Iterable[SMTPLogin]] | None = None,
        quotas: Mapping[str, Quotas] | None = None,
        webhooks: Mapping[str, tuple[tuple[str, ...], str | None]] | None = None,
    ) -> None:
        self.source = source
        self.webhooks: dict[str, tuple[tuple[str, ...], str | None]] = dict(webhooks or {})
        """Each tenant's webhook URLs and secret (None: unsigned), where its entry gives some."""
        self.rate_limits: dict[str, Rate] = dict(rate_limits or {})
        """Each tenant's own rate of requests, where its entry sets ``"rate_limits"``."""
        self.quotas: dict[str, Quotas] = dict(quotas or {})
        """Each tenant's own quotas from the file (``"quotas"``), by name; docs/tenants.md."""
        self.smtp: dict[str, tuple[SMTPLogin, ...]] = {
            name: tuple(logins) for name, logins in (smtp or {}).items()
        }
        try:
            self.smtp_logins = SMTPLogins(self.smtp)
        except ValueError as exc:
            raise ValueError(f"{source}: {exc}") from None
        self.names: tuple[str, ...] = tuple(tenants)
        self.by_hash: dict[str, str] = {}
        for name, hashes in tenants.items():
            for line in hashes:
                owner = self.by_hash.setdefault(line, name)
                if owner != name:
                    raise ValueError(f"{source}: tenants {owner!r} and {name!r} share a token")
        self._verified: dict[str, str] = {}

    @classmethod
    def from_file(cls, path: str) -> Tenants:
        """Read the tenants file at ``path``; :class:`ValueError` naming what is wrong."""
        try:
            with open(path, encoding="utf-8") as file:
                text = file.read()
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            raise ValueError(f"cannot read the tenants file {path!r}: {reason}") from None
        return cls.parse(text, path)

    @classmethod
    def parse(cls, text: str, source: str = "tenants") -> Tenants:
        """Read a tenants file's ``text``; ``source`` names it in the :class:`ValueError`."""
        try:
            data: Any = json.loads(text)
        except ValueError as exc:
            raise ValueError(f"{source} is not JSON: {exc}") from None
        if not isinstance(data, dict) or set(data) != {"tenants"}:
            raise ValueError(f'{source}: the file is one object, {{"tenants": [...]}}')
        entries = data["tenants"]
        if not isinstance(entries, list) or not entries:
            raise ValueError(f"{source}: tenants must be a list of at least one tenant")
        tenants: dict[str, list[str]] = {}
        rates: dict[str, Rate] = {}
        smtp: dict[str, tuple[SMTPLogin, ...]] = {}
        quotas: dict[str, Quotas] = {}
        webhooks: dict[str, tuple[tuple[str, ...], str | None]] = {}
        for number, entry in enumerate(entries, 1):
            name, hashes = _tenant(entry, f"{source}: tenant {number}")
            if name in tenants:
                raise ValueError(f"{source}: two tenants are named {name!r}")
            tenants[name] = hashes
            where = f"{source}: tenant {number} ({name})"
            if "rate_limits" in entry:
                from .rate_limits import parse_tenant_rate_limits

                rates[name] = parse_tenant_rate_limits(entry["rate_limits"], where)
            if "smtp" in entry:
                smtp[name] = parse_smtp_logins(entry["smtp"], where)
            if entry.get("quotas") is not None:
                from .quotas import parse_quotas

                quotas[name] = parse_quotas(entry["quotas"], where)
            if "webhooks" in entry or "webhook_secret" in entry:
                webhooks[name] = _tenant_webhooks(entry, where)
        return cls(tenants, source, rate_limits=rates, smtp=smtp, quotas=quotas, webhooks=webhooks)

    def tenant_of(self, token: str) -> str | None:
        """The name of the tenant whose token ``token`` is; None for an unknown token.

        A token verified before is a dictionary look-up; a new one is hashed
        once and found by its hash: no comparison of secrets byte by byte, so
        its time tells nothing of how close a guess came.
        """
        name = self._verified.get(token)
        if name is not None:
            return name
        line = hash_line(token)
        name = self.by_hash.get(line)
        if name is None:
            return None
        if len(self._verified) < _CACHED_TOKENS:
            self._verified[token] = name
        return name

    def _key(self) -> tuple[Any, ...]:
        return (
            tuple(sorted(self.by_hash.items())),
            tuple(sorted(self.smtp.items())),
            tuple(sorted(self.quotas.items())),
            tuple(sorted(self.rate_limits.items())),
            tuple(sorted(self.webhooks.items())),
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Tenants):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"Tenants({list(self.names)!r})"  # the names only: no hash is shown


def _tenant(entry: Any, where: str) -> tuple[str, list[str]]:
    """One tenant's name and token hashes, checked."""
    if not isinstance(entry, dict):
        raise ValueError(f'{where} must be an object, {{"name": ..., "tokens": [...]}}')
    unknown = sorted(set(entry) - _TENANT_KEYS)
    if unknown:
        raise ValueError(f"{where}: unknown field(s) {', '.join(map(repr, unknown))}")
    name, hashes = entry.get("name"), entry.get("tokens")
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ValueError(f"{where}: name must be 1-64 of A-Z a-z 0-9 . _ -, not {name!r}")
    if not isinstance(hashes, list) or not hashes:
        raise ValueError(f"{where} ({name}): tokens must be a list of at least one hash")
    for line in hashes:
        if not isinstance(line, str) or not _HASH.fullmatch(line):
            raise ValueError(
                f"{where} ({name}): a token is stored as 'sha256:' and 64 lowercase hex "
                "digits (make one with --make-token), not a token itself"
            )
    return name, hashes


def _tenant_webhooks(entry: dict[str, Any], where: str) -> tuple[tuple[str, ...], str | None]:
    """A tenant's ``"webhooks"`` (a list of URLs) and ``"webhook_secret"``, checked."""
    urls, secret = entry.get("webhooks"), entry.get("webhook_secret")
    if not isinstance(urls, list) or not urls or not all(isinstance(url, str) for url in urls):
        raise ValueError(f"{where}: webhooks must be a list of at least one http(s) URL")
    if secret is not None and (not isinstance(secret, str) or not secret):
        raise ValueError(f"{where}: webhook_secret must be a string, not empty")
    from .webhook_urls import check_webhook_url

    try:
        return tuple(check_webhook_url(url) for url in urls), secret
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None
