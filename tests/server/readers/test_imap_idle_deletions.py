"""IDLE told of deletions made elsewhere: another IMAP session, POP3, the HTTP API; both stores."""

from __future__ import annotations

import imaplib
import poplib
import time
from collections.abc import Iterator

import pytest
import requests

from pytest_tempinbox.server.inbox_server import InboxServer

from .imap_support import Account, Raw, account_of, idling

# Far below IDLE's periodic look (a minute): the deletion itself must wake it.
_PROMPT = 5.0


@pytest.fixture(params=["memory", "redis"])
def account(request: pytest.FixtureRequest) -> Iterator[Account]:
    """An inbox holding two messages, of a server with IMAP and POP3, on each store."""
    store = "memory" if request.param == "memory" else request.getfixturevalue("redis_url")
    with InboxServer(imap_port=0, pop3_port=0, store=store) as server:
        made = account_of(server)
        made.send()
        made.send()
        yield made


def prompt_idling(account: Account) -> Raw:
    """A raw session in IDLE on the inbox, whose reads give up long before IDLE's own look."""
    raw = idling(account)
    raw.sock.settimeout(_PROMPT)
    return raw


def pop3_delete(server: InboxServer, account: Account, number: int) -> None:
    """Delete message ``number`` of the inbox over POP3 on ``server`` (DELE, then QUIT)."""
    assert server.pop3_port is not None
    pop = poplib.POP3(server.smtp_host, server.pop3_port, timeout=10)
    pop.user(account.address)
    pop.pass_(account.password)
    pop.dele(number)
    pop.quit()


def test_idle_is_told_of_a_message_expunged_by_another_session(account: Account) -> None:
    raw = prompt_idling(account)
    assert account.server.imap_port is not None
    other = imaplib.IMAP4(account.server.smtp_host, account.server.imap_port, timeout=10)
    other.login(account.address, account.password)
    other.select("INBOX")
    other.store("1", "+FLAGS", "(\\Deleted)")
    other.expunge()
    other.logout()
    assert raw.line() == b"* 1 EXPUNGE\r\n"
    assert raw.line() == b"* 1 EXISTS\r\n"
    raw.close()


def test_idle_is_told_of_messages_deleted_over_pop3(account: Account) -> None:
    raw = prompt_idling(account)
    pop3_delete(account.server, account, 2)
    assert raw.line() == b"* 2 EXPUNGE\r\n"
    assert raw.line() == b"* 1 EXISTS\r\n"
    raw.close()


def test_idle_ends_with_bye_when_the_inbox_is_deleted_over_http(account: Account) -> None:
    raw = prompt_idling(account)
    started = time.monotonic()
    url = f"{account.server.api_url}/delete/{account.address}"
    assert requests.delete(url, timeout=10).status_code == 200
    assert raw.line() == b"* BYE the inbox is gone (deleted or expired)\r\n"
    assert raw.line() == b""
    assert time.monotonic() - started < _PROMPT
    raw.close()


def test_idle_is_told_of_messages_deleted_on_another_server_of_the_same_redis(
    redis_url: str,
) -> None:
    with (
        InboxServer(imap_port=0, store=redis_url) as idling_server,
        InboxServer(pop3_port=0, store=redis_url) as deleting_server,
    ):
        account = account_of(idling_server)
        account.send()
        account.send()
        raw = prompt_idling(account)
        pop3_delete(deleting_server, account, 1)
        assert raw.line() == b"* 1 EXPUNGE\r\n"
        assert raw.line() == b"* 1 EXISTS\r\n"
        raw.close()
