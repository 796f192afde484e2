"""A webhook receiver that checks the signature, fed by a server with ``webhooks``."""

from __future__ import annotations

import hmac
import json
import queue
import smtplib
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from webhook_signature import verify

from pytest_tempinbox import InboxServer, TempInboxClient

SECRET = "whsec-shared-with-the-server"


def test_a_receiver_verifies_each_request() -> None:
    """A stdlib receiver on a free port: it answers 204 to a signed request, 401 otherwise."""
    received: queue.Queue[tuple[bool, dict[str, Any]]] = queue.Queue()

    class Receiver(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            headers = {name.lower(): value for name, value in self.headers.items()}
            signed = verify(SECRET, headers, body)
            self.send_response(204 if signed else 401)
            self.end_headers()
            received.put((signed, json.loads(body)))

        def log_message(self, format: str, *args: object) -> None:
            pass

    endpoint = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=endpoint.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{endpoint.server_address[1]}/tempinbox"
    try:
        # --8<-- [start:server]
        with (
            InboxServer(webhooks=[url], webhook_secret=SECRET) as server,
            TempInboxClient(server.api_url) as client,
        ):
            inbox = client.generate()
            with smtplib.SMTP(server.smtp_host, server.smtp_port) as smtp:
                smtp.sendmail("app@example.com", [inbox.address], b"Subject: Hi\r\n\r\nHello\r\n")
            signed, event = received.get(timeout=10)
            assert signed
            assert event["event"] == "message.received"
            assert event["message"]["subject"] == "Hi"
        # --8<-- [end:server]
    finally:
        endpoint.shutdown()
        endpoint.server_close()


def test_a_forged_or_stale_request_is_refused() -> None:
    """Another secret, a changed body or an old timestamp does not verify."""
    body = b'{"event":"message.received"}'
    now = str(int(time.time()))
    signature = (
        "sha256=" + hmac.new(SECRET.encode(), f"{now}.".encode() + body, "sha256").hexdigest()
    )
    headers = {"x-tempinbox-timestamp": now, "x-tempinbox-signature": signature}
    assert verify(SECRET, headers, body)
    assert not verify("another-secret", headers, body)
    assert not verify(SECRET, headers, body + b" ")
    stale = {**headers, "x-tempinbox-timestamp": str(int(now) - 3600)}
    assert not verify(SECRET, stale, body)
