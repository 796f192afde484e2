"""Rate limits: requests per second, SMTP connections and commands, and the trusted proxies.

Standard library only, read by the command line, the tenants file and the
server (``docs/tenants.md``, "Rate limits"). A limit is a token bucket
(:class:`Rate`: a rate per second and a burst) kept per key in
:class:`Buckets`, a dictionary of at most :data:`MAX_KEYS` entries, so that a
request costs one look-up and a flood of client addresses cannot grow it
without bound. :class:`RateLimits` gathers the server's settings; with tenants
each limit is on by default (:meth:`RateLimits.for_server`), without them only
what is set. Each server process keeps its own buckets.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .proxies import MAX_KEYS, TrustedProxies, parse_proxy

__all__ = [
    "DEFAULT_CLIENT_RATE",
    "DEFAULT_GUESSES",
    "DEFAULT_SMTP_COMMANDS_PER_CONNECTION",
    "DEFAULT_SMTP_CONNECTIONS_PER_CLIENT",
    "DEFAULT_TOKEN_RATE",
    "MAX_KEYS",
    "Buckets",
    "Limits",
    "Rate",
    "RateLimits",
    "add_arguments",
    "from_arguments",
    "parse_tenant_rate_limits",
]

# A CI job's pace: a mail test makes about three requests (generate, wait, delete) in a
# few milliseconds, and xdist runs several at once; a flood is ten times that and more.
DEFAULT_TOKEN_RATE = 500.0  # requests per second per token, with tenants
DEFAULT_CLIENT_RATE = 50.0  # requests per second per client address without a token, with tenants
DEFAULT_SMTP_CONNECTIONS_PER_CLIENT = 50  # SMTP connections at once per client address: Postfix's
DEFAULT_SMTP_COMMANDS_PER_CONNECTION = 100_000  # SMTP commands per connection: 20,000 messages
DEFAULT_GUESSES = 10  # 401 answers per client address a minute before it is held back
BURST = 2.0  # a bucket holds this many seconds of its rate
_GUESS_WINDOW = 60.0
_KEYS = frozenset({"requests_per_second", "burst"})


class Rate:
    """A token bucket's settings: ``per_second`` refills, ``burst`` is what it holds."""

    __slots__ = ("burst", "per_second")

    def __init__(self, per_second: float, burst: float | None = None) -> None:
        self.per_second = float(per_second)
        self.burst = float(burst if burst is not None else max(1.0, per_second * BURST))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Rate):
            return NotImplemented
        return (self.per_second, self.burst) == (other.per_second, other.burst)

    def __hash__(self) -> int:
        return hash((self.per_second, self.burst))

    def __repr__(self) -> str:
        return f"Rate({self.per_second:g}, burst={self.burst:g})"


class Buckets:
    """Token buckets by key (a token, a client address), at most ``size`` of them.

    :meth:`take` spends one token of ``key``'s bucket: ``0.0`` when there was
    one, else the seconds until there is. A new key past ``size`` pushes out the
    oldest bucket, so memory stays bounded whatever the keys; a key pushed out
    starts again full, which only a flood of other keys can cause.
    """

    __slots__ = ("_buckets", "size")

    def __init__(self, size: int = MAX_KEYS) -> None:
        self.size = size
        self._buckets: dict[str, list[float]] = {}

    def __len__(self) -> int:
        return len(self._buckets)

    def take(self, key: str, rate: Rate, now: float) -> float:
        """Spend one request of ``key`` at time ``now``; the seconds to wait when none is left."""
        bucket = self._buckets.get(key)
        if bucket is None:
            if len(self._buckets) >= self.size:
                del self._buckets[next(iter(self._buckets))]
            self._buckets[key] = [rate.burst - 1.0, now]
            return 0.0
        tokens = min(rate.burst, bucket[0] + (now - bucket[1]) * rate.per_second)
        bucket[1] = now
        if tokens >= 1.0:
            bucket[0] = tokens - 1.0
            return 0.0
        bucket[0] = tokens
        return (1.0 - tokens) / rate.per_second

    def wait(self, key: str, rate: Rate, now: float) -> float:
        """The seconds until ``key`` has a token again, without spending one; 0.0 if it has."""
        bucket = self._buckets.get(key)
        if bucket is None:
            return 0.0
        tokens = min(rate.burst, bucket[0] + (now - bucket[1]) * rate.per_second)
        return 0.0 if tokens >= 1.0 else (1.0 - tokens) / rate.per_second


class RateLimits:
    """The server's rate limits, as set: None is unset, 0 is off.

    ``token_rate`` is requests per second per API token, ``client_rate`` per
    client address for a request with no token; ``guesses`` the ``401``
    answers a client address may earn a minute before every request of it gets
    ``429``. ``smtp_connections_per_client`` and ``smtp_commands_per_connection``
    hold the SMTP side (``421 4.7.0``). ``trusted_proxies`` (IP addresses or
    networks) name the client when a connection comes from one of them.
    :meth:`resolved` gives what a server holds to.
    """

    __slots__ = (
        "client_rate",
        "guesses",
        "smtp_commands_per_connection",
        "smtp_connections_per_client",
        "token_rate",
        "trusted_proxies",
    )

    def __init__(
        self,
        *,
        token_rate: float | None = None,
        client_rate: float | None = None,
        guesses: int | None = None,
        smtp_connections_per_client: int | None = None,
        smtp_commands_per_connection: int | None = None,
        trusted_proxies: Iterable[str] = (),
    ) -> None:
        self.token_rate = token_rate
        self.client_rate = client_rate
        self.guesses = guesses
        self.smtp_connections_per_client = smtp_connections_per_client
        self.smtp_commands_per_connection = smtp_commands_per_connection
        self.trusted_proxies = TrustedProxies(trusted_proxies)

    @classmethod
    def off(cls) -> RateLimits:
        """No rate limit at all, with tenants too."""
        return cls(
            token_rate=0,
            client_rate=0,
            guesses=0,
            smtp_connections_per_client=0,
            smtp_commands_per_connection=0,
        )

    def resolved(self, tenants: Mapping[str, Rate] | None) -> Limits | None:
        """The limits a server holds to; None when none holds.

        With ``tenants`` (each one's own rate, where set) an unset limit takes
        its default; without them it is off.
        """

        def value(given: float | None, default: float) -> float | None:
            if given is None:
                return default if tenants is not None else None
            return given or None

        limits = Limits(
            token_rate=value(self.token_rate, DEFAULT_TOKEN_RATE),
            client_rate=value(self.client_rate, DEFAULT_CLIENT_RATE),
            guesses=value(self.guesses, DEFAULT_GUESSES),
            smtp_connections_per_client=value(
                self.smtp_connections_per_client, DEFAULT_SMTP_CONNECTIONS_PER_CLIENT
            ),
            smtp_commands_per_connection=value(
                self.smtp_commands_per_connection, DEFAULT_SMTP_COMMANDS_PER_CONNECTION
            ),
            tenant_rates=tenants or {},
            trusted_proxies=self.trusted_proxies,
        )
        return limits if limits.http or limits.smtp else None

    def _key(self) -> tuple[Any, ...]:
        return (
            self.token_rate,
            self.client_rate,
            self.guesses,
            self.smtp_connections_per_client,
            self.smtp_commands_per_connection,
            self.trusted_proxies.networks,
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RateLimits):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"RateLimits{self._key()!r}"


class Limits:
    """The limits a server holds to (:meth:`RateLimits.resolved`).

    Each is a :class:`Rate`, a count, or None when off.
    """

    __slots__ = (
        "client_rate",
        "guesses",
        "smtp_commands_per_connection",
        "smtp_connections_per_client",
        "tenant_rates",
        "token_rate",
        "trusted_proxies",
    )

    def __init__(
        self,
        *,
        token_rate: float | None,
        client_rate: float | None,
        guesses: float | None,
        smtp_connections_per_client: float | None,
        smtp_commands_per_connection: float | None,
        tenant_rates: Mapping[str, Rate],
        trusted_proxies: TrustedProxies,
    ) -> None:
        self.token_rate = None if token_rate is None else Rate(token_rate)
        self.client_rate = None if client_rate is None else Rate(client_rate)
        self.guesses = None if guesses is None else Rate(guesses / _GUESS_WINDOW, guesses)
        self.smtp_connections_per_client = (
            None if smtp_connections_per_client is None else int(smtp_connections_per_client)
        )
        self.smtp_commands_per_connection = (
            None if smtp_commands_per_connection is None else int(smtp_commands_per_connection)
        )
        self.tenant_rates = dict(tenant_rates)
        self.trusted_proxies = trusted_proxies

    @property
    def http(self) -> bool:
        """Whether a limit of the API holds."""
        return bool(self.token_rate or self.client_rate or self.guesses or self.tenant_rates)

    @property
    def smtp(self) -> bool:
        """Whether a limit of SMTP holds."""
        return bool(self.smtp_connections_per_client or self.smtp_commands_per_connection)


def parse_tenant_rate_limits(value: Any, where: str) -> Rate:
    """A tenant's ``"rate_limits"``: ``{"requests_per_second": N, "burst": M}`` (burst optional)."""
    if not isinstance(value, dict) or "requests_per_second" not in value:
        raise ValueError(
            f'{where}: rate_limits must be an object, {{"requests_per_second": 50, "burst": 100}}'
        )
    unknown = sorted(set(value) - _KEYS)
    if unknown:
        raise ValueError(f"{where}: unknown rate_limits field(s) {', '.join(map(repr, unknown))}")
    rate, burst = value["requests_per_second"], value.get("burst")
    for name, number in (("requests_per_second", rate), ("burst", burst)):
        if number is None and name == "burst":
            continue
        if isinstance(number, bool) or not isinstance(number, (int, float)) or not number > 0:
            raise ValueError(
                f"{where}: rate_limits {name} must be a number above 0, not {number!r}"
            )
    if burst is not None and burst < 1:
        raise ValueError(f"{where}: rate_limits burst must be at least 1, not {burst!r}")
    return Rate(rate, burst)


def _count(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{text!r} is not a number") from None
    if value != value or value in (float("inf"), float("-inf")) or value < 0:
        raise ValueError(f"{text!r} must be 0 (off) or a number above it")
    return value


_FLAGS = (
    ("rate-limit", "token_rate", DEFAULT_TOKEN_RATE, "requests per second per API token"),
    (
        "client-rate-limit",
        "client_rate",
        DEFAULT_CLIENT_RATE,
        "requests per second per client address, for requests without a tenant's token",
    ),
    (
        "token-guesses",
        "guesses",
        DEFAULT_GUESSES,
        "401 answers a client address may earn a minute; then its requests get 429",
    ),
    (
        "smtp-connections-per-client",
        "smtp_connections_per_client",
        DEFAULT_SMTP_CONNECTIONS_PER_CLIENT,
        "SMTP connections at once per client address",
    ),
    (
        "smtp-commands-per-connection",
        "smtp_commands_per_connection",
        DEFAULT_SMTP_COMMANDS_PER_CONNECTION,
        "SMTP commands per connection",
    ),
)


def add_arguments(parser: argparse.ArgumentParser, type_of: Callable[[Any], Any]) -> None:
    """The command line's flags of the rate limits, in their own group.

    ``type_of`` turns a parsing function into an argparse type (its
    :class:`ValueError` the usage error).
    """
    group = parser.add_argument_group(
        "rate limits",
        "on by default with --tenants (0 turns one off), else off unless set; "
        "each server process counts its own",
    )
    for flag, name, default, help in _FLAGS:
        group.add_argument(
            f"--{flag}",
            dest=f"rate_{name}",
            type=type_of(_count),
            metavar="N",
            help=f"{help} (with --tenants: {default:g})",
        )
    group.add_argument(
        "--trusted-proxy",
        dest="rate_trusted_proxies",
        action="append",
        default=[],
        type=type_of(lambda text: str(parse_proxy(text))),
        metavar="ADDRESS",
        help="a reverse proxy (an IP address or a CIDR network) whose X-Forwarded-For or "
        "Forwarded header names the client; from anyone else they are ignored; repeat for several",
    )


def from_arguments(options: argparse.Namespace) -> RateLimits | None:
    """The :class:`RateLimits` the flags of :func:`add_arguments` set; None if none is given.

    ``--rate-limit`` counts per token: without ``--tenants`` it is a :class:`ValueError`.
    """
    values = {name: getattr(options, f"rate_{name}") for _, name, _, _ in _FLAGS}
    proxies = options.rate_trusted_proxies
    if all(value is None for value in values.values()) and not proxies:
        return None
    if values["token_rate"] and getattr(options, "tenants", None) is None:
        raise ValueError(
            "--rate-limit counts requests per API token: it needs --tenants "
            "(without tenants, --client-rate-limit counts them per client address)"
        )
    return RateLimits(
        token_rate=values["token_rate"],
        client_rate=values["client_rate"],
        guesses=None if values["guesses"] is None else int(values["guesses"]),
        smtp_connections_per_client=_whole(values["smtp_connections_per_client"]),
        smtp_commands_per_connection=_whole(values["smtp_commands_per_connection"]),
        trusted_proxies=proxies,
    )


def _whole(value: float | None) -> int | None:
    return None if value is None else math.ceil(value)
