"""The IMAP server with the Python IMAP libraries applications use: IMAPClient and aioimaplib."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from .imap_support import MAIL, Account, account, imap_server

__all__ = ["account", "imap_server"]


@pytest.fixture
def logged_in(account: Account) -> Iterator[Any]:
    """An IMAPClient logged in to the account, INBOX selected."""
    imapclient = pytest.importorskip("imapclient")
    port = account.server.imap_port
    assert port is not None
    with imapclient.IMAPClient(account.server.smtp_host, port=port, ssl=False) as client:
        client.login(account.address, account.password)
        yield client


def test_imapclient_fetches_the_message_and_its_envelope(account: Account, logged_in: Any) -> None:
    account.send()
    logged_in.select_folder("INBOX")
    uids = logged_in.search(["UNSEEN"])
    assert uids == [1]
    fetched = logged_in.fetch(uids, ["BODY.PEEK[]", "ENVELOPE", "BODYSTRUCTURE", "FLAGS"])
    assert fetched[1][b"BODY[]"] == MAIL
    assert fetched[1][b"ENVELOPE"].subject == b"hello"
    assert fetched[1][b"FLAGS"] == ()


def test_imapclient_deletes_with_uid_expunge(account: Account, logged_in: Any) -> None:
    account.send()
    account.send()
    logged_in.select_folder("INBOX")
    logged_in.delete_messages([2])
    logged_in.uid_expunge([2])
    assert [m.uid for m in account.server.store.messages(account.address)] == [1]


def test_aioimaplib_logs_in_and_fetches_by_uid(account: Account) -> None:
    aioimaplib = pytest.importorskip("aioimaplib")
    account.send()

    async def fetch() -> bytes:
        client = aioimaplib.IMAP4(host=account.server.smtp_host, port=account.server.imap_port)
        await client.wait_hello_from_server()
        await client.login(account.address, account.password)
        await client.select("INBOX")
        response = await client.uid("fetch", "1", "(BODY.PEEK[])")
        await client.logout()
        # aioimaplib leaves its connection open after LOGOUT: closed here, and the
        # loop turned once so that it is gone before asyncio.run() closes the loop.
        client.protocol.transport.close()
        await asyncio.sleep(0.01)
        assert response.result == "OK"
        return bytes(response.lines[1])

    assert asyncio.run(fetch()) == MAIL
