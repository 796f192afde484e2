"""Helpers for the tests: building and sending mail, and a line-level SMTP client."""

from __future__ import annotations

import smtplib
import socket
from collections.abc import Sequence
from email.message import EmailMessage

from pytest_tempinbox.server import InboxServer

# smtplib's default local_hostname is socket.getfqdn(), which can take seconds.
CLIENT_NAME = "client.test"


def make_message(
    to: str, subject: str = "Hello", body: str = "Hi there.\n", sender: str = "app@example.com"
) -> EmailMessage:
    """Build a simple text message."""
    message = EmailMessage()
    message["From"] = sender
    message["To"] = to
    message["Subject"] = subject
    message.set_content(body)
    return message


def send(server: InboxServer, message: EmailMessage, to: Sequence[str] | None = None) -> None:
    """Send ``message`` over a new SMTP connection."""
    with smtplib.SMTP(server.smtp_host, server.smtp_port, local_hostname=CLIENT_NAME) as client:
        client.send_message(message, to_addrs=to)


class RawSMTP:
    """A line-level SMTP client over a plain socket, for exact command and reply tests."""

    def __init__(self, host: str, port: int) -> None:
        self.sock = socket.create_connection((host, port), timeout=10)
        self.file = self.sock.makefile("rb")
        self.greeting = self.reply()

    def reply(self) -> tuple[int, str]:
        """Read one (possibly multi-line) reply: its code and its text lines joined by newlines."""
        lines = []
        while True:
            line = self.file.readline()
            if not line:
                raise ConnectionError("the server closed the connection")
            lines.append(line[4:].rstrip(b"\r\n").decode("utf-8", "replace"))
            if line[3:4] != b"-":
                return int(line[:3]), "\n".join(lines)

    def send(self, data: bytes) -> None:
        """Send bytes as they are."""
        self.sock.sendall(data)

    def command(self, line: str | bytes) -> tuple[int, str]:
        """Send one command line (CRLF added) and read the reply."""
        self.send((line.encode() if isinstance(line, str) else line) + b"\r\n")
        return self.reply()

    def close(self) -> None:
        """Close the connection."""
        self.file.close()
        self.sock.close()
