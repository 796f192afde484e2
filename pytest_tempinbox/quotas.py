"""Quotas: how much a tenant (or, without tenants, everyone) may hold and do.

A tenants file gives each tenant its own under ``"quotas"`` (see
``docs/tenants.md``, "Quotas")::

    "quotas": {"inboxes": 1000, "inboxes_per_hour": 20000, "messages": 10000,
               "bytes": 268435456, "checks_per_minute": 60}

A value is a whole number from 1, ``"off"`` for no quota, or ``null`` (as
absent): the server's value, set by the ``--quota-*`` flags. With tenants each
quota is on by default (:data:`DEFAULT_QUOTAS`); without tenants a quota holds
only when its flag sets it, and then it is one quota for everyone. The store
counts and checks them (:class:`QuotaPolicy` says which apply to whom). No
server module is imported here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .errors import QuotaExceeded

if TYPE_CHECKING:
    import argparse

__all__ = [
    "DEFAULT_QUOTAS",
    "EVERYONE",
    "OFF",
    "QUOTA_NAMES",
    "QuotaPolicy",
    "Quotas",
    "add_quota_flags",
    "parse_quota_value",
    "parse_quotas",
    "quotas_of",
    "storage_exceeded",
]

QUOTA_NAMES = ("inboxes", "inboxes_per_hour", "messages", "bytes", "checks_per_minute")
"""The quotas, by the names the tenants file, the flags (``--quota-*``) and 429 answers use."""

OFF = 0
"""A quota's value for "no quota" (written ``"off"``): 0 is never a quota itself."""

EVERYONE = "*"
"""The counters' owner on a server without tenants: no tenant's name starts with ``*``."""


class Quotas:
    """One value per quota of :data:`QUOTA_NAMES`: a number, :data:`OFF`, or None (not set here).

    ``hour`` and ``minute`` are the lengths, in seconds, of the windows that
    ``inboxes_per_hour`` and ``checks_per_minute`` count in: 3600 and 60, shorter
    only for tests.
    """

    __slots__ = (*QUOTA_NAMES, "hour", "minute")

    def __init__(
        self,
        *,
        inboxes: int | None = None,
        inboxes_per_hour: int | None = None,
        messages: int | None = None,
        bytes: int | None = None,
        checks_per_minute: int | None = None,
        hour: float = 3600.0,
        minute: float = 60.0,
    ) -> None:
        self.inboxes = inboxes
        self.inboxes_per_hour = inboxes_per_hour
        self.messages = messages
        self.bytes = bytes
        self.checks_per_minute = checks_per_minute
        self.hour = hour
        self.minute = minute

    def over(self, base: Quotas) -> Quotas:
        """These values, each one not set here (None) taken from ``base``; ``base``'s windows."""
        merged = Quotas(hour=base.hour, minute=base.minute)
        for name in QUOTA_NAMES:
            setattr(merged, name, _first(getattr(self, name), getattr(base, name)))
        return merged

    def active(self, name: str) -> int | None:
        """The value of quota ``name`` when it holds; None when it is off or not set."""
        value: int | None = getattr(self, name)
        return value if value else None

    def any_active(self) -> bool:
        """Tell whether any quota holds."""
        return any(self.active(name) for name in QUOTA_NAMES)

    def as_dict(self) -> dict[str, int | None]:
        """The values by name, ``None`` for one not set here (``0`` is off)."""
        return {name: getattr(self, name) for name in QUOTA_NAMES}

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Quotas):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def _key(self) -> tuple[Any, ...]:
        return (*self.as_dict().values(), self.hour, self.minute)

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={v!r}" for k, v in self.as_dict().items() if v is not None)
        return f"Quotas({shown})"


# A team's CI on one token: a suite of a few thousand mail tests, under xdist, a few
# runs an hour, each test's inbox deleted at its teardown; a runaway loop meets them.
DEFAULT_QUOTAS = Quotas(
    inboxes=1000,
    inboxes_per_hour=20_000,
    messages=10_000,
    bytes=256 * 1024 * 1024,
    checks_per_minute=60,
)
"""Each tenant's quotas on a shared server unless the flags or the tenants file say otherwise."""


def _first(value: int | None, fallback: int | None) -> int | None:
    return fallback if value is None else value


def parse_quota_value(value: Any, where: str) -> int | None:
    """One quota's value: a whole number from 1, ``"off"`` (:data:`OFF`), or None.

    :class:`ValueError` naming ``where`` for anything else.
    """
    if value is None:
        return None
    if value == "off":
        return OFF
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f'{where} must be a whole number from 1, "off" or null, not {value!r}')
    return value


def parse_quotas(data: Any, where: str) -> Quotas:
    """A tenant's ``"quotas"`` object; :class:`ValueError` naming ``where`` and what is wrong."""
    if not isinstance(data, dict):
        raise ValueError(f'{where}: quotas must be an object, e.g. {{"inboxes": 100}}')
    unknown = sorted(set(data) - set(QUOTA_NAMES))
    if unknown:
        raise ValueError(
            f"{where}: unknown quota(s) {', '.join(map(repr, unknown))}; "
            f"the quotas are {', '.join(QUOTA_NAMES)}"
        )
    quotas = Quotas()
    for name in data:
        setattr(quotas, name, parse_quota_value(data[name], f"{where}: {name}"))
    return quotas


class QuotaPolicy:
    """Which quotas hold for whom: what the store checks and counts against.

    ``server`` are the server's values (the flags); with ``tenants`` (each one's
    own values from the file, by name) every quota not set falls back to
    :data:`DEFAULT_QUOTAS`, and an owner's quotas are its own over the server's.
    Without tenants, the server's values are everyone's (owner None).
    """

    __slots__ = ("_by_owner", "_default")

    def __init__(self, server: Quotas, tenants: Mapping[str, Quotas] | None = None) -> None:
        if tenants is None:
            self._default: Quotas = server
            self._by_owner: dict[str, Quotas] = {}
        else:
            self._default = server.over(DEFAULT_QUOTAS)
            self._default.hour, self._default.minute = server.hour, server.minute
            self._by_owner = {name: own.over(self._default) for name, own in tenants.items()}

    def of(self, owner: str | None) -> Quotas:
        """The quotas that hold for ``owner`` (None: a caller of a server without tenants)."""
        return self._by_owner.get(owner, self._default) if owner is not None else self._default

    @staticmethod
    def counted_as(owner: str | None) -> str:
        """The name ``owner``'s counters are kept under: :data:`EVERYONE` for None."""
        return EVERYONE if owner is None else owner


def storage_exceeded(
    quotas: Quotas, messages: int, stored: int, size: int | None
) -> QuotaExceeded | None:
    """The quota a delivery would pass, of an owner holding ``messages`` and ``stored`` bytes.

    ``size`` None asks about one more message (at ``RCPT``); a number, about
    one more message of ``size`` bytes (at the end of ``DATA``). None: room.
    """
    # The attributes, not active(): every delivery asks, twice (0 and None hold no quota).
    limit = quotas.messages
    if limit and messages >= limit:
        return QuotaExceeded(f"holds its quota of {limit} messages", quota="messages", limit=limit)
    limit = quotas.bytes
    if limit and stored + (size or 0) > limit:
        return QuotaExceeded(
            f"holds {stored} of its quota of {limit} bytes", quota="bytes", limit=limit
        )
    return None


_FLAG_HELP = {
    "inboxes": f"live inboxes at once (tenants' default: {DEFAULT_QUOTAS.inboxes})",
    "inboxes_per_hour": "inboxes generated per hour "
    f"(tenants' default: {DEFAULT_QUOTAS.inboxes_per_hour})",
    "messages": "messages stored, across a tenant's inboxes "
    f"(tenants' default: {DEFAULT_QUOTAS.messages})",
    "bytes": "bytes of mail stored, across a tenant's inboxes "
    f"(tenants' default: {DEFAULT_QUOTAS.bytes})",
    "checks_per_minute": "link and spam checks per minute "
    f"(tenants' default: {DEFAULT_QUOTAS.checks_per_minute})",
}


def add_quota_flags(parser: argparse.ArgumentParser, docs: str) -> None:
    """Add the ``--quota-*`` flags to the command line: the server's value of each quota."""
    import argparse

    def value(text: str) -> int | None:
        given: Any = int(text) if text.strip().isdigit() else text
        try:
            return parse_quota_value(given, "a quota")
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    group = parser.add_argument_group(
        "quotas",
        "with --tenants each tenant's (all on by default), without tenants everyone's "
        f"(each off unless set); a whole number, or off: {docs}",
    )
    for name in QUOTA_NAMES:
        group.add_argument(
            "--quota-" + name.replace("_", "-"),
            dest="quota_" + name,
            type=value,
            metavar="N",
            help=_FLAG_HELP[name],
        )


def quotas_of(options: argparse.Namespace) -> Quotas | None:
    """The server's quotas from the command line's parsed ``--quota-*`` flags; None: none given."""
    quotas = Quotas()
    for name in QUOTA_NAMES:
        setattr(quotas, name, getattr(options, "quota_" + name))
    return quotas if any(value is not None for value in quotas.as_dict().values()) else None
