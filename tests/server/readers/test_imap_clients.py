"""The IMAP server with clients nobody here wrote: curl, fetchmail, mbsync; TLS; Redis."""

from __future__ import annotations

import imaplib
import shutil
import smtplib
import subprocess
import threading
from pathlib import Path

import pytest

from pytest_tempinbox.server import InboxServer
from pytest_tempinbox.server.readers.passwords import passwords_of

from .imap_support import Account, Raw, account, account_of, imap_server

__all__ = ["account", "imap_server"]

CORPUS_MAIL = (
    Path(__file__).resolve().parents[2] / "corpus/transactional/gitea/en-activate-email.eml"
).read_bytes()


def crlf(raw: bytes) -> bytes:
    """The mail as SMTP carries it: CRLF line ends."""
    return raw.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")


def curl_imap(account: Account, path: str) -> bytes:
    """What ``curl imap://`` prints for ``path`` on the account's server, logged in as it."""
    url = f"imap://{account.server.smtp_host}:{account.server.imap_port}/{path}"
    login = f"{account.address}:{account.password}"
    command = ["curl", "--silent", "--show-error", "--user", login, url]
    return subprocess.run(command, capture_output=True, check=True, timeout=20).stdout


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
def test_curl_fetches_a_message_by_uid(account: Account) -> None:
    account.send(crlf(CORPUS_MAIL))
    assert curl_imap(account, "INBOX;UID=1") == crlf(CORPUS_MAIL)


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
def test_curl_lists_the_mailboxes(account: Account) -> None:
    assert curl_imap(account, "") == b'* LIST (\\HasNoChildren) "/" INBOX\r\n'


@pytest.mark.skipif(shutil.which("fetchmail") is None, reason="fetchmail is not installed")
def test_fetchmail_fetches_the_corpus_mail_byte_exact(account: Account, tmp_path: Path) -> None:
    account.send(crlf(CORPUS_MAIL))
    out = tmp_path / "mail"
    rc = tmp_path / "fetchmailrc"
    rc.write_text(
        f"poll {account.server.smtp_host} service {account.server.imap_port} protocol IMAP\n"
        f'  user "{account.address}" password "{account.password}"\n'
        f"  mda \"cat > {out}\" sslproto '' keep\n"
    )
    rc.chmod(0o600)
    subprocess.run(
        ["fetchmail", "--fetchmailrc", str(rc), "--pidfile", str(tmp_path / "pid"), "--nosyslog"],
        capture_output=True,
        timeout=60,
        env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"},
        check=False,
    )
    fetched = out.read_bytes().replace(b"\r\n", b"\n")
    assert fetched.startswith(b"Received: ")  # fetchmail's own trace header, then the mail
    assert fetched.endswith(CORPUS_MAIL.replace(b"\r\n", b"\n"))
    assert len(fetched) - len(CORPUS_MAIL) < 400


@pytest.mark.skipif(shutil.which("mbsync") is None, reason="mbsync (isync) is not installed")
def test_mbsync_fetches_the_corpus_mail_byte_exact(account: Account, tmp_path: Path) -> None:
    account.send(crlf(CORPUS_MAIL))
    maildir = tmp_path / "Mail"
    maildir.mkdir()
    config = tmp_path / "mbsyncrc"
    config.write_text(
        f"IMAPAccount t\nHost {account.server.smtp_host}\nPort {account.server.imap_port}\n"
        f"User {account.address}\nPass {account.password}\nSSLType None\nAuthMechs LOGIN PLAIN\n\n"
        "IMAPStore remote\nAccount t\n\n"
        f"MaildirStore local\nPath {maildir}/\nInbox {maildir}/INBOX\n\n"
        "Channel c\nFar :remote:\nNear :local:\nPatterns INBOX\nCreate Near\nSync Pull\n"
    )
    result = subprocess.run(
        ["mbsync", "--config", str(config), "c"],
        capture_output=True,
        timeout=60,
        env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"},
        check=False,
    )
    files = list((maildir / "INBOX").glob("*/*"))
    assert len(files) == 1, result.stderr.decode(errors="replace")
    stored = b"".join(
        line
        for line in files[0].read_bytes().splitlines(keepends=True)
        if not line.startswith(b"X-TUID: ")
    )
    assert stored.replace(b"\r\n", b"\n") == CORPUS_MAIL.replace(b"\r\n", b"\n")


def _send_tls(server: InboxServer, address: str) -> None:
    if server.tls == "implicit":
        smtp: smtplib.SMTP = smtplib.SMTP_SSL(
            server.smtp_host, server.smtp_port, context=server.ssl_context()
        )
    else:
        smtp = smtplib.SMTP(server.smtp_host, server.smtp_port)
        smtp.starttls(context=server.ssl_context())
    with smtp:
        smtp.sendmail("ann@example.com", [address], b"Subject: tls\r\n\r\nbody\r\n")


def test_starttls_is_required_before_login_when_tls_is_required() -> None:
    with InboxServer(imap_port=0, tls="required") as server:
        address = server.store.generate().address
        _send_tls(server, address)
        password = passwords_of(server.store).password(address)
        assert server.imap_port is not None
        client = imaplib.IMAP4(server.smtp_host, server.imap_port)
        assert "LOGINDISABLED" in client.capabilities
        client.starttls(server.ssl_context())
        client.login(address, password)
        assert client.select("INBOX") == ("OK", [b"1"])
        client.logout()


def test_implicit_tls_serves_imaps() -> None:
    with InboxServer(imap_port=0, tls="implicit") as server:
        address = server.store.generate().address
        _send_tls(server, address)
        password = passwords_of(server.store).password(address)
        assert server.imap_port is not None
        client = imaplib.IMAP4_SSL(
            server.smtp_host, server.imap_port, ssl_context=server.ssl_context()
        )
        client.login(address, password)
        assert client.select("INBOX") == ("OK", [b"1"])
        client.logout()


def _idle_then_deliver(
    reader: InboxServer, sender: InboxServer, address: str, password: str
) -> None:
    raw = Raw(reader)
    raw.line()
    raw.send(f"a LOGIN {address} {password}\r\nb SELECT INBOX\r\n".encode())
    raw.until(b"b")
    raw.send(b"c IDLE\r\n")
    assert raw.line() == b"+ idling\r\n"
    target = Account(sender, address, password)
    threading.Timer(0.2, target.send).start()
    assert raw.line() == b"* 1 EXISTS\r\n"
    raw.send(b"DONE\r\n")
    assert raw.line() == b"c OK IDLE terminated\r\n"
    raw.close()


def test_idle_on_redis_is_woken_by_a_delivery_to_another_server(redis_url: str) -> None:
    with (
        InboxServer(imap_port=0, store=redis_url) as reader,
        InboxServer(store=redis_url) as sender,
    ):
        account = account_of(reader)
        _idle_then_deliver(reader, sender, account.address, account.password)


def test_idle_on_redis_is_woken_by_a_delivery_to_its_server(redis_url: str) -> None:
    with InboxServer(imap_port=0, store=redis_url) as server:
        account = account_of(server)
        _idle_then_deliver(server, server, account.address, account.password)
