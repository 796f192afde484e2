"""A read message's raw bytes kept compressed, and every way of reading them getting them whole.

Asked to (``compress_read_messages``, on in the standalone command), the
memory store keeps a delivery's bytes in one :class:`CompressedBody` that its
copies share, packed when a copy is first parsed. Over
real sockets, the packed bytes must come back byte for byte: the raw route,
IMAP's FETCH and POP3's RETR, with the sizes each reports.
"""

from __future__ import annotations

import imaplib
import os
import poplib
import smtplib
import threading
from collections.abc import Iterator

import pytest
import requests

from pytest_tempinbox import _cli
from pytest_tempinbox.server.inbox_server import InboxServer
from pytest_tempinbox.server.readers.passwords import passwords_of
from pytest_tempinbox.server.store.memory.store import Store
from pytest_tempinbox.server.store.stored_message import PACK_FROM, CompressedBody, StoredMessage

from ..helpers import CLIENT_NAME
from .store_support import deliver

LINE = b"Thanks for signing up: confirm your address by following the link below.\r\n"
RAW = b"From: app@example.test\r\nSubject: Confirm\r\n\r\n" + LINE * 60


def body_of(message: StoredMessage) -> CompressedBody:
    """The compressed body ``message`` holds its bytes in (asserting that it has one)."""
    body = message.body
    assert body is not None
    return body


def test_a_packed_body_gives_back_the_same_bytes_and_size() -> None:
    body = CompressedBody(RAW)
    body.pack()
    assert body.is_packed
    assert body.raw() == RAW
    assert body.size == len(RAW)


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param(b"Subject: hi\r\n\r\n" + b"x" * (PACK_FROM - 20), id="short"),
        pytest.param(b"Subject: noise\r\n\r\n" + os.urandom(4096), id="incompressible"),
    ],
)
def test_a_body_that_packing_would_not_pay_for_stays_plain(raw: bytes) -> None:
    body = CompressedBody(raw)
    body.pack()
    body.pack()  # tried once: never again
    assert not body.is_packed
    assert body.raw() is raw
    assert body.size == len(raw)


def test_readers_on_other_threads_always_see_the_bytes_while_a_body_is_packed() -> None:
    bodies = [CompressedBody(RAW + b"%d\r\n" % number) for number in range(2_000)]
    wrong: list[int] = []

    def read() -> None:
        for number, body in enumerate(bodies):
            if body.raw() != RAW + b"%d\r\n" % number:
                wrong.append(number)

    readers = [threading.Thread(target=read) for _ in range(2)]
    for reader in readers:
        reader.start()
    for body in bodies:
        body.pack()
    for reader in readers:
        reader.join()
    assert wrong == []
    assert all(body.is_packed for body in bodies)


def test_the_copies_of_one_delivery_share_one_body_packed_when_one_is_read() -> None:
    store = Store(compress_read_messages=True)
    first, second = store.generate(), store.generate()
    one, other = deliver(store, "", [first.address, second.address], RAW)
    assert body_of(one) is body_of(other)
    assert not body_of(one).is_packed
    unpacked_json = other.message()
    assert one.json  # the first read parses the copy and packs the body
    assert body_of(other).is_packed
    assert other.raw == RAW
    assert other.size == len(RAW)
    assert other.message().to_json() == unpacked_json.to_json()
    assert store.stored_bytes == 2 * len(RAW)
    store.delete_messages(first.address, [one.id])
    store.delete_messages(second.address, [other.id])
    assert store.stored_bytes == 0


def test_a_filter_packs_the_body_as_a_read_does() -> None:
    store = Store(compress_read_messages=True)
    inbox = store.generate()
    (stored,) = deliver(store, "", [inbox.address], RAW)
    assert stored.body is None  # a lone copy: its body is made when it is first parsed
    assert stored.facets()[0] == "Confirm"
    assert body_of(stored).is_packed
    assert stored.raw == RAW


def test_a_store_not_asked_to_compress_keeps_read_messages_as_received() -> None:
    store = Store()
    inbox = store.generate()
    (stored,) = deliver(store, "", [inbox.address], RAW)
    assert stored.json
    assert stored.body is None
    assert stored.raw == RAW
    assert stored.size == len(RAW)


def test_the_standalone_command_compresses_and_no_compression_turns_it_off() -> None:
    parser = _cli._parser("tempinbox")
    assert _cli._config(parser.parse_args([])).compress_read_messages is True
    assert _cli._config(parser.parse_args(["--no-compression"])).compress_read_messages is False


@pytest.fixture(scope="module")
def server() -> Iterator[InboxServer]:
    """A server with an IMAP and a POP3 listener, on the memory store, compressing read messages."""
    with InboxServer(imap_port=0, pop3_port=0, compress_read_messages=True) as started:
        yield started


@pytest.fixture
def read_message(server: InboxServer) -> tuple[str, str, str]:
    """An inbox with one message that the API has read (so kept packed): address, password, id."""
    address = server.store.generate().address
    with smtplib.SMTP(server.smtp_host, server.smtp_port, local_hostname=CLIENT_NAME) as smtp:
        smtp.sendmail("app@example.test", [address], RAW)
    with requests.get(f"{server.api_url}/messages/{address}", timeout=10) as response:
        (message,) = response.json()
    (stored,) = server.store.messages(address)
    assert body_of(stored).is_packed
    return address, passwords_of(server.store).password(address), message["id"]


def test_the_raw_route_serves_a_packed_message_byte_for_byte(
    server: InboxServer, read_message: tuple[str, str, str]
) -> None:
    address, _, id = read_message
    with requests.get(f"{server.api_url}/messages/{address}/{id}/raw", timeout=10) as response:
        assert response.status_code == 200
        assert response.content == RAW


def test_imap_fetches_a_packed_message_and_its_size_byte_for_byte(
    server: InboxServer, read_message: tuple[str, str, str]
) -> None:
    address, password, _ = read_message
    assert server.imap_port
    with imaplib.IMAP4(server.smtp_host, server.imap_port, timeout=10) as client:
        client.login(address, password)
        client.select("INBOX")
        status, data = client.fetch("1", "(RFC822.SIZE BODY.PEEK[] BODY.PEEK[HEADER])")
    assert status == "OK"
    first = data[0]
    assert isinstance(first, tuple)
    assert f"RFC822.SIZE {len(RAW)}".encode() in first[0]
    assert first[1] == RAW
    header = data[1]
    assert isinstance(header, tuple)
    assert header[1] == RAW.split(b"\r\n\r\n")[0] + b"\r\n\r\n"


def test_pop3_retrieves_a_packed_message_and_its_size_byte_for_byte(
    server: InboxServer, read_message: tuple[str, str, str]
) -> None:
    address, password, _ = read_message
    assert server.pop3_port
    client = poplib.POP3(server.smtp_host, server.pop3_port, timeout=10)
    try:
        client.user(address)
        client.pass_(password)
        sizes = client.list()[1]
        head = client.top(1, 0)[1]
        whole = client.retr(1)[1]
    finally:
        client.quit()
    assert sizes == [b"1 %d" % len(RAW)]
    assert head == [b"From: app@example.test", b"Subject: Confirm", b""]
    assert b"\r\n".join(whole) + b"\r\n" == RAW
