"""A real HTTP endpoint for the webhooks' tests: stdlib ``http.server`` in a thread, recording.

:class:`Receiver` answers each POST with the next status of its script (then
200), after ``delay`` seconds, records the request's headers and body, and lets a test wait for the
``n``-th one. Also: a closed port (a dead endpoint) and the SMTP send the tests share.
"""

from __future__ import annotations

import json
import smtplib
import socket
import ssl
import threading
import time
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from pytest_tempinbox.server.inbox_server import InboxServer

TIMEOUT = 10.0


class Hit:
    """One request the receiver took: its path, headers (lowercased names) and body."""

    def __init__(self, path: str, headers: dict[str, str], body: bytes) -> None:
        self.path = path
        self.headers = headers
        self.body = body

    def json(self) -> Any:
        """The body, read as JSON."""
        return json.loads(self.body)


class Receiver:
    """A webhook endpoint on a free loopback port; a context manager."""

    def __init__(
        self,
        statuses: Iterable[int] = (),
        location: str | None = None,
        tls: ssl.SSLContext | None = None,
        delay: float = 0.0,
    ) -> None:
        self.statuses = list(statuses)
        self.location = location
        self.hits: list[Hit] = []
        self._arrived = threading.Condition()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                headers = {name.lower(): value for name, value in self.headers.items()}
                time.sleep(delay)  # a slow endpoint
                status = receiver.statuses.pop(0) if receiver.statuses else 200
                self.send_response(status)
                if 300 <= status < 400 and receiver.location:
                    self.send_header("Location", receiver.location)
                self.send_header("Content-Length", "0")
                self.end_headers()
                with receiver._arrived:
                    receiver.hits.append(Hit(self.path, headers, body))
                    receiver._arrived.notify_all()

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        scheme, port = "http", self.http.server_address[1]
        if tls is not None:  # HTTPS, as "localhost"
            self.http.socket = tls.wrap_socket(self.http.socket, server_side=True)
            scheme = "https"
        host = "localhost" if tls is not None else "127.0.0.1"
        self.url = f"{scheme}://{host}:{port}/hooks/tempinbox"
        self._thread = threading.Thread(target=self.http.serve_forever, daemon=True)

    def wait_for(self, count: int, timeout: float = TIMEOUT) -> list[Hit]:
        """The first ``count`` requests, once they arrived; AssertionError after ``timeout``."""
        with self._arrived:
            arrived = self._arrived.wait_for(lambda: len(self.hits) >= count, timeout)
            hits = list(self.hits)
        assert arrived, f"expected {count} webhook request(s) within {timeout} s, got {len(hits)}"
        return hits[:count]

    def wait_for_event(self, event: str, timeout: float = TIMEOUT) -> Hit:
        """The first request telling of ``event``, once it arrived (events may cross in flight)."""

        def told() -> Hit | None:
            return next((hit for hit in self.hits if hit.json().get("event") == event), None)

        with self._arrived:
            arrived = self._arrived.wait_for(told, timeout)
            names = [hit.json().get("event") for hit in self.hits]
        assert arrived is not None, f"expected a {event!r} request within {timeout} s, got {names}"
        return arrived

    def quiet_for(self, seconds: float) -> list[Hit]:
        """Every request after ``seconds`` more of waiting (to show none more came)."""
        time.sleep(seconds)
        with self._arrived:
            return list(self.hits)

    def __enter__(self) -> Receiver:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.http.shutdown()
        self.http.server_close()


def closed_port_url() -> str:
    """A URL on a loopback port that nothing listens on (connections are refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/hook"


def send(server: InboxServer, address: str, subject: str = "Welcome") -> None:
    """Send one small message to ``address`` over SMTP."""
    message = f"From: app@example.test\r\nTo: {address}\r\nSubject: {subject}\r\n\r\nHello.\r\n"
    with smtplib.SMTP(server.smtp_host, server.smtp_port) as client:
        client.sendmail("app@example.test", [address], message.encode())


def expected_signature(secret: str, hit: Hit) -> str:
    """The ``X-Tempinbox-Signature`` that ``hit`` must carry when signed with ``secret``."""
    import hashlib
    import hmac

    signed = hit.headers["x-tempinbox-timestamp"].encode() + b"." + hit.body
    return "sha256=" + hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()
