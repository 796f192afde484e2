"""The listening sockets: bound by the server itself, so that port 0 and a taken port work.

aiosmtpd's ``Controller`` cannot bind port 0 and uvicorn binds after it starts;
binding here, in the caller's thread, lets a taken port fail in
:meth:`~pytest_tempinbox.server.InboxServer.start` with a clear error, and the
real port be read back from the socket.
"""

from __future__ import annotations

import socket

from ..errors import ServerStartError

__all__ = ["listen"]


def listen(host: str, port: int, role: str) -> socket.socket:
    """A TCP socket bound to ``host``:``port`` and listening, for the ``role`` named in errors.

    Raises :class:`~pytest_tempinbox.errors.ServerStartError` with a one-line
    reason when the host cannot be resolved or the port is taken.
    """
    try:
        family, _, _, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except (OSError, UnicodeError) as exc:
        raise ServerStartError(f"cannot resolve {role} host {host!r}: {exc}") from exc
    # proto must be IPPROTO_TCP: with proto 0 asyncio does not set TCP_NODELAY on
    # accepted connections, and every HTTP answer then waits ~40 ms for a delayed ACK.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
        sock.setblocking(False)
    except OSError as exc:
        sock.close()
        reason = exc.strerror or str(exc)
        raise ServerStartError(
            f"cannot listen for {role} on {host}:{port}: {reason.lower()}"
        ) from exc
    return sock
