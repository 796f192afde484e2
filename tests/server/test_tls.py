"""TLS modes over real sockets: the certificate, and smtplib in every mode."""

from __future__ import annotations

import logging
import os
import smtplib
import socket
import ssl
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import requests

from pytest_tempinbox.client.http import HTTPTransport
from pytest_tempinbox.errors import ServerStartError
from pytest_tempinbox.server.inbox_server import InboxServer
from pytest_tempinbox.server.tls import certificate_names
from pytest_tempinbox.smtp_security import TLS_MODES, parse_smtp_auth, parse_tls

from ..helpers import CLIENT_NAME, make_message
from .tls_support import (
    CREDENTIALS,
    HOSTNAME,
    PASSWORD,
    STARTTLS_MODES,
    TIMEOUT,
    Servers,
    connect,
    secure,
    subjects,
)

# --- the certificate --------------------------------------------------------------------


def test_tls_off_has_no_certificate_authority(servers: Servers) -> None:
    server = servers("off")
    assert server.ca_path is None
    with pytest.raises(RuntimeError, match="no TLS certificate: TLS is off"):
        server.ssl_context()
    response = requests.get(server.api_url + "/ca.pem", timeout=TIMEOUT)
    assert response.status_code == 404
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["code"] == "tls_off"


def test_ca_path_is_a_pem_file_that_the_api_serves_too(servers: Servers) -> None:
    server = servers("starttls")
    assert server.ca_path is not None
    pem = Path(server.ca_path).read_bytes()
    assert pem.startswith(b"-----BEGIN CERTIFICATE-----")
    response = requests.get(server.api_url + "/ca.pem", timeout=TIMEOUT)
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/x-pem-file"
    assert response.content == pem


def test_the_ca_answers_alike_in_process_and_over_http(servers: Servers) -> None:
    server = servers("starttls")
    http = HTTPTransport(server.api_url)
    try:
        over_http = http.request("GET", "/ca.pem", timeout=TIMEOUT)
    finally:
        http.close()
    in_process = server.local_transport().request("GET", "/ca.pem", timeout=TIMEOUT)
    assert in_process == over_http
    assert (over_http.status, over_http.content_type) == (200, "application/x-pem-file")


def test_each_server_has_its_own_ca_and_removes_its_file_at_stop() -> None:
    with InboxServer(tls="starttls") as first, InboxServer(tls="starttls") as second:
        assert first.ca_path is not None
        assert second.ca_path is not None
        assert Path(first.ca_path).read_bytes() != Path(second.ca_path).read_bytes()
    assert not Path(first.ca_path).exists()
    assert not Path(second.ca_path).exists()


def test_a_server_that_fails_to_start_leaves_no_ca_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        server = InboxServer(tls="starttls", smtp_port=taken.getsockname()[1])
        with pytest.raises(ServerStartError, match="in use"):
            server.start()
    assert server.ca_path is None
    assert list(tmp_path.iterdir()) == []


def test_trustme_is_imported_only_when_tls_is_on() -> None:
    code = (
        "import sys\n"
        "from pytest_tempinbox.server.inbox_server import InboxServer\n"
        "with InboxServer(smtp_auth='u:p'):\n"
        "    print('trustme' in sys.modules, 'pytest_tempinbox.server.tls' in sys.modules)\n"
        "with InboxServer(tls='starttls'):\n"
        "    print('trustme' in sys.modules)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert result.stdout.split() == ["False", "False", "True"]


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_the_certificate_verifies_for_the_names_clients_use(servers: Servers, host: str) -> None:
    server = servers("implicit")
    context = server.ssl_context()
    assert context.check_hostname
    assert context.verify_mode == ssl.CERT_REQUIRED
    with connect(server, host=host) as client:
        assert client.noop()[0] == 250


def test_the_certificate_names_the_hostname_the_domains_and_loopback(servers: Servers) -> None:
    server = servers("implicit")
    with (
        socket.create_connection((server.smtp_host, server.smtp_port), timeout=TIMEOUT) as raw,
        server.ssl_context().wrap_socket(raw, server_hostname="localhost") as tls,
    ):
        certificate = tls.getpeercert()
    assert certificate is not None
    names = {str(entry[1]) for entry in certificate["subjectAltName"]}
    assert {"localhost", "127.0.0.1", HOSTNAME, "tempinbox.test"} <= names
    assert any(name in names for name in ("::1", "0:0:0:0:0:0:0:1"))


def test_certificate_names_skip_wildcards_and_what_a_certificate_cannot_hold() -> None:
    names = certificate_names("0.0.0.0", ["MX.Example.test.", "under_score.test", "bücher.test"])
    assert names[:3] == ["localhost", "127.0.0.1", "::1"]
    assert "0.0.0.0" not in names
    assert "mx.example.test" in names
    assert "xn--bcher-kva.test" in names
    assert "under_score.test" not in names
    assert socket.gethostname().lower() in names or "_" in socket.gethostname()


def test_a_missing_trustme_is_one_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "trustme", None)  # import trustme -> ImportError
    server = InboxServer(tls="starttls")
    with pytest.raises(ServerStartError) as failed:
        server.start()
    assert "pip install 'pytest-tempinbox[tls]'" in str(failed.value)
    assert "\n" not in str(failed.value)
    assert server.ca_path is None


def test_bad_modes_are_refused_at_construction() -> None:
    with pytest.raises(ValueError, match="'sometimes' is not a TLS mode"):
        InboxServer(tls="sometimes")
    with pytest.raises(ValueError, match="expected any, none or USER:PASSWORD"):
        InboxServer(smtp_auth="user-without-password")


def test_mode_parsing_keeps_colons_in_the_password_and_hides_it() -> None:
    auth = parse_smtp_auth("user:pa:ss word")
    assert (auth.mode, auth.username, auth.password) == ("password", "user", "pa:ss word")
    assert "pa:ss" not in repr(auth)
    assert str(auth) == "password"
    assert parse_smtp_auth(" NONE ").mode == "none"
    assert parse_tls("STARTTLS") == "starttls"
    for bad in ("user:", ":password", "justaname", "a:b\x00c"):
        with pytest.raises(ValueError, match="USER:PASSWORD") as refused:
            parse_smtp_auth(bad)
        assert bad not in str(refused.value)


def test_info_reports_the_modes_but_never_the_password(servers: Servers) -> None:
    server = servers("required", CREDENTIALS)
    response = requests.get(server.api_url + "/info", timeout=TIMEOUT)
    smtp = response.json()["smtp"]
    assert (smtp["tls"], smtp["auth"]) == ("required", "password")
    assert PASSWORD not in response.text
    assert PASSWORD not in repr(server)
    assert server.smtp_auth == "password"


# --- smtplib: every TLS mode ------------------------------------------------------------


@pytest.mark.parametrize("tls", TLS_MODES)
def test_smtplib_delivers_in_every_tls_mode(servers: Servers, tls: str) -> None:
    server = servers(tls)
    address = server.store.generate().address
    with connect(server) as client:
        secure(client, server)
        if tls != "off":
            sock = client.sock
            assert isinstance(sock, ssl.SSLSocket)
            assert sock.version() in ("TLSv1.2", "TLSv1.3")
        client.send_message(make_message(address, subject=f"over {tls}"))
    assert subjects(server, address) == [f"over {tls}"]


def test_starttls_is_offered_but_plain_mail_still_flows(servers: Servers) -> None:
    server = servers("starttls")
    address = server.store.generate().address
    with connect(server) as client:
        client.ehlo()
        assert client.has_extn("starttls")
        client.send_message(make_message(address, subject="plain"))
    assert subjects(server, address) == ["plain"]


def test_required_tls_refuses_mail_before_starttls(servers: Servers) -> None:
    server = servers("required")
    address = server.store.generate().address
    with connect(server) as client:
        client.ehlo()
        assert client.has_extn("starttls")
        assert client.docmd("MAIL FROM:<a@example.com>") == (
            530,
            b"5.7.0 Must issue a STARTTLS command first",
        )
        assert client.docmd(f"RCPT TO:<{address}>")[0] == 530
        assert client.noop()[0] == 250  # the session goes on
    assert subjects(server, address) == []


def test_required_tls_offers_auth_only_after_starttls(servers: Servers) -> None:
    server = servers("required")
    with connect(server) as client:
        client.ehlo()
        assert not client.has_extn("auth")
        assert client.docmd("AUTH PLAIN AHVzZXIAcGFzcw==")[0] == 530
        client.starttls(context=server.ssl_context())
        client.ehlo()
        assert client.has_extn("auth")
        assert client.login("anyone", "anything")[0] == 235


def test_implicit_tls_does_not_offer_starttls(servers: Servers) -> None:
    server = servers("implicit")
    assert server.smtp_url.startswith("smtps://")
    with connect(server) as client:
        client.ehlo()
        assert not client.has_extn("starttls")
        assert client.has_extn("auth")


def test_a_plain_client_gets_nothing_from_the_implicit_tls_port(servers: Servers) -> None:
    server = servers("implicit")
    with pytest.raises((smtplib.SMTPServerDisconnected, OSError)):
        smtplib.SMTP(
            server.smtp_host, server.smtp_port, local_hostname=CLIENT_NAME, timeout=0.3
        ).quit()


@pytest.mark.parametrize("tls", STARTTLS_MODES)
def test_a_client_without_the_ca_refuses_the_starttls_certificate(
    servers: Servers, tls: str, caplog: pytest.LogCaptureFixture
) -> None:
    server = servers(tls)
    caplog.set_level(logging.INFO, logger="pytest_tempinbox.server.smtp")
    with connect(server) as client:
        client.ehlo()
        with pytest.raises(ssl.SSLCertVerificationError):
            client.starttls(context=ssl.create_default_context())
    # The server goes on serving...
    address = server.store.generate().address
    with connect(server) as client:
        secure(client, server)
        client.send_message(make_message(address, subject="after a refusal"))
    assert subjects(server, address) == ["after a refusal"]
    # ...and, a refused certificate being the client's business, logs no error.
    ours = [record for record in caplog.records if record.name.startswith("pytest_tempinbox")]
    assert [record.levelno for record in ours] == [logging.INFO]
    assert "STARTTLS handshake failed" in ours[0].getMessage()


def test_a_client_without_the_ca_refuses_the_implicit_tls_certificate(servers: Servers) -> None:
    server = servers("implicit")
    with pytest.raises(ssl.SSLCertVerificationError):
        smtplib.SMTP_SSL(
            server.smtp_host,
            server.smtp_port,
            local_hostname=CLIENT_NAME,
            timeout=TIMEOUT,
            context=ssl.create_default_context(),
        )


def test_ssl_cert_file_makes_the_default_context_trust_the_ca(servers: Servers) -> None:
    """As Django's SMTP backend does: ssl.create_default_context(), with $SSL_CERT_FILE."""
    server = servers("starttls")
    code = (
        "import smtplib, ssl, sys\n"
        "with smtplib.SMTP(sys.argv[1], int(sys.argv[2]), local_hostname='client.test') as c:\n"
        "    print(c.starttls(context=ssl.create_default_context())[0])\n"
    )
    assert server.ca_path is not None
    result = subprocess.run(
        [sys.executable, "-c", code, server.smtp_host, str(server.smtp_port)],
        capture_output=True,
        text=True,
        timeout=TIMEOUT * 3,
        env={**os.environ, "SSL_CERT_FILE": server.ca_path},
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "220"


def test_stop_is_quick_with_tls_sessions_open() -> None:
    starttls_server = InboxServer(tls="starttls")
    implicit_server = InboxServer(tls="implicit")
    with starttls_server, implicit_server:
        idle = [connect(starttls_server), connect(implicit_server)]
        secure(idle[0], starttls_server)
        idle[1].ehlo()
    for client in idle:
        with pytest.raises((smtplib.SMTPServerDisconnected, OSError)):
            client.noop()
        client.close()


def test_starttls_does_not_count_as_a_second_connection() -> None:
    with InboxServer(tls="starttls", max_connections=1) as server:
        address = server.store.generate().address
        with connect(server) as client:
            secure(client, server)
            client.send_message(make_message(address))
        assert len(server.store.messages(address)) == 1
