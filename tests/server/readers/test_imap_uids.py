"""UIDNEXT over IMAP: it never goes down, whoever deleted the newest messages; both stores."""

from __future__ import annotations

import imaplib
from collections.abc import Iterator

import pytest

from pytest_tempinbox.server.inbox_server import InboxServer

from .imap_support import Account, account_of


@pytest.fixture(params=["memory", "redis"])
def account(request: pytest.FixtureRequest) -> Iterator[Account]:
    """An inbox of a server with an IMAP listener, on each store, holding three messages."""
    store = "memory" if request.param == "memory" else request.getfixturevalue("redis_url")
    with InboxServer(imap_port=0, store=store) as server:
        made = account_of(server)
        for _ in range(3):
            made.send()
        yield made


def session(account: Account) -> imaplib.IMAP4:
    """A logged-in imaplib session with INBOX selected."""
    assert account.server.imap_port is not None
    client = imaplib.IMAP4(account.server.smtp_host, account.server.imap_port, timeout=10)
    client.login(account.address, account.password)
    client.select("INBOX")
    return client


def test_uidnext_stays_after_the_newest_message_is_expunged(account: Account) -> None:
    client = session(account)
    client.uid("STORE", "3", "+FLAGS", "(\\Deleted)")
    client.expunge()
    client.logout()
    again = session(account)
    assert again.untagged_responses["UIDNEXT"] == [b"4"]
    assert again.status("INBOX", "(UIDNEXT MESSAGES)")[1] == [b"INBOX (UIDNEXT 4 MESSAGES 2)"]
    again.logout()


def test_uidnext_stays_after_the_inbox_is_emptied_elsewhere(account: Account) -> None:
    store = account.server.store
    store.delete_messages(account.address, [m.id for m in store.messages(account.address)])
    client = session(account)
    assert client.untagged_responses["UIDNEXT"] == [b"4"]
    client.logout()


def test_a_uid_range_to_star_reaches_the_highest_uid_in_use(account: Account) -> None:
    client = session(account)
    client.uid("STORE", "3", "+FLAGS", "(\\Deleted)")
    client.expunge()
    assert client.uid("SEARCH", "UID", "5:*") == ("OK", [b"2"])
    client.logout()
