"""A bare socket server that holds one HTTP request until triggered, then answers a fixed reply.

The reference of the ``latency`` part: what a ``requests`` keep-alive session
costs from a server's answer to the parsed body when the server itself costs
nothing. It runs in threads of the bench's process (as the in-process
``InboxServer`` does): one accepts, one per connection reads a request's head,
marks it held, blocks until :meth:`BareHeldServer.trigger`, then writes the
reply in one ``sendall``. No HTTP parsing beyond the blank line that ends a
head (a ``GET`` has no body), no routing, no framework.
"""

from __future__ import annotations

import contextlib
import socket
import threading

__all__ = ["BareHeldServer"]

HOST = "127.0.0.1"
_TIMEOUT = 30.0
_HEAD_END = b"\r\n\r\n"


class BareHeldServer:
    """Serve ``body`` (JSON) to every request, each one when :meth:`trigger` is called.

    One request is held at a time across all connections: the bench has one
    waiter pending at once. :meth:`held` says whether a request is waiting for
    its trigger, for a check that the pause before the trigger was long enough.
    """

    def __init__(self, body: bytes) -> None:
        head = (
            "HTTP/1.1 200 OK\r\n"
            "content-type: application/json\r\n"
            f"content-length: {len(body)}\r\n\r\n"
        )
        self.reply = head.encode() + body
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self._listener.bind((HOST, 0))
        self._listener.listen(16)
        self.port: int = self._listener.getsockname()[1]
        self.url = f"http://{HOST}:{self.port}"
        self._held = threading.Event()
        self._go = threading.Event()
        self._closing = False
        self._connections: list[socket.socket] = []
        self._accepting = threading.Thread(target=self._accept, name="bare-http", daemon=True)

    def __enter__(self) -> BareHeldServer:
        self._accepting.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._closing = True
        self._go.set()
        # shutdown() wakes the accept() and recv() that close() alone would leave blocked.
        for sock in [self._listener, *self._connections]:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
        self._accepting.join(_TIMEOUT)

    def held(self) -> bool:
        """Whether a request has arrived and waits for its trigger."""
        return self._held.is_set()

    def trigger(self) -> None:
        """Let the held request (or the next one to arrive) have its reply."""
        self._go.set()

    def _accept(self) -> None:
        while not self._closing:
            try:
                connection, _ = self._listener.accept()
            except OSError:
                return
            connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._connections.append(connection)
            threading.Thread(
                target=self._serve, args=(connection,), name="bare-http-conn", daemon=True
            ).start()

    def _serve(self, connection: socket.socket) -> None:
        pending = b""
        try:
            while not self._closing:
                while _HEAD_END not in pending:
                    chunk = connection.recv(65536)
                    if not chunk:
                        return
                    pending += chunk
                pending = pending.split(_HEAD_END, 1)[1]
                self._held.set()
                self._go.wait(_TIMEOUT)
                self._go.clear()
                self._held.clear()
                if self._closing:
                    return
                connection.sendall(self.reply)
        except OSError:
            return
