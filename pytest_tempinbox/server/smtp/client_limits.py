"""SMTP's rate limits: connections at once per client address, and commands per connection.

Over either, the client gets ``421 4.7.0`` and the connection is closed
(``docs/tenants.md``, "Rate limits"). :class:`ClientCounts` counts the open
connections of each address (an address leaves the dictionary with its last
connection, so it holds no more entries than connections are open);
:class:`LimitedLane` is the fast lane holding both limits, served only when a
limit is set, so that a server without them does no more work than before.
The aiosmtpd side holds the same limits in
:class:`~pytest_tempinbox.server.smtp.protocol.TrackedSMTP`, and carries on
counting the commands of a connection the lane handed over.
"""

from __future__ import annotations

import asyncio
from typing import Any

from .fast_lane import FastLane, LaneSession

__all__ = [
    "TOO_MANY_COMMANDS",
    "TOO_MANY_CONNECTIONS",
    "ClientCounts",
    "LimitedLane",
    "LimitedSession",
    "client_address",
]

TOO_MANY_CONNECTIONS = b"421 4.7.0 Too many connections from your address, try again later\r\n"
TOO_MANY_COMMANDS = "421 4.7.0 Too many commands in one connection, goodbye"


def client_address(transport: asyncio.BaseTransport) -> str:
    """The client's IP address of a connection; empty when it has none (a Unix socket)."""
    peer = transport.get_extra_info("peername")
    return str(peer[0]) if isinstance(peer, tuple) and peer else ""


class ClientCounts:
    """The open SMTP connections of each client address, at most ``limit`` each (None: any)."""

    __slots__ = ("commands", "limit", "open")

    def __init__(self, limit: int | None, commands: int | None) -> None:
        self.limit = limit
        self.commands = commands
        """Commands a connection may send (None: any)."""
        self.open: dict[str, int] = {}

    def enter(self, address: str) -> bool:
        """Count a connection of ``address`` in; False (not counted) when it has its limit open."""
        count = self.open.get(address, 0)
        if self.limit is not None and count >= self.limit:
            return False
        self.open[address] = count + 1
        return True

    def leave(self, address: str) -> None:
        """Count a connection of ``address`` out."""
        count = self.open.get(address, 0) - 1
        if count > 0:
            self.open[address] = count
        else:
            self.open.pop(address, None)


# The lane's own command: called directly, it costs no super() on every command line.
_serve_command = FastLane._command


class LimitedSession(LaneSession):
    """A lane's session that counts its commands, for aiosmtpd to go on from after a hand-over."""

    __slots__ = ("commands",)

    def __init__(self) -> None:
        super().__init__()
        self.commands = 0


class LimitedLane(FastLane):
    """The fast lane, refusing an address over its connections and a session over its commands."""

    def __init__(
        self, settings: Any, loop: asyncio.AbstractEventLoop, counts: ClientCounts
    ) -> None:
        super().__init__(settings, loop)
        self._counts = counts
        self._client: str | None = None
        self._session = LimitedSession()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        """Refuse the connection with ``421`` if its address has its connections open."""
        address = client_address(transport)
        if not self._counts.enter(address):
            transport.write(TOO_MANY_CONNECTIONS)  # type: ignore[attr-defined]
            transport.close()
            self._gone = True
            return
        self._client = address
        super().connection_made(transport)
        if self._gone:  # refused for another reason: not counted
            self._leave()

    def connection_lost(self, error: Exception | None) -> None:
        """Count the connection out of its address's."""
        super().connection_lost(error)
        self._leave()

    def _leave(self) -> None:
        if self._client is not None:
            self._counts.leave(self._client)
            self._client = None

    def _command(self, raw: bytes) -> bool:
        limit = self._counts.commands
        if limit is None:
            return _serve_command(self, raw)
        session = self._session
        session.commands += 1
        if session.commands > limit:
            self._reply(TOO_MANY_COMMANDS)
            self._flush()
            assert self.transport is not None
            self.transport.close()
            self._gone = True
            return True
        if _serve_command(self, raw):
            return True
        session.commands -= 1  # aiosmtpd serves it, and counts it
        return False

    def _hand_over(self) -> None:
        # aiosmtpd's protocol counts the connection in again as it takes it over.
        self._leave()
        super()._hand_over()
