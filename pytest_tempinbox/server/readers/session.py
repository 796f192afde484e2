"""One reader connection as a protocol handler sees it: :class:`ReaderSession`.

A handler (``async def handle(session)``) reads lines and writes replies
through it; the service (:mod:`.service`) makes one per connection and closes
it when the handler returns or raises. Lines are bounded (:class:`LineTooLong`),
silence is bounded (:class:`IdleTimeout`), and :meth:`ReaderSession.start_tls`
upgrades the connection in place on every supported Python: on 3.10, where
``StreamWriter.start_tls`` does not exist, and on later ones alike, it wraps the
transport with :meth:`asyncio.loop.start_tls` and builds new streams over it,
so that whatever a client sent in clear after its STARTTLS/STLS command is
dropped rather than read as if it came over TLS (CVE-2011-0411's lesson).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .context import ReaderContext

__all__ = ["IdleTimeout", "LineTooLong", "ReaderSession"]

STREAM_LIMIT = 1 << 16
"""The most bytes a stream buffers looking for a line's end: no line limit may exceed it."""
_HANDSHAKE_TIMEOUT = 60.0


class LineTooLong(Exception):
    """A line went past the limit given to :meth:`ReaderSession.readline`.

    The rest of the connection cannot be read as lines any more: the protocol
    answers and ends the session.
    """


class IdleTimeout(Exception):
    """The client said nothing for the session's idle timeout: the protocol says bye and ends."""


class _TLSStreamProtocol(asyncio.StreamReaderProtocol):
    """The protocol of a connection's TLS streams, holding its clear-text writer.

    From Python 3.13 on, a :class:`asyncio.StreamWriter` collected while its
    transport is open closes that transport: the clear-text writer lives as
    long as this protocol does, which is as long as the connection.
    """

    def __init__(
        self,
        reader: asyncio.StreamReader,
        clear_writer: asyncio.StreamWriter,
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        super().__init__(reader, loop=loop)
        self.clear_writer = clear_writer


class ReaderSession:
    """One connection of an IMAP or POP3 client: its streams, its peer, the server's context."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        context: ReaderContext,
    ) -> None:
        self.reader = reader
        self.writer = writer
        self.context = context
        peer = writer.get_extra_info("peername")
        self.peer: tuple[str, int] = (str(peer[0]), int(peer[1])) if peer else ("", 0)
        """The client's address and port (``("", 0)`` when the socket does not say)."""
        self.tls_active: bool = writer.get_extra_info("sslcontext") is not None
        """Tell whether the connection is under TLS (implicit, or after :meth:`start_tls`)."""

    async def readline(self, limit: int, timeout: float | None = None) -> bytes:
        """The next line, its line feed included; ``b""`` at the end of the stream.

        A last line the client did not end is dropped (``b""`` too). Raises
        :class:`LineTooLong` past ``limit`` bytes (at most :data:`STREAM_LIMIT`),
        and :class:`IdleTimeout` after ``timeout`` seconds (by default the
        context's ``idle_timeout``; IMAP's IDLE waits longer) without a line.
        """
        wait = self.context.idle_timeout if timeout is None else timeout
        try:
            line = await asyncio.wait_for(self.reader.readuntil(b"\n"), wait)
        except asyncio.IncompleteReadError:
            return b""
        except asyncio.LimitOverrunError as exc:
            raise LineTooLong(f"a line longer than {limit} bytes") from exc
        except asyncio.TimeoutError as exc:
            raise IdleTimeout(f"no line in {wait:g} s") from exc
        except (ConnectionError, OSError):
            return b""
        if len(line) > limit:
            raise LineTooLong(f"a line of {len(line)} bytes, over {limit}")
        return line

    async def read_exactly(self, size: int, timeout: float | None = None) -> bytes:
        """``size`` bytes (an IMAP literal); ``b""`` if the stream ends first.

        Raises :class:`IdleTimeout` as :meth:`readline` does.
        """
        wait = self.context.idle_timeout if timeout is None else timeout
        try:
            return await asyncio.wait_for(self.reader.readexactly(size), wait)
        except asyncio.IncompleteReadError:
            return b""
        except asyncio.TimeoutError as exc:
            raise IdleTimeout(f"no data in {wait:g} s") from exc
        except (ConnectionError, OSError):
            return b""

    def write(self, data: bytes) -> None:
        """Queue ``data`` to the client (nothing if the connection is gone)."""
        if not self.writer.is_closing():
            self.writer.write(data)

    async def drain(self) -> None:
        """Wait until the queue to the client is small; return at once if it is gone."""
        with contextlib.suppress(ConnectionError, OSError):
            await self.writer.drain()

    async def start_tls(self) -> None:
        """Turn the connection into TLS, server side, with the context's ``tls_context``.

        Call it once the reply to STARTTLS/STLS is written: it is sent first.
        Afterwards :attr:`reader` and :attr:`writer` are new streams over TLS
        and :attr:`tls_active` is True; what the client sent in clear after
        its command is dropped. Raises :class:`RuntimeError` without a context
        (TLS off), and :class:`OSError`, :class:`ssl.SSLError` or
        :class:`asyncio.TimeoutError` when the handshake fails: the session
        is over then (the service closes it).
        """
        context = self.context.tls_context
        if context is None:
            raise RuntimeError("TLS is off on this server")
        await self.writer.drain()
        loop = asyncio.get_running_loop()
        old = self.writer.transport
        protocol = old.get_protocol()
        timeout = min(self.context.idle_timeout, _HANDSHAKE_TIMEOUT)
        transport = await loop.start_tls(
            old, protocol, context, server_side=True, ssl_handshake_timeout=timeout
        )
        if transport is None:  # the connection was lost meanwhile
            raise ConnectionResetError("the connection closed during the TLS handshake")
        reader = asyncio.StreamReader(limit=STREAM_LIMIT, loop=loop)
        fresh = _TLSStreamProtocol(reader, self.writer, loop=loop)
        transport.set_protocol(fresh)
        fresh.connection_made(transport)
        self.reader = reader
        self.writer = asyncio.StreamWriter(transport, fresh, reader, loop)
        self.tls_active = True

    def close(self) -> None:
        """Close the connection now (what is queued is sent first, if it can be)."""
        if not self.writer.is_closing():
            self.writer.close()

    def abort(self) -> None:
        """Drop the connection at once, whatever is queued (the server is stopping)."""
        self.writer.transport.abort()
