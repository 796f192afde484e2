"""uvicorn on the API's bound socket, imported and started only when a connection waits.

The only module that imports uvicorn, and the one place that reaches into it:
it replaces the ``main_loop`` method of its own ``uvicorn.Server`` (public, but
not a documented hook; written against uvicorn 0.54) so that a stop ends the
server at once instead of at uvicorn's next 0.1 s tick. Should a release stop
calling it, a stop is only slower: uvicorn's own loop still sees ``should_exit``.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ..in_process import ASGIApp
from ..sockets import Refusals, http_refusal

if TYPE_CHECKING:
    import uvicorn

    from ..certificates import CertificateFiles

__all__ = ["LazyHTTP", "drop_connection"]

log = logging.getLogger(__name__)

Ends = tuple[tuple[str, int], tuple[str, int]]
# The open connections of the servers of this process, by their two ends (as an
# ASGI scope names them, "server" and "client"): what a dropped answer closes.
_OPEN: dict[Ends, asyncio.BaseTransport] = {}


def drop_connection(scope: Mapping[str, Any]) -> bool:
    """Close the connection of the request of ``scope`` at once, unanswered; False if unknown.

    The request's task must then wait for the disconnect before it returns, so
    that uvicorn sends nothing more (it answers a task that returns without an
    answer with a 500, but not on a connection already lost).
    """
    server, client = scope.get("server"), scope.get("client")
    if server is None or client is None:
        return False
    transport = _OPEN.get((tuple(server), tuple(client)))
    if transport is None:
        return False
    transport.abort()  # type: ignore[attr-defined]
    return True


def _ends(transport: asyncio.BaseTransport) -> Ends | None:
    """A connection's two ends, (host, port) each, as uvicorn writes them in its scopes."""
    local, peer = transport.get_extra_info("sockname"), transport.get_extra_info("peername")
    if not isinstance(local, tuple) or not isinstance(peer, tuple):
        return None  # a Unix socket: no request of it can be dropped
    return (str(local[0]), int(local[1])), (str(peer[0]), int(peer[1]))


class LazyHTTP:
    """uvicorn on the bound API socket, imported and started when a first connection waits.

    The socket listens from the start, so connections queue in its backlog until
    uvicorn accepts them. A test session served in-process (the plugin's local
    transport) never pays for importing Starlette and uvicorn, nor for uvicorn's
    graceful shutdown. ``app`` builds the ASGI app; ``backlog`` is the socket's
    queue of connections, which uvicorn's own default would otherwise replace.
    With ``refusals``, a connection holding one of the last descriptors below
    the open-file limit is answered ``503`` and closed before uvicorn sees it.
    With ``certificate``, uvicorn serves HTTPS with its files, and each
    handshake presents the certificate last read (see :mod:`..certificates`).
    """

    def __init__(
        self,
        app: Callable[[], ASGIApp],
        sock: socket.socket,
        stopping: asyncio.Event,
        backlog: int,
        refusals: Refusals | None = None,
        certificate: CertificateFiles | None = None,
    ) -> None:
        self.certificate = certificate
        self.app = app
        self.backlog = backlog
        self.refusals = refusals
        self.sock = sock
        self.stopping = stopping
        self.server: uvicorn.Server | None = None
        self.serving: asyncio.Task[None] | None = None

    def arm(self) -> None:
        """Start uvicorn as soon as a connection is waiting on the socket."""
        asyncio.get_running_loop().add_reader(self.sock.fileno(), self._start)

    def _start(self) -> None:
        loop = asyncio.get_running_loop()
        loop.remove_reader(self.sock.fileno())
        import uvicorn

        config = uvicorn.Config(
            self.app(),
            lifespan="off",
            proxy_headers=False,  # nothing stands in front: X-Forwarded-* is not to be trusted
            log_config=None,
            access_log=False,
            timeout_graceful_shutdown=2,
            date_header=False,
            backlog=self.backlog,
            http=_guarded(self.refusals),
            ssl_certfile=None if self.certificate is None else self.certificate.cert,
            ssl_keyfile=None if self.certificate is None else self.certificate.key,
        )
        if self.certificate is not None:
            config.load()  # uvicorn builds its TLS context here; serve() does not again
            assert config.ssl is not None
            self.certificate.follow(config.ssl)
        server = uvicorn.Server(config)
        stopping = self.stopping

        async def main_loop() -> None:
            # uvicorn's own main loop looks for should_exit every 0.1 s (and keeps
            # the Date header fresh); waiting for the stop itself ends it at once.
            await stopping.wait()

        server.main_loop = main_loop  # type: ignore[method-assign]
        self.server = server
        self.serving = loop.create_task(server.serve(sockets=[self.sock]))
        self.serving.add_done_callback(_log_failure)

    async def stop(self) -> None:
        """Stop serving; nothing to do if no connection ever came."""
        if self.server is None or self.serving is None:
            asyncio.get_running_loop().remove_reader(self.sock.fileno())
            return
        self.server.should_exit = True
        await self.serving


def _guarded(refusals: Refusals | None) -> type[asyncio.Protocol]:
    """The HTTP protocol uvicorn picks, keeping its connections for :func:`drop_connection`.

    With ``refusals``, it refuses a connection near the open-file limit: on
    asyncio's loop the listening socket refuses it first; on uvloop, whose
    listeners accept in libuv, this is where it is refused.
    """
    from uvicorn.protocols.http.auto import AutoHTTPProtocol

    reply = http_refusal()

    def connection_made(self: Any, transport: asyncio.BaseTransport) -> None:
        self.refused = refusals is not None and refusals.at_ceiling(transport)
        self.ends = None
        if self.refused:
            assert refusals is not None
            refusals.refuse_transport(transport, "HTTP", reply)
            return
        self.ends = _ends(transport)
        if self.ends is not None:
            _OPEN[self.ends] = transport
        AutoHTTPProtocol.connection_made(self, transport)

    def connection_lost(self: Any, exc: Exception | None) -> None:
        if self.ends is not None:
            _OPEN.pop(self.ends, None)
        if not self.refused:  # a refused one never began
            AutoHTTPProtocol.connection_lost(self, exc)

    members = {"connection_made": connection_made, "connection_lost": connection_lost}
    return type("GuardedHTTPProtocol", (AutoHTTPProtocol,), members)


def _log_failure(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("the HTTP API stopped on an error", exc_info=task.exception())
