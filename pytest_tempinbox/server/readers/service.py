"""A reader listener: serves one protocol (IMAP or POP3) on a socket the server bound.

:class:`ReaderService` accepts connections (wrapped in TLS at accept when the
server's mode is ``implicit``), turns each into a :class:`~.session.ReaderSession`
and runs the protocol's handler on it, at most ``max_connections`` at once
(the next is told ``busy`` and closed). A handler that raises ends its
session only: a connection error quietly, anything else logged with its
traceback, the client cut off rather than left hanging. :meth:`ReaderService.stop`
stops accepting, closes every session and waits for their handlers.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import ssl
from collections.abc import Awaitable, Callable

from .context import ReaderContext
from .session import STREAM_LIMIT, ReaderSession

__all__ = ["Handler", "ReaderService"]

log = logging.getLogger(__name__)

Handler = Callable[[ReaderSession], Awaitable[None]]
"""A protocol: ``async def handle(session)``, serving one connection until it ends."""

_QUIET = (ConnectionError, OSError, ssl.SSLError, asyncio.TimeoutError, asyncio.IncompleteReadError)
_HANDSHAKE_TIMEOUT = 60.0


class ReaderService:
    """Serves ``handler`` on ``sock`` (bound, listening) with ``context``, on the running loop.

    ``name`` ("IMAP", "POP3") is for the log; ``busy`` is the line a connection
    over ``context.max_connections`` is sent before it is closed; ``backlog``
    the listener's queue (asyncio listens again with its own default otherwise).
    """

    def __init__(
        self,
        sock: socket.socket,
        handler: Handler,
        context: ReaderContext,
        *,
        name: str = "reader",
        busy: bytes = b"",
        backlog: int = 100,
    ) -> None:
        self.sock = sock
        self.handler = handler
        self.context = context
        self.name = name
        self.busy = busy
        self.backlog = backlog
        self.sessions: dict[ReaderSession, asyncio.Task[None] | None] = {}
        """The open sessions, each with the task serving it."""
        self._server: asyncio.Server | None = None

    @property
    def port(self) -> int:
        """The port the listener is bound to."""
        port: int = self.sock.getsockname()[1]
        return port

    def serving(self) -> bool:
        """Tell whether the listener accepts connections."""
        return self._server is not None and self._server.is_serving()

    async def start(self) -> None:
        """Start accepting connections on the running loop."""
        context = self.context
        tls = context.tls_context if context.implicit_tls else None
        extra: dict[str, object] = {}
        if tls is not None:  # a client that connects and never finishes the handshake is let go
            extra["ssl_handshake_timeout"] = min(context.idle_timeout, _HANDSHAKE_TIMEOUT)
        self._server = await asyncio.start_server(
            self._serve,
            sock=self.sock,
            limit=STREAM_LIMIT,
            ssl=tls,
            backlog=self.backlog,
            **extra,  # type: ignore[arg-type]
        )

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        session = ReaderSession(reader, writer, self.context)
        if len(self.sessions) >= self.context.max_connections:
            session.write(self.busy)
            session.close()
            return
        self.sessions[session] = asyncio.current_task()
        try:
            await self.handler(session)
        except _QUIET as exc:
            log.debug("%s session from %s ended: %r", self.name, session.peer, exc)
        except asyncio.CancelledError:
            pass  # the server stops
        except Exception:
            log.exception("%s session from %s failed; closing it", self.name, session.peer)
        finally:
            del self.sessions[session]
            session.close()

    async def stop(self) -> None:
        """Stop accepting, close every session (idle or not) and wait for their handlers."""
        server, self._server = self._server, None
        if server is None:
            return
        server.close()
        tasks = [task for task in self.sessions.values() if task is not None]
        for session in list(self.sessions):
            session.abort()
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=5.0)
        # Python 3.12's wait_closed() also waits for the connections, closed above.
        await asyncio.wait_for(server.wait_closed(), 5.0)
