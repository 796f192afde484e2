"""Given certificates over real sockets: HTTPS for the API, SMTP's TLS modes, reloading.

The certificates come from a trustme CA, as an ACME client's would from a real
one: the clients verify them against that CA and the server's name.
"""

from __future__ import annotations

import shutil
import signal
import smtplib
import socket
import ssl
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
import trustme

from pytest_tempinbox import TempInboxClient
from pytest_tempinbox.client.http import HTTPTransport
from pytest_tempinbox.config import ServerConfig
from pytest_tempinbox.errors import ServerStartError, ServerUnavailable
from pytest_tempinbox.server.inbox_server import InboxServer

from ..helpers import CLIENT_NAME, Standalone, make_message

TIMEOUT = 10.0
NAMES = ("localhost", "127.0.0.1")


class Issued:
    """A CA's certificate and a server certificate it issued, written as PEM files."""

    def __init__(self, directory: Path, label: str) -> None:
        self.authority = trustme.CA(organization_name=f"test CA {label}")
        issued = self.authority.issue_cert(*NAMES)
        self.ca = directory / f"ca-{label}.pem"
        self.cert = directory / f"cert-{label}.pem"
        self.key = directory / f"key-{label}.pem"
        self.authority.cert_pem.write_to_path(str(self.ca))
        issued.private_key_pem.write_to_path(str(self.key))
        self.cert.write_bytes(b"".join(blob.bytes() for blob in issued.cert_chain_pems))

    def client_context(self) -> ssl.SSLContext:
        """A client context that trusts only this CA."""
        return ssl.create_default_context(cafile=str(self.ca))


@pytest.fixture
def issued(tmp_path: Path) -> Issued:
    """A certificate for localhost and 127.0.0.1, from a CA of its own."""
    return Issued(tmp_path, "first")


@pytest.fixture
def renewed(tmp_path: Path) -> Issued:
    """Another certificate for the same names, from another CA: a renewal."""
    return Issued(tmp_path, "renewed")


def live(tmp_path: Path, issued: Issued) -> tuple[str, str]:
    """The paths the server is given, holding ``issued``'s files (as an ACME client's are)."""
    cert, key = tmp_path / "live-cert.pem", tmp_path / "live-key.pem"
    shutil.copy(issued.cert, cert)
    shutil.copy(issued.key, key)
    return str(cert), str(key)


def renew(tmp_path: Path, renewed: Issued) -> None:
    """Replace the live files with ``renewed``'s, as an ACME client renews them."""
    live(tmp_path, renewed)


@pytest.fixture
def https_server(issued: Issued) -> Iterator[InboxServer]:
    """A server whose API and viewer are HTTPS with ``issued``."""
    with InboxServer(api_tls_cert=str(issued.cert), api_tls_key=str(issued.key)) as server:
        yield server


def smtp_server(tls: str, cert: str, key: str, event_loop: str = "auto") -> InboxServer:
    """A started server whose SMTP listener presents the given certificate in mode ``tls``."""
    server = InboxServer(tls=tls, tls_cert=cert, tls_key=key, event_loop=event_loop)
    server.start()
    return server


def send(server: InboxServer, context: ssl.SSLContext, address: str, subject: str) -> None:
    """Send one message over TLS in the server's mode, verifying the certificate's name."""
    message = make_message(to=address, subject=subject)
    if server.tls == "implicit":
        client: smtplib.SMTP = smtplib.SMTP_SSL(
            "localhost", server.smtp_port, local_hostname=CLIENT_NAME, context=context,
            timeout=TIMEOUT,
        )  # fmt: skip
    else:
        client = smtplib.SMTP(
            "localhost", server.smtp_port, local_hostname=CLIENT_NAME, timeout=TIMEOUT
        )
        client.starttls(context=context)
    with client:
        client.send_message(message)


def presented_issuer(port: int, context: ssl.SSLContext) -> str:
    """The organisation of the CA that issued the certificate an implicit-TLS port presents."""
    with (
        socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT) as raw,
        context.wrap_socket(raw, server_hostname="localhost") as tls,
    ):
        peer = tls.getpeercert()
        assert peer is not None
        names = [pair for part in peer["issuer"] for pair in part]
        return next(str(pair[1]) for pair in names if pair[0] == "organizationName")


# --- the API over HTTPS -------------------------------------------------------------------


def test_the_api_and_viewer_urls_are_https(https_server: InboxServer) -> None:
    assert https_server.api_url.startswith("https://127.0.0.1:")
    assert https_server.viewer_url.startswith("https://127.0.0.1:")


def test_requests_reaches_the_api_verifying_the_certificate(
    https_server: InboxServer, issued: Issued
) -> None:
    answer = requests.post(https_server.api_url + "/generate", verify=str(issued.ca), timeout=10)
    assert answer.status_code == 201, answer.text
    viewer = requests.get(https_server.viewer_url, verify=str(issued.ca), timeout=10)
    assert viewer.status_code == 200
    assert "text/html" in viewer.headers["content-type"]


def test_requests_refuses_a_certificate_from_another_ca(
    https_server: InboxServer, renewed: Issued
) -> None:
    with pytest.raises(requests.exceptions.SSLError, match="CERTIFICATE_VERIFY_FAILED"):
        requests.get(https_server.api_url + "/health", verify=str(renewed.ca), timeout=10)


def test_curl_reaches_the_api_with_the_ca_given(https_server: InboxServer, issued: Issued) -> None:
    curl = shutil.which("curl")
    if curl is None:
        pytest.skip("curl is not installed")
    url = f"https://localhost:{https_server.api_port}/api/health"
    result = subprocess.run(
        [curl, "--silent", "--show-error", "--fail", "--cacert", str(issued.ca), url],
        capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert '"ok"' in result.stdout or "ok" in result.stdout


def test_the_client_works_over_https_with_a_session_trusting_the_ca(
    https_server: InboxServer, issued: Issued
) -> None:
    session = requests.Session()
    session.verify = str(issued.ca)
    session.trust_env = False  # else REQUESTS_CA_BUNDLE, when set, wins over verify
    url = https_server.api_url
    with TempInboxClient(url, transport=HTTPTransport(url, session)) as client:
        inbox = client.generate()
        with smtplib.SMTP(https_server.smtp_host, https_server.smtp_port) as smtp:
            smtp.send_message(make_message(to=inbox.address, subject="over https"))
        assert inbox.wait_for_message(timeout=5).subject == "over https"


def test_the_client_verifies_the_api_against_the_ca_given_as_verify(
    https_server: InboxServer, issued: Issued
) -> None:
    with TempInboxClient(https_server.api_url, verify=str(issued.ca)) as client:
        assert client.info()["version"]
        inbox = client.generate()
        assert inbox.messages() == []


def test_the_client_names_a_certificate_it_does_not_trust(
    https_server: InboxServer, renewed: Issued
) -> None:
    with (
        TempInboxClient(https_server.api_url, verify=str(renewed.ca)) as client,
        pytest.raises(ServerUnavailable, match="CERTIFICATE_VERIFY_FAILED"),
    ):
        client.info()


def test_plain_http_on_the_https_port_is_closed_without_an_answer(
    https_server: InboxServer, issued: Issued
) -> None:
    # Measured: asyncio's TLS layer reads the plain request as a bad handshake and
    # closes the connection at once; no bytes come back, and the server serves on.
    with socket.create_connection(("127.0.0.1", https_server.api_port), timeout=5) as raw:
        raw.sendall(b"GET /api/health HTTP/1.1\r\nHost: localhost\r\n\r\n")
        assert raw.recv(4096) == b""
    answer = requests.get(https_server.api_url + "/health", verify=str(issued.ca), timeout=10)
    assert answer.status_code == 200


# --- SMTP with the given certificate ------------------------------------------------------


@pytest.mark.parametrize("tls", ["starttls", "required", "implicit"])
def test_smtp_presents_the_given_certificate(tmp_path: Path, issued: Issued, tls: str) -> None:
    server = smtp_server(tls, *live(tmp_path, issued))
    try:
        assert server.ca_path is None  # no throwaway CA
        address = server.store.generate().address
        send(server, issued.client_context(), address, f"over {tls}")
        assert [m.message().subject for m in server.store.messages(address)] == [f"over {tls}"]
    finally:
        server.stop()


def test_with_its_own_certificate_there_is_no_ca_to_download(
    tmp_path: Path, issued: Issued
) -> None:
    server = smtp_server("starttls", *live(tmp_path, issued))
    try:
        answer = requests.get(server.api_url + "/ca.pem", timeout=TIMEOUT)
        assert answer.status_code == 404
        assert answer.json()["code"] == "tls_off"
        assert "this server's own (--tls-cert): trust its issuer" in answer.json()["detail"]
        context = server.ssl_context()  # the system's CAs, as for a certificate from ACME
        assert context.verify_mode == ssl.CERT_REQUIRED
        assert context.check_hostname
    finally:
        server.stop()


# Python 3.10's asyncio TLS transport warns, when collected, of a connection its
# peer closed (as it does with the throwaway CA too); 3.11's rewrite does not.
@pytest.mark.filterwarnings(
    "ignore:Exception ignored in. <function _SSLProtocolTransport.__del__"
    ":pytest.PytestUnraisableExceptionWarning"
)
@pytest.mark.parametrize("event_loop", ["asyncio", "uvloop"])
def test_reload_certificates_presents_the_renewed_one_to_new_connections_only(
    tmp_path: Path, issued: Issued, renewed: Issued, event_loop: str
) -> None:
    if event_loop == "uvloop":
        pytest.importorskip("uvloop")
    server = smtp_server("implicit", *live(tmp_path, issued), event_loop=event_loop)
    try:
        port = server.smtp_port
        before = smtplib.SMTP_SSL(
            "localhost", port, local_hostname=CLIENT_NAME, context=issued.client_context(),
            timeout=TIMEOUT,
        )  # fmt: skip
        assert presented_issuer(port, issued.client_context()) == "test CA first"
        renew(tmp_path, renewed)
        assert server.reload_certificates() is True
        assert presented_issuer(port, renewed.client_context()) == "test CA renewed"
        with before:  # the session opened before the reload goes on with its certificate
            assert before.noop()[0] == 250
            address = server.store.generate().address
            before.send_message(make_message(to=address, subject="still here"))
        assert len(server.store.messages(address)) == 1
    finally:
        server.stop()


def test_starttls_after_a_reload_presents_the_renewed_certificate(
    tmp_path: Path, issued: Issued, renewed: Issued
) -> None:
    server = smtp_server("starttls", *live(tmp_path, issued))
    try:
        renew(tmp_path, renewed)
        server.reload_certificates()
        address = server.store.generate().address
        send(server, renewed.client_context(), address, "after the renewal")
        assert len(server.store.messages(address)) == 1
        with pytest.raises(ssl.SSLCertVerificationError):
            send(server, issued.client_context(), address, "trusting the old CA only")
    finally:
        server.stop()


def test_a_reload_of_bad_files_keeps_the_certificate_in_use(
    tmp_path: Path, issued: Issued, renewed: Issued
) -> None:
    cert, key = live(tmp_path, issued)
    server = smtp_server("implicit", cert, key)
    try:
        Path(key).write_bytes(renewed.key.read_bytes())  # half a renewal: a mismatched key
        with pytest.raises(ServerStartError, match="the key is not the certificate's key"):
            server.reload_certificates()
        assert presented_issuer(server.smtp_port, issued.client_context()) == "test CA first"
    finally:
        server.stop()


def test_reload_without_given_certificates_says_so() -> None:
    with InboxServer() as server:
        assert server.reload_certificates() is False


# --- bad settings and files ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("settings", "reason"),
    [
        ({"tls": "starttls", "tls_cert": "c.pem"}, "--tls-cert and --tls-key go together"),
        ({"api_tls_key": "k.pem"}, "--api-tls-cert and --api-tls-key go together"),
        ({"tls_cert": "c.pem", "tls_key": "k.pem"}, "--tls-cert is for a TLS mode"),
    ],
)
def test_certificate_settings_that_do_not_go_together_are_refused(
    settings: dict[str, Any], reason: str
) -> None:
    with pytest.raises(ValueError, match=reason):
        ServerConfig(**settings)


def test_missing_unreadable_and_mismatched_files_are_one_error_at_start(
    tmp_path: Path, issued: Issued, renewed: Issued
) -> None:
    junk = tmp_path / "junk.pem"
    junk.write_text("not a certificate")
    cases = {
        (str(tmp_path / "absent.pem"), str(issued.key)): "is not a file",
        (str(junk), str(issued.key)): "is not a PEM certificate or key",
        (str(issued.cert), str(renewed.key)): "the key is not the certificate's key",
    }
    for (cert, key), reason in cases.items():
        server = InboxServer(api_tls_cert=cert, api_tls_key=key)
        with pytest.raises(ServerStartError, match=reason):
            server.start()
        assert not server.running


def test_the_command_line_says_a_bad_file_in_one_line(tmp_path: Path, issued: Issued) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "pytest_tempinbox", "--smtp-port", "0", "--api-port", "0",
         "--api-tls-cert", str(issued.cert), "--api-tls-key", str(tmp_path / "absent.pem")],
        capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        f"error: the API TLS file {str(tmp_path / 'absent.pem')!r} is not a file"
    ]


def test_the_command_line_refuses_a_certificate_without_its_key(issued: Issued) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "pytest_tempinbox", "--tls", "starttls",
         "--tls-cert", str(issued.cert)],
        capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    assert result.returncode == 2
    assert "--tls-cert and --tls-key go together" in result.stderr
    assert "Traceback" not in result.stderr


# --- the standalone server and SIGHUP ----------------------------------------------------


@pytest.mark.skipif(not hasattr(signal, "SIGHUP"), reason="no SIGHUP on this platform")
def test_sighup_reloads_both_certificates_and_an_open_session_survives(
    tmp_path: Path, issued: Issued, renewed: Issued
) -> None:
    cert, key = live(tmp_path, issued)
    process = Standalone(
        "--smtp-port", "0", "--api-port", "0", "--tls", "implicit",
        "--tls-cert", cert, "--tls-key", key, "--api-tls-cert", cert, "--api-tls-key", key,
    )  # fmt: skip
    try:
        _, smtp_port, api_url = process.read_addresses()
        assert api_url.startswith("https://")
        before = smtplib.SMTP_SSL(
            "localhost", smtp_port, local_hostname=CLIENT_NAME,
            context=issued.client_context(), timeout=TIMEOUT,
        )  # fmt: skip
        renew(tmp_path, renewed)
        process.process.send_signal(signal.SIGHUP)
        assert process.process.stderr is not None
        assert process.process.stderr.readline().strip() == "SIGHUP: certificates read again"
        assert presented_issuer(smtp_port, renewed.client_context()) == "test CA renewed"
        answer = requests.get(api_url + "/health", verify=str(renewed.ca), timeout=10)
        assert answer.status_code == 200
        with before:
            assert before.noop()[0] == 250
    finally:
        process.process.kill()
        process.process.communicate()
