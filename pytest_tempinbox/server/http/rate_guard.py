"""The API's rate limits, ahead of the app: requests per token, per client address, and guesses.

:class:`RateGuard` is an ASGI middleware, installed only when a rate limit
holds (with tenants, or a flag: :meth:`~pytest_tempinbox.config.ServerConfig.rate_limits_in_force`).
A request that carries a tenant's token spends from that token's bucket (at
the tenant's own rate, if its entry of the tenants file sets one); any other
request from its client address's bucket. A client address that earned
too many ``401`` answers has every request answered ``429`` until its
bucket of failures fills again. Each is a dictionary look-up
(:class:`~pytest_tempinbox.rate_limits.Buckets`): a known token is not hashed again.
Over a limit: ``429`` problem ``rate_limited`` with ``Retry-After``. The client
address is the peer's, or with trusted proxies the one they forward.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ...errors import RATE_LIMITED
from ...rate_limits import Buckets, Limits
from ..api.endpoints import COMMON_HEADERS, problem_reply

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

    from ...tenants import Tenants

__all__ = ["RATE_LIMITED", "RateGuard"]

_COMMON = [
    (name.lower().encode("latin-1"), value.encode("latin-1"))
    for name, value in COMMON_HEADERS.items()
]


class RateGuard:
    """Answers ``429`` to a request over its token's or client address's rate (module docstring)."""

    def __init__(
        self,
        app: ASGIApp,
        limits: Limits,
        tenants: Tenants | None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.app = app
        self.limits = limits
        self.tenants = tenants
        self.clock = clock
        self.tokens = Buckets()
        self.clients = Buckets()
        self.failures = Buckets()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Count the request against its bucket; pass it on, or answer ``429``."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limits = self.limits
        peer = scope.get("client")
        address = str(peer[0]) if peer else ""
        if limits.trusted_proxies:
            address = limits.trusted_proxies.client(address, scope["headers"])
        now = self.clock()
        guesses = limits.guesses
        if guesses is not None:
            wait = self.failures.wait(address, guesses, now)
            if wait:
                await _refuse(
                    send, wait, "too many requests without a valid token from this address"
                )
                return
        wait = self._spend(scope["headers"], address, now)
        if wait:
            await _refuse(send, wait, "too many requests: slow down")
            return
        if guesses is None:
            await self.app(scope, receive, send)
            return
        failures = self.failures
        clock = self.clock

        async def watching(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] == 401:
                failures.take(address, guesses, clock())
            await send(message)

        await self.app(scope, receive, watching)

    def _spend(self, headers: list[tuple[bytes, bytes]], address: str, now: float) -> float:
        """Spend one request of the token's bucket, or else the address's; the seconds to wait."""
        limits = self.limits
        if self.tenants is not None:
            token = _bearer(headers)
            tenant = None if token is None else self.tenants.tenant_of(token)
            if tenant is not None:
                assert token is not None
                rate = limits.tenant_rates.get(tenant, limits.token_rate)
                return 0.0 if rate is None else self.tokens.take(token, rate, now)
        if limits.client_rate is None:
            return 0.0
        return self.clients.take(address, limits.client_rate, now)


def _bearer(headers: list[tuple[bytes, bytes]]) -> str | None:
    """The token of an ``Authorization: Bearer`` header; None without one."""
    for name, value in headers:
        if name == b"authorization":
            scheme, _, token = value.decode("latin-1").strip().partition(" ")
            token = token.strip()
            return token if scheme.lower() == "bearer" and token else None
    return None


async def _refuse(send: Any, wait: float, detail: str) -> None:
    """Answer ``429 rate_limited`` with ``Retry-After``: whole seconds, at least one."""
    seconds = max(1, math.ceil(wait))
    reply = problem_reply(429, RATE_LIMITED, f"{detail}; retry after {seconds} s")
    headers = [
        *_COMMON,
        (b"content-type", reply.content_type.encode("latin-1")),
        (b"content-length", str(len(reply.content)).encode("ascii")),
        (b"retry-after", str(seconds).encode("ascii")),
    ]
    await send({"type": "http.response.start", "status": 429, "headers": headers})
    await send({"type": "http.response.body", "body": reply.content})
