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
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..in_process import ASGIApp
from ..sockets import Refusals, http_refusal

if TYPE_CHECKING:
    import uvicorn

__all__ = ["LazyHTTP"]

log = logging.getLogger(__name__)


class LazyHTTP:
    """uvicorn on the bound API socket, imported and started when a first connection waits.

    The socket listens from the start, so connections queue in its backlog until
    uvicorn accepts them. A test session served in-process (the plugin's local
    transport) never pays for importing Starlette and uvicorn, nor for uvicorn's
    graceful shutdown. ``app`` builds the ASGI app; ``backlog`` is the socket's
    queue of connections, which uvicorn's own default would otherwise replace.
    With ``refusals``, a connection holding one of the last descriptors below
    the open-file limit is answered ``503`` and closed before uvicorn sees it.
    """

    def __init__(
        self,
        app: Callable[[], ASGIApp],
        sock: socket.socket,
        stopping: asyncio.Event,
        backlog: int,
        refusals: Refusals | None = None,
    ) -> None:
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
            http="auto" if self.refusals is None else _guarded(self.refusals),
        )
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


def _guarded(refusals: Refusals) -> type[asyncio.Protocol]:
    """The HTTP protocol uvicorn picks, but refusing a connection near the open-file limit.

    On asyncio's loop the listening socket refuses it first; on uvloop, whose
    listeners accept in libuv, this is where it is refused.
    """
    from uvicorn.protocols.http.auto import AutoHTTPProtocol

    reply = http_refusal()

    def connection_made(self: Any, transport: asyncio.BaseTransport) -> None:
        self.refused = refusals.at_ceiling(transport)
        if self.refused:
            refusals.refuse_transport(transport, "HTTP", reply)
        else:
            AutoHTTPProtocol.connection_made(self, transport)

    def connection_lost(self: Any, exc: Exception | None) -> None:
        if not self.refused:  # a refused one never began
            AutoHTTPProtocol.connection_lost(self, exc)

    members = {"connection_made": connection_made, "connection_lost": connection_lost}
    return type("GuardedHTTPProtocol", (AutoHTTPProtocol,), members)


def _log_failure(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("the HTTP API stopped on an error", exc_info=task.exception())
