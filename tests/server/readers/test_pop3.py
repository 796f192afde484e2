"""POP3 with clients nobody here wrote: Python's poplib and curl, over real sockets, both stores."""

from __future__ import annotations

import poplib
import shutil
import smtplib
import subprocess
from collections.abc import Iterator

import pytest

from pytest_tempinbox.server.inbox_server import InboxServer
from pytest_tempinbox.server.readers.passwords import passwords_of

from ...helpers import CLIENT_NAME

RAW = b"From: app@example.com\r\nSubject: hi\r\n\r\n.starts with a dot\r\nline two\r\n"


@pytest.fixture(params=["memory", "redis"])
def server(request: pytest.FixtureRequest) -> Iterator[InboxServer]:
    """A server with a POP3 listener, on each store."""
    store = "memory" if request.param == "memory" else request.getfixturevalue("redis_url")
    with InboxServer(pop3_port=0, store=store) as started:
        yield started


def inbox_with(server: InboxServer, *raws: bytes) -> tuple[str, str]:
    address = server.store.generate().address
    with smtplib.SMTP(server.smtp_host, server.smtp_port, local_hostname=CLIENT_NAME) as smtp:
        for raw in raws:
            smtp.sendmail("app@example.com", [address], raw)
    return address, passwords_of(server.store).password(address)


def pop(server: InboxServer) -> poplib.POP3:
    assert server.pop3_port
    return poplib.POP3(server.smtp_host, server.pop3_port, timeout=10)


def command(client: poplib.POP3, line: bytes) -> bytes:
    """Send ``line`` as it is and read the one-line answer (poplib checks what it sends)."""
    client.sock.sendall(line + b"\r\n")
    return client.file.readline()


def test_a_message_is_retrieved_byte_for_byte(server: InboxServer) -> None:
    address, password = inbox_with(server, RAW)
    client = pop(server)
    client.user(address)
    client.pass_(password)
    assert client.stat() == (1, len(RAW))
    _, lines, _ = client.retr(1)
    assert b"\r\n".join(lines) + b"\r\n" == RAW
    client.quit()


def test_uidl_gives_the_store_ids(server: InboxServer) -> None:
    address, password = inbox_with(server, RAW, RAW)
    client = pop(server)
    client.user(address)
    client.pass_(password)
    ids = [message.id.encode() for message in server.store.messages(address)]
    _, listing, _ = client.uidl()
    assert listing == [b"1 " + ids[0], b"2 " + ids[1]]
    client.quit()


def test_top_sends_the_headers_and_the_first_lines(server: InboxServer) -> None:
    address, password = inbox_with(server, RAW)
    client = pop(server)
    client.user(address)
    client.pass_(password)
    _, lines, _ = client.top(1, 1)
    assert lines == [b"From: app@example.com", b"Subject: hi", b"", b".starts with a dot"]
    client.quit()


def test_dele_then_quit_deletes_from_the_inbox(server: InboxServer) -> None:
    address, password = inbox_with(server, RAW, RAW)
    kept = server.store.messages(address)[1].id
    client = pop(server)
    client.user(address)
    client.pass_(password)
    client.dele(1)
    assert client.stat()[0] == 1
    client.quit()
    assert [message.id for message in server.store.messages(address)] == [kept]


def test_rset_undoes_dele(server: InboxServer) -> None:
    address, password = inbox_with(server, RAW)
    client = pop(server)
    client.user(address)
    client.pass_(password)
    client.dele(1)
    client.rset()
    client.quit()
    assert len(server.store.messages(address)) == 1


def test_a_wrong_password_is_refused_like_an_unknown_user(server: InboxServer) -> None:
    address, _ = inbox_with(server)
    answers = []
    for user in (address, "nobody@tempinbox.test"):
        client = pop(server)
        client.user(user)
        with pytest.raises(poplib.error_proto) as refused:
            client.pass_("wrong")
        answers.append(refused.value.args[0])
        client.close()
    assert answers == [b"-ERR [AUTH] invalid user name or password"] * 2


def test_capa_lists_uidl_top_and_sasl_plain(server: InboxServer) -> None:
    client = pop(server)
    capabilities = client.capa()
    assert {"UIDL", "TOP", "USER", "SASL"} <= set(capabilities)
    assert "STLS" not in capabilities
    client.quit()


def test_unknown_and_bad_commands_get_err_then_the_session_closes() -> None:
    with InboxServer(pop3_port=0) as server:
        client = pop(server)
        for _ in range(10):
            assert command(client, b"BOGUS").startswith(b"-ERR BOGUS is not valid")
        assert client.file.readline() == b"-ERR too many bad commands; closing\r\n"
        assert client.file.readline() == b""
        client.close()


def test_a_line_over_the_limit_is_refused_and_closed() -> None:
    with InboxServer(pop3_port=0) as server:
        client = pop(server)
        client.sock.sendall(b"USER " + b"a" * 2000 + b"\r\n")
        assert client.file.readline().startswith(b"-ERR line over 512 octets")
        assert client.file.readline() == b""
        client.close()


def test_bad_auth_plain_base64_gets_err() -> None:
    with InboxServer(pop3_port=0) as server:
        client = pop(server)
        assert b"base64" in command(client, b"AUTH PLAIN !!!notbase64")
        client.quit()


def test_stls_upgrades_and_then_logs_in() -> None:
    with InboxServer(pop3_port=0, tls="required") as server:
        address, password = inbox_with_tls(server)
        client = pop(server)
        with pytest.raises(poplib.error_proto, match="STLS first"):
            client.user(address)
        client.stls(server.ssl_context())
        client.user(address)
        client.pass_(password)
        assert client.stat() == (1, len(RAW))
        client.quit()


def test_implicit_tls_serves_pop3s() -> None:
    with InboxServer(pop3_port=0, tls="implicit") as server:
        address, password = inbox_with_tls(server)
        assert server.pop3_port
        client = poplib.POP3_SSL(
            server.smtp_host, server.pop3_port, context=server.ssl_context(), timeout=10
        )
        client.user(address)
        client.pass_(password)
        assert client.stat()[0] == 1
        client.quit()


def inbox_with_tls(server: InboxServer) -> tuple[str, str]:
    address = server.store.generate().address
    if server.tls == "implicit":
        smtp: smtplib.SMTP = smtplib.SMTP_SSL(
            server.smtp_host, server.smtp_port, context=server.ssl_context()
        )
    else:
        smtp = smtplib.SMTP(server.smtp_host, server.smtp_port, local_hostname=CLIENT_NAME)
        smtp.starttls(context=server.ssl_context())
    with smtp:
        smtp.sendmail("app@example.com", [address], RAW)
    return address, passwords_of(server.store).password(address)


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
def test_curl_lists_retrieves_and_deletes(server: InboxServer) -> None:
    address, password = inbox_with(server, RAW)
    url = f"pop3://{server.smtp_host}:{server.pop3_port}/"
    login = ["--user", f"{address}:{password}", "--silent", "--show-error"]
    listed = subprocess.run(["curl", *login, url], capture_output=True, check=True, timeout=20)
    assert listed.stdout == f"1 {len(RAW)}\r\n".encode()
    got = subprocess.run(["curl", *login, url + "1"], capture_output=True, check=True, timeout=20)
    assert got.stdout == RAW
    subprocess.run(
        ["curl", *login, "-X", "DELE", url + "1", "--list-only"],
        capture_output=True,
        check=True,
        timeout=20,
    )
    assert server.store.messages(address) == []


@pytest.mark.parametrize("transport", ["http", "local"])
def test_the_client_inbox_gives_its_pop3_account(transport: str) -> None:
    from pytest_tempinbox import TempInboxClient

    with InboxServer(pop3_port=0) as server:
        local = server.local_transport() if transport == "local" else None
        inbox = TempInboxClient(server.api_url, transport=local).generate()
        account = inbox.pop3
        assert (account.host, account.port, account.user) == (
            server.smtp_host,
            server.pop3_port,
            inbox.address,
        )
        assert account.tls == "off"
        client = poplib.POP3(account.host, account.port, timeout=10)
        client.user(account.user)
        assert client.pass_(account.password).startswith(b"+OK 0 messages")
        client.quit()


def test_an_inbox_on_a_server_without_imap_says_how_to_start_it() -> None:
    from pytest_tempinbox import TempInboxClient

    with InboxServer(pop3_port=0) as server:
        inbox = TempInboxClient(server.api_url).generate()
        with pytest.raises(RuntimeError, match="--imap-port 0"):
            inbox.imap  # noqa: B018


def test_api_info_names_the_reader_ports() -> None:
    from pytest_tempinbox import TempInboxClient

    with InboxServer(pop3_port=0) as server:
        info = TempInboxClient(server.api_url).info()
        assert (info["pop3_port"], info["imap_port"]) == (server.pop3_port, None)
