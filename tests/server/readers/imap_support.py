"""A server with an IMAP listener, an inbox with mail in it, and a raw IMAP line reader."""

from __future__ import annotations

import smtplib
import socket
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from pytest_tempinbox.server import InboxServer
from pytest_tempinbox.server.readers.passwords import passwords_of

MAIL = b"From: Ann <ann@example.com>\r\nSubject: hello\r\n\r\nline one\r\n.dot line\r\n"


@dataclass
class Account:
    """An inbox of the server, its password, and the server."""

    server: InboxServer
    address: str
    password: str

    def send(self, raw: bytes = MAIL) -> None:
        """Deliver ``raw`` to the inbox over SMTP."""
        with smtplib.SMTP(self.server.smtp_host, self.server.smtp_port) as smtp:
            smtp.sendmail("ann@example.com", [self.address], raw)


def account_of(server: InboxServer) -> Account:
    """A new inbox of ``server`` with its reader password."""
    address = server.store.generate().address
    return Account(server, address, passwords_of(server.store).password(address))


@pytest.fixture
def imap_server() -> Iterator[InboxServer]:
    """A server with an IMAP listener on a free port."""
    with InboxServer(imap_port=0) as server:
        yield server


@pytest.fixture
def account(imap_server: InboxServer) -> Account:
    """An inbox of the IMAP server."""
    return account_of(imap_server)


class Raw:
    """A plain socket speaking IMAP line by line, for exact transcripts."""

    def __init__(self, server: InboxServer) -> None:
        assert server.imap_port is not None
        self.sock = socket.create_connection((server.smtp_host, server.imap_port), timeout=5)
        self.file = self.sock.makefile("rb")

    def line(self) -> bytes:
        """The next line the server sends, CRLF included."""
        return self.file.readline()

    def send(self, data: bytes) -> None:
        """Send ``data`` as it is."""
        self.sock.sendall(data)

    def until(self, tag: bytes) -> list[bytes]:
        """The lines up to the tagged answer of ``tag``, that one included."""
        lines = []
        while True:
            line = self.line()
            lines.append(line)
            if not line or line.startswith(tag + b" "):
                return lines

    def close(self) -> None:
        """Close the connection."""
        self.file.close()
        self.sock.close()


def idling(account: Account) -> Raw:
    """A raw session logged in to ``account``, INBOX selected, in IDLE."""
    raw = Raw(account.server)
    raw.line()
    raw.send(f"a LOGIN {account.address} {account.password}\r\nb SELECT INBOX\r\n".encode())
    raw.until(b"b")
    raw.send(b"c IDLE\r\n")
    assert raw.line() == b"+ idling\r\n"
    return raw
