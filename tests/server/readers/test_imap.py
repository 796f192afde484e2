"""The IMAP server with Python's imaplib and raw sockets: login, fetch, flags, expunge, IDLE."""

from __future__ import annotations

import base64
import imaplib
import threading
import time

import pytest

from pytest_tempinbox.server import InboxServer

from .imap_support import MAIL, Account, Raw, account, account_of, idling, imap_server

__all__ = ["account", "imap_server"]


def login(account: Account) -> imaplib.IMAP4:
    port = account.server.imap_port
    assert port is not None
    client = imaplib.IMAP4(account.server.smtp_host, port)
    client.login(account.address, account.password)
    return client


def test_the_greeting_names_the_capabilities(imap_server: InboxServer) -> None:
    raw = Raw(imap_server)
    assert raw.line().startswith(b"* OK [CAPABILITY IMAP4rev1 LITERAL+ SASL-IR IDLE UIDPLUS")
    raw.close()


def test_uid_fetch_returns_the_message_byte_for_byte(account: Account) -> None:
    account.send()
    client = login(account)
    client.select("INBOX")
    status, data = client.uid("FETCH", "1:*", "(BODY.PEEK[])")
    assert status == "OK"
    assert data[0][1] == MAIL
    client.logout()


def test_a_partial_fetch_of_the_whole_message_is_a_slice_of_its_bytes(account: Account) -> None:
    account.send()
    client = login(account)
    client.select("INBOX")
    status, data = client.uid("FETCH", "1", "(BODY.PEEK[]<6.3>)")
    assert status == "OK"
    assert data[0][0].endswith(b"BODY[]<6> {3}")
    assert data[0][1] == MAIL[6:9]
    client.logout()


def test_select_reports_the_messages_and_uidvalidity(account: Account) -> None:
    account.send()
    account.send()
    client = login(account)
    assert client.select("inbox") == ("OK", [b"2"])
    assert client.untagged_responses["UIDVALIDITY"] == [
        str(account.server.store.uid_validity(account.address)).encode()
    ]
    client.logout()


def test_a_wrong_password_is_refused_after_a_delay(account: Account) -> None:
    port = account.server.imap_port
    assert port is not None
    client = imaplib.IMAP4(account.server.smtp_host, port)
    started = time.monotonic()
    with pytest.raises(imaplib.IMAP4.error, match="AUTHENTICATIONFAILED"):
        client.login(account.address, "wrong")
    assert time.monotonic() - started >= 0.4
    client.shutdown()


def test_an_unknown_inbox_reads_like_a_wrong_password(imap_server: InboxServer) -> None:
    port = imap_server.imap_port
    assert port is not None
    client = imaplib.IMAP4(imap_server.smtp_host, port)
    with pytest.raises(
        imaplib.IMAP4.error, match=r"\[AUTHENTICATIONFAILED\] Authentication failed"
    ):
        client.login("nobody@tempinbox.test", "wrong")
    client.shutdown()


def test_other_mailboxes_do_not_exist(account: Account) -> None:
    client = login(account)
    status, data = client.select("Archive")
    assert status == "NO"
    assert b"NONEXISTENT" in (data[0] or b"")
    client.logout()


def test_fetching_the_body_sets_seen_and_peeking_does_not(account: Account) -> None:
    account.send()
    client = login(account)
    client.select("INBOX")
    client.fetch("1", "(BODY.PEEK[])")
    assert client.search(None, "UNSEEN") == ("OK", [b"1"])
    client.fetch("1", "(RFC822)")
    assert client.search(None, "SEEN") == ("OK", [b"1"])
    client.logout()


def test_deleted_and_expunged_messages_leave_the_inbox(account: Account) -> None:
    account.send()
    account.send()
    client = login(account)
    client.select("INBOX")
    client.store("1", "+FLAGS", "(\\Deleted)")
    assert client.expunge() == ("OK", [b"1"])
    client.logout()
    assert len(account.server.store.messages(account.address)) == 1


def test_header_fields_are_fetched_alone(account: Account) -> None:
    account.send()
    client = login(account)
    client.select("INBOX")
    _, data = client.fetch("1", "(BODY.PEEK[HEADER.FIELDS (SUBJECT)])")
    assert data[0][1] == b"Subject: hello\r\n\r\n"  # type: ignore[index]
    client.logout()


def test_idle_is_told_of_a_new_delivery(account: Account) -> None:
    raw = idling(account)
    threading.Timer(0.2, account.send).start()
    assert raw.line() == b"* 1 EXISTS\r\n"
    raw.send(b"DONE\r\n")
    assert raw.line() == b"c OK IDLE terminated\r\n"
    raw.close()


def test_a_literal_over_the_limit_is_refused_without_being_read(imap_server: InboxServer) -> None:
    raw = Raw(imap_server)
    raw.line()
    raw.send(b"a LOGIN {999999999}\r\n")
    assert raw.line().startswith(b"a BAD literal too big")
    raw.send(b"b NOOP\r\n")
    assert raw.line() == b"b OK NOOP completed\r\n"
    raw.close()


def test_a_non_synchronizing_literal_over_the_limit_ends_the_session(
    imap_server: InboxServer,
) -> None:
    raw = Raw(imap_server)
    raw.line()
    raw.send(b"a LOGIN {999999999+}\r\n")
    assert raw.line().startswith(b"* BYE literal too big")
    assert raw.line() == b""
    raw.close()


def test_a_literal_login_is_read_after_the_continuation(account: Account) -> None:
    raw = Raw(account.server)
    raw.line()
    user = account.address.encode()
    raw.send(b"a LOGIN {%d}\r\n" % len(user))
    assert raw.line().startswith(b"+ ")
    raw.send(user + b" " + account.password.encode() + b"\r\n")
    assert raw.line().startswith(b"a OK")
    raw.close()


@pytest.mark.parametrize(
    "line",
    [b"a FROB\r\n", b"\xff\xfe junk\r\n", b"a SELECT (\r\n", b"a FETCH 1 (\r\n", b"\r\n"],
)
def test_junk_is_answered_bad(imap_server: InboxServer, line: bytes) -> None:
    raw = Raw(imap_server)
    raw.line()
    raw.send(line)
    assert b" BAD " in raw.line()
    raw.close()


def test_invalid_modified_utf7_names_are_bad(account: Account) -> None:
    raw = Raw(account.server)
    raw.line()
    raw.send(f"a LOGIN {account.address} {account.password}\r\nb SELECT &Jjo\r\n".encode())
    raw.until(b"a")
    assert raw.line() == b"b BAD invalid mailbox name (modified UTF-7 expected)\r\n"
    raw.close()


def test_a_flood_of_bad_commands_closes_the_session(imap_server: InboxServer) -> None:
    raw = Raw(imap_server)
    raw.line()
    raw.send(b"a FROB\r\n" * 100)
    lines = [raw.line() for _ in range(21)]
    assert lines[-1] == b"* BYE too many bad commands\r\n"
    assert raw.line() == b""
    raw.close()


def test_a_flood_of_noops_is_answered_quickly(imap_server: InboxServer) -> None:
    raw = Raw(imap_server)
    raw.line()
    started = time.monotonic()
    raw.send(b"a NOOP\r\n" * 10_000)
    for _ in range(10_000):
        assert raw.line() == b"a OK NOOP completed\r\n"
    assert time.monotonic() - started < 5
    raw.close()


def test_an_overlong_line_ends_the_session(imap_server: InboxServer) -> None:
    raw = Raw(imap_server)
    raw.line()
    raw.send(b"a " + b"x" * 70_000 + b"\r\n")
    assert raw.line().startswith(b"* BYE line too long")
    raw.close()


def test_sessions_of_one_server_share_the_flags(imap_server: InboxServer) -> None:
    account = account_of(imap_server)
    account.send()
    first = login(account)
    first.select("INBOX")
    first.store("1", "+FLAGS", "(\\Seen)")
    second = login(account)
    second.select("INBOX")
    assert second.search(None, "SEEN") == ("OK", [b"1"])
    first.logout()
    second.logout()


def test_a_conversation_sent_byte_by_byte_gets_the_same_answers(account: Account) -> None:
    account.send()
    conversation = (
        f'a LOGIN {account.address} "{account.password}"\r\nb SELECT INBOX\r\n'
        "c UID FETCH 1:* (UID RFC822.SIZE)\r\nd LOGOUT\r\n"
    ).encode()
    answers = []
    for chunked in (False, True):
        raw = Raw(account.server)
        raw.line()
        if chunked:
            for index in range(len(conversation)):
                raw.send(conversation[index : index + 1])
        else:
            raw.send(conversation)
        answers.append(raw.until(b"d"))
        raw.close()
    assert answers[0] == answers[1]
    assert b"* 1 FETCH (UID 1 RFC822.SIZE %d)\r\n" % len(MAIL) in answers[0]


def test_an_overlong_line_in_idle_ends_the_session(account: Account) -> None:
    raw = idling(account)
    raw.send(b"x" * 100 + b"\r\n")
    assert raw.line() == b"* BYE line too long\r\n"
    raw.close()


def test_authenticate_plain_after_the_continuation(account: Account) -> None:
    raw = Raw(account.server)
    raw.line()
    raw.send(b"a AUTHENTICATE PLAIN\r\n")
    assert raw.line() == b"+ \r\n"
    raw.send(base64.b64encode(f"\0{account.address}\0{account.password}".encode()) + b"\r\n")
    assert raw.line().startswith(b"a OK")
    raw.close()


def test_authenticate_plain_with_bad_base64_is_bad(imap_server: InboxServer) -> None:
    raw = Raw(imap_server)
    raw.line()
    raw.send(b"a AUTHENTICATE PLAIN !!!notbase64\r\n")
    assert raw.line() == b"a BAD the PLAIN response is not base64\r\n"
    raw.close()
