"""The listening sockets: bound by the server itself, and answering at the open-file limit.

aiosmtpd's ``Controller`` cannot bind port 0 and uvicorn binds after it starts;
binding here, in the caller's thread, lets a taken port fail in
:meth:`~pytest_tempinbox.server.InboxServer.start` with a clear error, and the
real port be read back from the socket.

At the process's limit of open files (``RLIMIT_NOFILE``) ``accept()`` fails
with ``EMFILE``, and asyncio's answer is no answer: its ``_accept_connection``
logs ``socket.accept() out of system resource`` and pauses the listener for a
second, but goes on calling ``accept()`` up to ``backlog`` times in the same
tick, logging and scheduling one more resume each time: with uvicorn's backlog
of 2,048 a loaded server writes millions of lines, its resumes multiply, and
clients wait. And a server with no descriptor left cannot even import a module
it loads on first use (the message parser), so that its open connections fail
too. A :class:`ListeningSocket` therefore keeps a headroom: a connection
accepted onto one of the last :data:`HEADROOM` descriptors below the limit
is answered with the listener's refusal (SMTP ``421``, HTTP ``503``) and
closed. Should ``accept()`` still meet ``EMFILE`` (another thread took the
headroom), a descriptor kept spare (:class:`Refusals`) is closed to accept the
waiting connection, refuse it, and opened again. Either way asyncio is told
that the queue is empty, connections already open are served as before, and
the log says what was refused once a second at most. uvloop never calls this
``accept()``: there the SMTP and HTTP protocols ask :meth:`Refusals.at_ceiling`
as a connection begins, and at the limit itself libuv's own spare descriptor
closes waiting connections without a word.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import socket
import time
from typing import Any, cast

from ..errors import TOO_MANY_CONNECTIONS, ServerStartError

__all__ = ["ListeningSocket", "Refusals", "http_refusal", "listen", "smtp_refusal"]

log = logging.getLogger(__name__)

_REPORT_INTERVAL = 1.0  # seconds between two lines of the refusal log
_REFUSALS_PER_CALL = 64  # connections refused in one accept() before the loop's next tick
_PAUSE = 0.9  # seconds accept() reports an empty queue after handing EMFILE to asyncio
HEADROOM = 32
"""Descriptors below the open-file limit that connections never take: the server's own.

Imports on first use, Redis connections, the CA's files: what a server needs to
go on serving the connections it holds.
"""


class Refusals:
    """Where connections are refused below the open-file limit, and what was refused.

    One per server, shared by its listeners (they are served by one thread):
    :meth:`open` before serving reads the limit and sets a descriptor spare,
    :meth:`close` after. ``ceiling`` is the first descriptor number a connection
    may not have (the limit less :data:`HEADROOM`; none on Windows).
    ``refused`` counts the connections refused since the start, by listener role.
    """

    def __init__(self) -> None:
        self.refused: dict[str, int] = {}
        self.ceiling: int | None = None
        self._spare: int | None = None
        self._unreported: dict[str, int] = {}
        self._reported_at = -_REPORT_INTERVAL
        self._report_pending = False

    def refuse(self, sock: socket.socket, role: str, reply: bytes) -> bool:
        """Accept one waiting connection of ``sock`` on the spare descriptor, answer, close.

        True when one was refused; False when the spare could not be had (then
        nothing was accepted). Raises :class:`BlockingIOError` when none waits.
        """
        if self._spare is None:
            self._spare = _open_spare()
            if self._spare is None:
                return False
        os.close(self._spare)
        self._spare = None
        try:
            conn, _ = socket.socket.accept(sock)
        except OSError as exc:
            self._spare = _open_spare()
            if exc.errno in (errno.EMFILE, errno.ENFILE):  # another thread took the descriptor
                return False
            raise
        self.turn_away(conn, role, reply)
        self._spare = _open_spare()
        return True

    def turn_away(self, conn: socket.socket, role: str, reply: bytes) -> None:
        """Answer ``reply`` on an accepted connection, close it, and count it refused."""
        with conn:
            _answer(conn, reply)
        self._count(role)

    def at_ceiling(self, transport: asyncio.BaseTransport) -> bool:
        """Tell whether a connection holds one of the last :data:`HEADROOM` descriptors.

        For a protocol's ``connection_made``: on uvloop, whose listeners accept in
        libuv, never calling :meth:`ListeningSocket.accept`.
        """
        sock = transport.get_extra_info("socket")
        return self.ceiling is not None and sock is not None and sock.fileno() >= self.ceiling

    def refuse_transport(self, transport: asyncio.BaseTransport, role: str, reply: bytes) -> None:
        """Answer ``reply`` on a connection its protocol was just given, close it, count it."""
        if reply:
            cast(asyncio.WriteTransport, transport).write(reply)  # uvloop's too
        transport.close()
        self._count(role)

    def _count(self, role: str) -> None:
        self.refused[role] = self.refused.get(role, 0) + 1
        self._unreported[role] = self._unreported.get(role, 0) + 1
        self._report()

    def _report(self) -> None:
        """Log the refusals not reported yet, unless a line went out less than a second ago."""
        if not self._unreported:
            return
        now = time.monotonic()
        wait = self._reported_at + _REPORT_INTERVAL - now
        if wait > 0:
            if not self._report_pending:
                self._report_pending = True
                asyncio.get_running_loop().call_later(wait, self._report_later)
            return
        self._reported_at = now
        counts = ", ".join(f"{count} {role}" for role, count in sorted(self._unreported.items()))
        self._unreported = {}
        log.warning(
            "near the limit of open files (RLIMIT_NOFILE %s): refused %s connection(s) since"
            " the last report; connections already open are served (raise the limit: ulimit -n)",
            _open_files_limit(),
            counts,
        )

    def _report_later(self) -> None:
        self._report_pending = False
        self._report()

    def open(self) -> None:
        """Read the open-file limit and set a descriptor aside: before the listeners serve."""
        limit = _open_files_limit()
        self.ceiling = None if limit is None else limit - HEADROOM
        if self._spare is None:
            self._spare = _open_spare()

    def close(self) -> None:
        """Log the refusals not reported yet, and give the spare descriptor back."""
        self._reported_at = -_REPORT_INTERVAL
        self._report()
        if self._spare is not None:
            os.close(self._spare)
            self._spare = None


class ListeningSocket(socket.socket):
    """A listening socket whose ``accept()`` refuses with ``reply`` at the open-file limit.

    Give it :attr:`refusals`, :attr:`role` and :attr:`reply` before serving;
    without ``refusals`` it is a plain socket.
    """

    refusals: Refusals | None = None
    role = ""
    reply = b""
    _paused_until = 0.0

    def accept(self) -> tuple[socket.socket, Any]:
        """Accept a connection; near the open-file limit, refuse the waiting ones instead.

        Raises :class:`BlockingIOError` once they are refused (asyncio's "the queue
        is empty"). When ``EMFILE`` comes and no descriptor can be spared, it goes
        to asyncio once (it logs it and pauses this listener for a second), and
        the calls of the same burst find the queue empty.
        """
        refusals = self.refusals
        for _ in range(_REFUSALS_PER_CALL):
            try:
                conn, address = super().accept()
            except OSError as exc:
                if refusals is None or exc.errno not in (errno.EMFILE, errno.ENFILE):
                    raise
                if time.monotonic() < self._paused_until:
                    raise BlockingIOError(errno.EAGAIN, "paused at the open-file limit") from None
                if not refusals.refuse(self, self.role, self.reply):
                    self._paused_until = time.monotonic() + _PAUSE
                    raise
                continue
            if refusals is None or refusals.ceiling is None or conn.fileno() < refusals.ceiling:
                return conn, address
            refusals.turn_away(conn, self.role, self.reply)
        raise BlockingIOError(errno.EAGAIN, "refused near the open-file limit")


def _answer(conn: socket.socket, reply: bytes) -> None:
    """Write ``reply`` to a connection about to be closed, as far as it goes without waiting."""
    conn.setblocking(False)
    try:
        # What the client sent already is read, so that closing does not reset the
        # connection (RST) and throw away the reply before the client reads it.
        while conn.recv(65536):
            pass
    except OSError:
        pass
    try:
        if reply:
            conn.send(reply)
        conn.shutdown(socket.SHUT_WR)
    except OSError:
        pass


def _open_spare() -> int | None:
    try:
        return os.open(os.devnull, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None


def _open_files_limit() -> int | None:
    """The soft limit of open files; None where there is none (Windows) or it is infinite."""
    try:
        import resource
    except ImportError:  # Windows: sockets are handles, not numbered descriptors
        return None
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    return None if soft == resource.RLIM_INFINITY else soft


def smtp_refusal(hostname: str, tls: str) -> bytes:
    """What the SMTP listener answers a connection it refuses at the open-file limit.

    Nothing with implicit TLS, where the client expects a handshake: it is closed.
    """
    if tls == "implicit":
        return b""
    return f"421 4.7.0 {hostname} Too many open files, try again later\r\n".encode("ascii")


def http_refusal() -> bytes:
    """What the HTTP listener answers a connection it refuses at the open-file limit.

    A whole response, written before the request is read: ``503`` with a problem
    document, ``Retry-After: 1`` and ``Connection: close``.
    """
    import json

    body = json.dumps(
        {
            "type": f"tag:pytest-tempinbox,2026:problem:{TOO_MANY_CONNECTIONS}",
            "title": "Service Unavailable",
            "status": 503,
            "detail": "the server is near its limit of open files; try again later",
            "code": TOO_MANY_CONNECTIONS,
        },
        separators=(",", ":"),
    ).encode("ascii")
    head = (
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/problem+json\r\n"
        f"Content-Length: {len(body)}\r\nRetry-After: 1\r\nConnection: close\r\n\r\n"
    )
    return head.encode("ascii") + body


def listen(
    host: str,
    port: int,
    role: str,
    backlog: int,
    refusals: Refusals | None = None,
    reply: bytes = b"",
) -> ListeningSocket:
    """A TCP socket bound to ``host``:``port`` and listening, for the ``role`` named in errors.

    ``backlog`` is the length of its queue of connections not accepted yet (the
    kernel caps it at ``net.core.somaxconn`` on Linux). At the open-file limit,
    ``refusals`` lends its spare descriptor to answer ``reply`` (nothing for a
    TLS listener) and close. Raises
    :class:`~pytest_tempinbox.errors.ServerStartError` with a one-line reason
    when the host cannot be resolved or the port is taken.
    """
    try:
        family, _, _, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except (OSError, UnicodeError) as exc:
        raise ServerStartError(f"cannot resolve {role} host {host!r}: {exc}") from exc
    # proto must be IPPROTO_TCP: with proto 0 asyncio does not set TCP_NODELAY on
    # accepted connections, and every HTTP answer then waits ~40 ms for a delayed ACK.
    sock = ListeningSocket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.refusals, sock.role, sock.reply = refusals, role, reply
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(backlog)
        sock.setblocking(False)
    except OSError as exc:
        sock.close()
        reason = exc.strerror or str(exc)
        raise ServerStartError(
            f"cannot listen for {role} on {host}:{port}: {reason.lower()}"
        ) from exc
    return sock
