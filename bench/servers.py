"""The SMTP servers the ingestion benchmark feeds: ours, bare aiosmtpd, smtp-sink and the peers.

Each is a context manager that starts the server on 127.0.0.1, yields a
:class:`Sink` (where to send, to whom, and how to count what arrived) and stops
it. Starting and stopping are not timed.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import math
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass

import requests
from aiosmtpd.smtp import SMTP, Envelope, Session

from pytest_tempinbox.limits import DEFAULT_MAX_MESSAGES_PER_INBOX
from pytest_tempinbox.server.inbox_server import InboxServer

from . import smtp_sink as postfix_sink

__all__ = ["SINKS", "BareSMTP", "Sink"]

HOST = "127.0.0.1"
_STOP_TIMEOUT = 10.0


@dataclass(frozen=True)
class Sink:
    """A running server: its address, the recipients to use, and a count of messages received.

    ``received()`` reads every message back the way a test would (for our server
    through the API, so each one is parsed and served); it is not timed.
    """

    host: str
    port: int
    recipients: list[str]
    received: Callable[[], int]


class _CountingHandler:
    """Takes every message and does nothing with it but count it."""

    def __init__(self) -> None:
        self.count = 0

    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        self.count += 1
        return "250 OK"


class BareSMTP:
    """aiosmtpd's ``SMTP`` with a no-op handler in a background thread: the ceiling.

    The socket is bound by hand with ``proto=IPPROTO_TCP`` (so asyncio sets
    TCP_NODELAY, as our server's are) and served with ``loop.create_server``; the
    hostname is explicit, so no FQDN lookup. Any recipient is accepted.
    """

    def __init__(self, host: str = HOST, hostname: str = "bench.test") -> None:
        self.host = host
        self.hostname = hostname
        self.handler = _CountingHandler()
        self.port = 0
        self._socket: socket.socket | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Bind a free port and serve; returns once the listener accepts connections."""
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.host, 0))
        sock.listen(128)
        sock.setblocking(False)
        self._socket = sock
        self.port = sock.getsockname()[1]
        ready = threading.Event()
        self._thread = threading.Thread(
            target=self._run, args=(sock, ready), name="bare-aiosmtpd", daemon=True
        )
        self._thread.start()
        ready.wait(_STOP_TIMEOUT)

    def stop(self) -> None:
        """Stop serving, end every session and close the loop; returns once the thread ended."""
        loop, stopping, thread = self._loop, self._stopping, self._thread
        if loop is None or stopping is None or thread is None:
            return
        loop.call_soon_threadsafe(stopping.set)
        thread.join(_STOP_TIMEOUT)
        if self._socket is not None:
            self._socket.close()
        self._loop = self._stopping = self._thread = None

    def _run(self, sock: socket.socket, ready: threading.Event) -> None:
        loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(self._serve(loop, sock, ready))
        finally:
            ready.set()
            loop.close()

    async def _serve(
        self, loop: asyncio.AbstractEventLoop, sock: socket.socket, ready: threading.Event
    ) -> None:
        self._loop = loop
        self._stopping = asyncio.Event()

        def protocol() -> asyncio.Protocol:
            return SMTP(self.handler, hostname=self.hostname, loop=loop)

        server = await loop.create_server(protocol, sock=sock)
        ready.set()
        await self._stopping.wait()
        server.close()
        # Sessions still open (a client that did not QUIT) end with their tasks.
        tasks = asyncio.all_tasks() - {asyncio.current_task()}
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await server.wait_closed()

    def __enter__(self) -> BareSMTP:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def _any_recipients(clients: int) -> list[str]:
    return [f"user{index}@example.test" for index in range(clients)]


@contextlib.contextmanager
def bare_aiosmtpd(clients: int, messages: int) -> Iterator[Sink]:
    """The reference: bare aiosmtpd with a no-op handler."""
    with BareSMTP() as server:
        yield Sink(HOST, server.port, _any_recipients(clients), lambda: server.handler.count)


@contextlib.contextmanager
def tempinbox(clients: int, messages: int, transcripts: bool = True) -> Iterator[Sink]:
    """Our server with its default limits, one generated inbox per client.

    Should one client send more than an inbox holds by default, the cap is raised
    to fit, so that every message can be counted afterwards. Without
    ``transcripts``, it keeps no SMTP transcripts (``--no-transcripts``).
    """
    per_inbox = max(DEFAULT_MAX_MESSAGES_PER_INBOX, math.ceil(messages / clients))
    with (
        InboxServer(max_messages_per_inbox=per_inbox, transcripts=transcripts) as server,
        requests.Session() as http,
    ):
        http.trust_env = False
        recipients = []
        for _ in range(clients):
            with http.post(server.api_url + "/generate", timeout=30) as response:
                response.raise_for_status()
                recipients.append(response.json()["email"])

        def received() -> int:
            total = 0
            for address in recipients:
                with http.get(f"{server.api_url}/messages/{address}", timeout=300) as response:
                    response.raise_for_status()
                    total += len(response.json())
            return total

        yield Sink(server.smtp_host, server.smtp_port, recipients, received)


@contextlib.contextmanager
def smtpdfix(clients: int, messages: int) -> Iterator[Sink]:
    """The server of smtpdfix, started the way its ``smtpd`` fixture starts it."""
    from smtpdfix import SMTPDFix

    with SMTPDFix(hostname=HOST) as controller:
        yield Sink(
            HOST, controller.port, _any_recipients(clients), lambda: len(controller.messages)
        )


@contextlib.contextmanager
def localserver(clients: int, messages: int) -> Iterator[Sink]:
    """pytest-localserver's SMTP server, started as its ``smtpserver`` fixture does."""
    from pytest_localserver.smtp import Server

    server = Server(host=HOST)
    server.start()
    try:
        yield Sink(HOST, server.port, _any_recipients(clients), lambda: len(server.outbox))
    finally:
        server.stop()


@contextlib.contextmanager
def smtp_sink(clients: int, messages: int) -> Iterator[Sink]:
    """Postfix's smtp-sink in its own process: C, nothing stored; the physical limit."""
    with postfix_sink.SmtpSink() as server:
        yield Sink(server.host, server.port, _any_recipients(clients), server.received)


SinkFactory = Callable[[int, int], AbstractContextManager[Sink]]

# The reference first: ratios are to it.
SINKS: dict[str, SinkFactory] = {
    "bare aiosmtpd": bare_aiosmtpd,
    "pytest-tempinbox": tempinbox,
    "pytest-tempinbox --no-transcripts": functools.partial(tempinbox, transcripts=False),
    "smtpdfix": smtpdfix,
    "pytest-localserver": localserver,
}
if postfix_sink.available():
    SINKS["smtp-sink"] = smtp_sink
