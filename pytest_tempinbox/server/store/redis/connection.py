"""One pipelined connection to Redis on the serving loop: the SMTP side's round trips, overlapped.

The Redis store (:mod:`.store`) answers ``RCPT`` and stores each message
at ``DATA`` through this connection, so that the loop serves other SMTP
sessions while Redis works, instead of waiting for each reply. A command is
written at once and its reply matched to it in order (Redis answers the
commands of one connection in the order they came), parsed by
`hiredis <https://pypi.org/project/hiredis/>`_, the C parser that Redis
maintains and redis-py uses itself. redis-py's asyncio client costs the loop
about 65-85 µs of CPU a command on the bench machine, this connection about
20 µs: a message costs one or two commands. The store's subscription to its
notices (:mod:`.notices`), which every delivery reaches, is such a
connection too (:meth:`RedisConnection.subscribe`); everything else of the
store goes through redis-py.

It holds what redis-py would for these commands: the URL's password, user,
database and TLS (``rediss://``; the query's ``ssl_cert_reqs``,
``ssl_ca_certs``, ``ssl_certfile``, ``ssl_keyfile`` and ``ssl_check_hostname``
as redis-py reads them), scripts run by their SHA1 and sent whole when Redis
lost its script cache (a restart), a deadline on each reply, and a new
connection at the next command after one drops. Redis not answering, or
answering that it takes no writes now, raises
:class:`~pytest_tempinbox.errors.StoreUnavailable`. Bound to the loop it is
first used on.
"""

from __future__ import annotations

import asyncio
import collections
import functools
import hashlib
import ssl
from collections.abc import Callable
from typing import Any, cast

import hiredis
from redis.connection import parse_url

from ....errors import StoreUnavailable

__all__ = ["RedisConnection", "RedisReplyError", "Script"]

CONNECT_TIMEOUT = 2.0
"""Seconds to connect and be let in (AUTH, SELECT) before Redis counts as down."""
REPLY_TIMEOUT = 10.0
"""Seconds a reply may take before the connection is dropped and Redis counts as down."""

# Redis's answers that mean "not now" (it may take the command later), as redis-py reads them.
_NOT_NOW = ("OOM", "READONLY", "LOADING", "MASTERDOWN", "BUSY", "TRYAGAIN", "CLUSTERDOWN")
_CERT_REQS = {"none": ssl.CERT_NONE, "optional": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}


class RedisReplyError(RuntimeError):
    """Redis refused a command for a reason other than being down: a bug here, not an outage."""


class Script:
    """A Lua script, run by its SHA1 and sent whole only when Redis does not have it."""

    __slots__ = ("body", "sha")

    def __init__(self, body: str) -> None:
        self.body = body.encode()
        self.sha = hashlib.sha1(self.body).hexdigest().encode()


def _pack(args: tuple[bytes | str | int, ...]) -> bytes:
    """One command in the Redis protocol (RESP2): an array of bulk strings."""
    parts = [b"*%d\r\n" % len(args)]
    for arg in args:
        value = arg if isinstance(arg, bytes) else str(arg).encode()
        parts.append(b"$%d\r\n%s\r\n" % (len(value), value))
    return b"".join(parts)


def _down(reason: str) -> StoreUnavailable:
    return StoreUnavailable(f"Redis does not answer: {reason}")


class _Protocol(asyncio.Protocol):
    """The connection's socket: writes commands, resolves their futures in order."""

    def __init__(self, loop: asyncio.AbstractEventLoop, reply_timeout: float) -> None:
        self._loop = loop
        self._reply_timeout = reply_timeout
        self._reader = hiredis.Reader()
        self._pending: collections.deque[tuple[asyncio.Future[Any], float]] = collections.deque()
        self._transport: asyncio.Transport | None = None
        self._watchdog: asyncio.TimerHandle | None = None
        self.closed = False
        self.lost: asyncio.Future[None] = loop.create_future()
        """Done when the connection is gone."""
        self.on_message: Callable[[bytes], None] | None = None
        """Given the data of each message of a subscription (a subscribed connection only)."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not asyncio's classes, but do what asyncio.Transport does.
        self._transport = cast(asyncio.Transport, transport)

    def request(self, command: bytes) -> asyncio.Future[Any]:
        """Send one packed command; the future gets its reply (or the error)."""
        reply: asyncio.Future[Any] = self._loop.create_future()
        if self.closed or self._transport is None:
            reply.set_exception(_down("the connection closed"))
            return reply
        self._transport.write(command)
        self._pending.append((reply, self._loop.time()))
        if self._watchdog is None:
            self._watchdog = self._loop.call_later(self._reply_timeout, self._check_overdue)
        return reply

    def data_received(self, data: bytes) -> None:
        reader = self._reader
        reader.feed(data)
        try:
            while (reply := reader.gets()) is not False:
                if self.on_message is not None and type(reply) is list and reply[0] == b"message":
                    self.on_message(reply[2])
                    continue
                waiter, _ = self._pending.popleft()
                if waiter.done():
                    continue  # its caller was cancelled: the reply is read and dropped
                if isinstance(reply, hiredis.ReplyError):
                    waiter.set_exception(reply)
                else:
                    waiter.set_result(reply)
        except (hiredis.ProtocolError, IndexError) as exc:  # not Redis, or a reply unasked
            self._fail(_down(f"unreadable reply ({exc})"))

    def connection_lost(self, exc: Exception | None) -> None:
        self._fail(_down(f"connection lost ({exc})" if exc else "connection closed by Redis"))

    def _check_overdue(self) -> None:
        self._watchdog = None
        if not self._pending:
            return
        overdue = self._loop.time() - self._pending[0][1]
        if overdue >= self._reply_timeout:
            self._fail(_down(f"no reply within {self._reply_timeout:g} s"))
        else:
            self._watchdog = self._loop.call_later(
                self._reply_timeout - overdue, self._check_overdue
            )

    def _fail(self, error: StoreUnavailable) -> None:
        self.closed = True
        if self._watchdog is not None:
            self._watchdog.cancel()
            self._watchdog = None
        pending, self._pending = self._pending, collections.deque()
        for waiter, _ in pending:
            if not waiter.done():
                waiter.set_exception(error)
        if self._transport is not None:
            self._transport.abort()
        if not self.lost.done():
            self.lost.set_result(None)

    def close(self) -> None:
        """Fail what is pending and drop the socket."""
        if not self.closed:
            self._fail(_down("the store is closing"))


class RedisConnection:
    """One connection to the Redis at ``url``, pipelined, on the loop it is first used on.

    Connects at the first command and again at the first command after a
    drop. Not thread-safe: every call comes from that loop.
    """

    def __init__(
        self,
        url: str,
        *,
        connect_timeout: float = CONNECT_TIMEOUT,
        reply_timeout: float = REPLY_TIMEOUT,
    ) -> None:
        self._options: dict[str, Any] = parse_url(url)  # type: ignore[no-untyped-call]
        self._tls = url.lower().startswith("rediss://")
        self._connect_timeout = connect_timeout
        self._reply_timeout = reply_timeout
        self._protocol: _Protocol | None = None
        self._connecting: asyncio.Task[_Protocol] | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        """The loop the connection serves, once used; None before."""

    async def call(self, *args: bytes | str | int) -> Any:
        """Send one command, return its reply: bytes, int, None or a list of them.

        Raises :class:`~pytest_tempinbox.errors.StoreUnavailable` when Redis
        does not answer or takes no writes now, :class:`RedisReplyError` for any
        other error reply.
        """
        protocol = self._protocol
        if protocol is None or protocol.closed:
            protocol = await self._connected()
        try:
            return await protocol.request(_pack(args))
        except hiredis.ReplyError as exc:
            raise _reply_error(exc) from None

    async def run(self, script: Script, *args: bytes | str | int) -> Any:
        """Run ``script`` with ``args`` (no keys: the scripts name theirs), as :meth:`call`."""
        try:
            return await self.call(b"EVALSHA", script.sha, 0, *args)
        except RedisReplyError as exc:
            if not str(exc).startswith("NOSCRIPT"):
                raise
        return await self.call(b"EVAL", script.body, 0, *args)  # loads it for the next time

    def send(self, script: Script, *args: bytes | str | int) -> bool:
        """Run ``script`` without waiting for its reply, which is dropped; errors too.

        For what is worth doing but not worth a wait. False, and nothing is
        sent, when the connection is not up; from the connection's loop only.
        """
        protocol = self._protocol
        if protocol is None or protocol.closed:
            return False
        reply = protocol.request(_pack((b"EVALSHA", script.sha, 0, *args)))
        reply.add_done_callback(functools.partial(self._sent, script, args))
        return True

    def _sent(
        self, script: Script, args: tuple[bytes | str | int, ...], reply: asyncio.Future[Any]
    ) -> None:
        error = None if reply.cancelled() else reply.exception()
        protocol = self._protocol
        if (
            isinstance(error, hiredis.ReplyError)
            and str(error).startswith("NOSCRIPT")
            and protocol is not None
            and not protocol.closed
        ):
            protocol.request(_pack((b"EVAL", script.body, 0, *args))).add_done_callback(_dropped)

    async def subscribe(self, channel: str, on_message: Callable[[bytes], None]) -> None:
        """Subscribe to ``channel``: ``on_message`` gets the data of each message, on the loop.

        Returns once Redis confirms it; from then on the connection takes no
        other command. Raises as :meth:`call`; :meth:`wait_closed` returns when
        the subscription ends.
        """
        protocol = self._protocol
        if protocol is None or protocol.closed:
            protocol = await self._connected()
        protocol.on_message = on_message
        try:
            await protocol.request(_pack((b"SUBSCRIBE", channel)))
        except hiredis.ReplyError as exc:
            raise _reply_error(exc) from None

    async def wait_closed(self) -> None:
        """Return when the connection is gone (dropped by Redis, by the network, or closed)."""
        if self._protocol is not None:
            await asyncio.shield(self._protocol.lost)

    def close(self) -> None:
        """Drop the connection, failing what is pending; the next command connects again.

        A connection being made meanwhile is closed as soon as it is made: the
        calls waiting for it fail with
        :class:`~pytest_tempinbox.errors.StoreUnavailable`. (It is not
        cancelled: its waiters would take that for their own cancellation.)
        """
        connecting, self._connecting = self._connecting, None
        if connecting is not None:
            if connecting.done():  # made, but its waiters have not taken it yet
                _close_made(connecting)
            else:
                connecting.add_done_callback(_close_made)
        if self._protocol is not None:
            self._protocol.close()
            self._protocol = None

    async def _connected(self) -> _Protocol:
        loop = asyncio.get_running_loop()
        if self.loop is None:
            self.loop = loop
        elif self.loop is not loop:
            raise RuntimeError("a RedisConnection serves the loop it was first used on")
        if self._connecting is None or self._connecting.done():
            self._connecting = loop.create_task(self._connect(loop))
        task = self._connecting
        try:
            protocol = await asyncio.shield(task)
        finally:
            if task.done() and self._connecting is task:
                self._connecting = None
        if self._connecting is None and not protocol.closed:
            self._protocol = protocol
        return protocol

    async def _connect(self, loop: asyncio.AbstractEventLoop) -> _Protocol:
        host, port = self._options.get("host", "localhost"), self._options.get("port", 6379)
        try:
            return await asyncio.wait_for(self._open(loop, host, port), self._connect_timeout)
        except asyncio.TimeoutError:
            raise _down(
                f"no connection to {host}:{port} within {self._connect_timeout:g} s"
            ) from None
        except OSError as exc:
            raise _down(f"cannot connect to {host}:{port} ({exc.strerror or exc})") from None

    async def _open(self, loop: asyncio.AbstractEventLoop, host: str, port: int) -> _Protocol:
        _, protocol = await loop.create_connection(
            lambda: _Protocol(loop, self._reply_timeout),
            host,
            port,
            ssl=self._ssl_context(),
            server_hostname=host if self._tls else None,
        )
        try:
            await self._hello(protocol)
        except BaseException:
            protocol.close()
            raise
        return protocol

    async def _hello(self, protocol: _Protocol) -> None:
        """Log in and pick the database, as the URL says."""
        password, username = self._options.get("password"), self._options.get("username")
        commands = []
        if password is not None:
            commands.append(("AUTH", username, password) if username else ("AUTH", password))
        if self._options.get("db"):
            commands.append(("SELECT", self._options["db"]))
        for command in commands:
            try:
                await protocol.request(_pack(tuple(a for a in command if a is not None)))
            except hiredis.ReplyError as exc:
                raise _down(f"{command[0]} refused ({exc})") from None

    def _ssl_context(self) -> ssl.SSLContext | None:
        if not self._tls:
            return None
        options = self._options
        context = ssl.create_default_context(cafile=options.get("ssl_ca_certs"))
        required = _CERT_REQS.get(str(options.get("ssl_cert_reqs", "required")).lower())
        if required is None:
            raise ValueError("ssl_cert_reqs must be none, optional or required")
        context.check_hostname = (
            bool(options.get("ssl_check_hostname", True)) and required != ssl.CERT_NONE
        )
        context.verify_mode = required
        if options.get("ssl_certfile"):
            context.load_cert_chain(options["ssl_certfile"], options.get("ssl_keyfile"))
        return context


def _dropped(reply: asyncio.Future[Any]) -> None:
    """Take a reply nobody waits for, error included (asyncio would log it otherwise)."""
    if not reply.cancelled():
        reply.exception()


def _close_made(connecting: asyncio.Task[_Protocol]) -> None:
    """Close the connection a task made after :meth:`RedisConnection.close` gave it up."""
    if not connecting.cancelled() and connecting.exception() is None:
        connecting.result().close()


def _reply_error(error: hiredis.ReplyError) -> Exception:
    text = str(error)
    if text.startswith(_NOT_NOW):
        return _down(text.rstrip("."))
    return RedisReplyError(text)
