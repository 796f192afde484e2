"""The standalone command: in-process for arguments, as a real subprocess for serving."""

from __future__ import annotations

import json
import re
import signal
import smtplib
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from pytest_tempinbox._cli import DOCS_URL, main

from .helpers import CLIENT_NAME, Standalone, make_message


@pytest.fixture
def standalone() -> Iterator[Standalone]:
    """A standalone server on ephemeral ports; killed at teardown if still running."""
    process = Standalone("--smtp-port", "0", "--api-port", "0")
    yield process
    if process.process.poll() is None:
        process.process.kill()
        process.process.communicate()


def test_help_documents_every_flag(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--help"])
    assert exited.value.code == 0
    out = capsys.readouterr().out
    for flag in ("--host", "--smtp-port", "--api-port", "--domain", "--hostname", "--version"):
        assert flag in out


def test_the_usage_names_the_console_script_by_default(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    assert capsys.readouterr().out.startswith("usage: tempinbox ")


@pytest.mark.parametrize(
    ("command", "prog"),
    [
        ([sys.executable, "-m", "pytest_tempinbox"], "python -m pytest_tempinbox"),
        ([str(Path(sys.executable).with_name("tempinbox"))], "tempinbox"),
    ],
)
def test_the_usage_follows_how_it_was_invoked(command: list[str], prog: str) -> None:
    if not Path(command[0]).exists():
        pytest.skip(f"{command[0]} is not installed")
    result = subprocess.run([*command, "--help"], capture_output=True, text=True, check=True)
    assert result.stdout.startswith(f"usage: {prog} [-h]")


def test_the_help_points_at_the_documentation_online(
    capsys: pytest.CaptureFixture[str],
) -> None:
    tomllib = pytest.importorskip("tomllib")
    pyproject = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())
    documentation = pyproject["project"]["urls"]["Documentation"]
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert DOCS_URL.replace("/blob/", "/tree/") == documentation
    assert f"{DOCS_URL}/limits.md" in out
    assert out.rstrip().endswith(f"Documentation: {DOCS_URL}/standalone.md")
    assert " docs/" not in out  # the wheel has no docs folder


def test_a_bad_port_is_an_argument_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--smtp-port", "smtp"])
    assert exited.value.code == 2
    assert "'smtp' is not a port number" in capsys.readouterr().err


def test_serves_mail_end_to_end_and_stops_on_sigterm(standalone: Standalone) -> None:
    host, port, api = standalone.read_addresses()
    with requests.Session() as http:
        http.trust_env = False
        address = http.post(api + "/generate").json()["email"]
        with smtplib.SMTP(host, port, local_hostname=CLIENT_NAME) as client:
            client.send_message(make_message(address, subject="standalone"))
        (message,) = http.get(f"{api}/messages/{address}").json()
    assert message["subject"] == "standalone"
    status, seconds, stderr = standalone.stop(signal.SIGTERM)
    assert status == 0, stderr
    assert seconds < 5
    assert "Traceback" not in stderr


def test_a_third_line_gives_the_inbox_viewer_url(standalone: Standalone) -> None:
    _, _, api = standalone.read_addresses()
    assert standalone.process.stdout is not None
    viewer = api.removesuffix("/api") + "/"
    assert standalone.process.stdout.readline() == f"Inbox viewer at {viewer}\n"
    response = requests.get(viewer, timeout=5)
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/html; charset=utf-8"
    status, _, stderr = standalone.stop(signal.SIGTERM)
    assert status == 0, stderr


def test_sigint_stops_it_while_clients_hold_idle_connections(standalone: Standalone) -> None:
    host, port, api = standalone.read_addresses()
    idle_smtp = smtplib.SMTP(host, port, local_hostname=CLIENT_NAME)
    idle_smtp.ehlo()
    http = requests.Session()
    http.trust_env = False
    http.get(api + "/info")  # leaves a kept-alive connection open
    try:
        status, seconds, stderr = standalone.stop(signal.SIGINT)
    finally:
        idle_smtp.close()
        http.close()
    assert status == 0, stderr
    assert seconds < 5
    assert "Traceback" not in stderr


def test_sigterm_ends_a_pending_long_poll(standalone: Standalone) -> None:
    _, _, api = standalone.read_addresses()
    address = requests.post(api + "/generate", timeout=5).json()["email"]
    with socket.create_connection(("127.0.0.1", int(api.split(":")[2].split("/")[0]))) as sock:
        sock.sendall(f"GET /api/messages/{address}?wait=60 HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        time.sleep(0.2)
        status, seconds, stderr = standalone.stop(signal.SIGTERM)
    assert status == 0, stderr
    assert seconds < 5


def test_a_taken_port_is_one_line_on_stderr() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run(
            [sys.executable, "-m", "pytest_tempinbox", "--smtp-port", str(port), "--api-port", "0"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert str(port) in lines[0]
    assert "in use" in lines[0]
    assert result.stdout == ""


def test_binding_beyond_loopback_prints_a_warning() -> None:
    process = Standalone("--host", "0.0.0.0", "--smtp-port", "0", "--api-port", "0")
    try:
        host, _, api = process.read_addresses()
        assert host == "127.0.0.1"  # a wildcard bind is reached through loopback
        check = requests.get(
            f"{api}/messages/a@tempinbox.test/01a2000000000000ffff/link-check", timeout=5
        )
        status, _, stderr = process.stop(signal.SIGTERM)
    finally:
        if process.process.poll() is None:
            process.process.kill()
            process.process.communicate()
    assert status == 0
    assert "warning" in stderr
    assert "anyone who can reach" in stderr
    assert "link checks are off" in stderr
    assert (check.status_code, check.json()["code"]) == (403, "link_checks_off")


@pytest.mark.parametrize(
    ("arguments", "answered"),
    [
        ([], True),
        (["--host", "0.0.0.0"], False),
        (["--host", "192.0.2.1"], False),
        (["--host", "::1"], True),
        (["--host", "0.0.0.0", "--link-checks"], True),
        (["--no-link-checks"], False),
    ],
)
def test_link_checks_are_on_by_default_only_where_the_callers_are_known(
    arguments: list[str], answered: bool
) -> None:
    from pytest_tempinbox._cli import _config, _parser

    assert _config(_parser("tempinbox").parse_args(arguments)).link_checks is answered


def test_with_tenants_link_checks_are_on_beyond_loopback(tmp_path: Path) -> None:
    from pytest_tempinbox._cli import _config, _parser
    from pytest_tempinbox.tenants import make_token

    tenants = tmp_path / "tenants.json"
    tenants.write_text(json.dumps({"tenants": [{"name": "a", "tokens": [make_token()[1]]}]}))
    options = _parser("tempinbox").parse_args(["--host", "0.0.0.0", "--tenants", str(tenants)])
    assert _config(options).link_checks is True


def test_a_bad_limit_is_an_argument_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--max-recipients", "many"])
    assert exited.value.code == 2
    assert "--max-recipients: 'many' is not a whole number" in capsys.readouterr().err


def test_limits_reach_the_server_with_a_one_hour_ttl_by_default() -> None:
    process = Standalone(
        "--smtp-port", "0", "--api-port", "0", "--max-recipients", "7", "--idle-timeout", "2.5"
    )
    try:
        _, _, api = process.read_addresses()
        info = requests.get(api + "/info", timeout=5).json()
        generated = requests.post(api + "/generate", timeout=5).json()
    finally:
        status, _, stderr = process.stop(signal.SIGTERM)
    assert status == 0, stderr
    assert info["limits"]["recipients"] == 7
    assert info["limits"]["idle_timeout"] == 2.5
    assert info["limits"]["inbox_ttl"] == 3600
    assert generated["expires_at"] is not None


def test_the_standalone_defaults_are_a_shared_services() -> None:
    process = Standalone("--smtp-port", "0", "--api-port", "0")
    try:
        _, _, api = process.read_addresses()
        limits = requests.get(api + "/info", timeout=5).json()["limits"]
    finally:
        process.stop(signal.SIGTERM)
    assert (limits["streams"], limits["streams_per_inbox"]) == (10_000, 10)
    assert (limits["connections"], limits["listen_backlog"]) == (1000, 16_384)


@pytest.mark.skipif(sys.platform == "win32", reason="RLIMIT_NOFILE is POSIX")
def test_the_soft_limit_of_open_files_is_raised_to_the_hard_one_and_said_at_verbose() -> None:
    process = Standalone("--smtp-port", "0", "--api-port", "0", "-v", open_files=(256, 1024))
    try:
        process.read_addresses()
        limits = Path(f"/proc/{process.process.pid}/limits")
        in_effect = limits.read_text() if limits.exists() else ""
    finally:
        status, _, stderr = process.stop(signal.SIGTERM)
    assert status == 0, stderr
    assert "open files: soft limit raised from 256 to 1024 (the hard limit)" in stderr
    assert re.search(r"listen backlog: 16384 per listener \(the kernel caps it at", stderr)
    if in_effect:
        assert re.search(r"Max open files\s+1024\s+1024", in_effect), in_effect


@pytest.mark.skipif(sys.platform == "win32", reason="RLIMIT_NOFILE is POSIX")
def test_without_verbose_the_start_says_nothing_of_its_limits() -> None:
    process = Standalone("--smtp-port", "0", "--api-port", "0", open_files=(256, 1024))
    try:
        process.read_addresses()
    finally:
        status, _, stderr = process.stop(signal.SIGTERM)
    assert status == 0
    assert stderr == ""


def test_ttl_zero_keeps_inboxes_until_deleted() -> None:
    process = Standalone("--smtp-port", "0", "--api-port", "0", "--ttl", "0")
    try:
        _, _, api = process.read_addresses()
        generated = requests.post(api + "/generate", timeout=5).json()
    finally:
        process.stop(signal.SIGTERM)
    assert generated["expires_at"] is None


@pytest.mark.parametrize(
    ("ttl", "message"),
    [
        ("-1", "'-1' must be 0 or above (seconds an inbox lives; 0 for until deleted)"),
        ("inf", "'inf' is not a finite number"),
        ("soon", "'soon' is not a number of seconds"),
    ],
)
def test_a_bad_ttl_says_what_is_allowed_zero_included(
    capsys: pytest.CaptureFixture[str], ttl: str, message: str
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--ttl", ttl])
    assert exited.value.code == 2
    assert f"argument --ttl: {message}" in capsys.readouterr().err


def test_a_bad_tls_mode_is_an_argument_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--tls", "sometimes"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "--tls: 'sometimes' is not a TLS mode (off, starttls, required, implicit)" in err


def test_a_bad_smtp_auth_is_an_argument_error_that_does_not_echo_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--smtp-auth", "secret-without-user"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "--smtp-auth: expected any, none or USER:PASSWORD" in err
    assert "secret-without-user" not in err


def test_tls_and_smtp_auth_reach_the_server() -> None:
    process = Standalone(
        "--smtp-port", "0", "--api-port", "0", "--tls", "implicit", "--smtp-auth", "app:s3cret"
    )
    try:
        host, port, api = process.read_addresses()
        with requests.Session() as http:
            http.trust_env = False
            info = http.get(api + "/info", timeout=5)
            ca = http.get(api + "/ca.pem", timeout=5).text
            address = http.post(api + "/generate", timeout=5).json()["email"]
            context = ssl.create_default_context(cadata=ca)
            with smtplib.SMTP_SSL(host, port, local_hostname=CLIENT_NAME, context=context) as c:
                c.login("app", "s3cret")
                c.send_message(make_message(address, subject="over smtps"))
            (message,) = http.get(f"{api}/messages/{address}", timeout=5).json()
    finally:
        status, _, stderr = process.stop(signal.SIGTERM)
    assert status == 0, stderr
    assert process.lines[0].startswith(f"SMTP listening on smtps://{host}:{port}")
    assert info.json()["smtp"]["tls"] == "implicit"
    assert info.json()["smtp"]["auth"] == "password"
    assert "s3cret" not in info.text + "".join(process.lines) + stderr
    assert message["subject"] == "over smtps"


def test_tls_without_trustme_is_one_line_on_stderr() -> None:
    code = (
        "import sys\n"
        "sys.modules['trustme'] = None  # as if the tls extra were not installed\n"
        "from pytest_tempinbox._cli import main\n"
        "raise SystemExit(main(sys.argv[1:]))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, "--tls", "starttls", "--smtp-port", "0", "--api-port", "0"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        "error: TLS needs the trustme package, which is not installed: "
        "pip install 'pytest-tempinbox[tls]'"
    ]
    assert result.stdout == ""


@pytest.mark.parametrize("flag", ["--domain", "--hostname"])
@pytest.mark.parametrize("value", ["a b", "", "@", ".tempinbox.test", "a" * 64 + ".test"])
def test_a_bad_domain_or_hostname_is_an_argument_error(
    capsys: pytest.CaptureFixture[str], flag: str, value: str
) -> None:
    with pytest.raises(SystemExit) as exited:
        main([flag, value])
    assert exited.value.code == 2
    (line,) = [line for line in capsys.readouterr().err.splitlines() if "error:" in line]
    assert f"error: argument {flag}: " in line
    assert "domain name" in line


def test_an_idn_domain_is_served_as_its_a_labels() -> None:
    process = Standalone("--smtp-port", "0", "--api-port", "0", "--domain", "bücher.example")
    try:
        _, _, api = process.read_addresses()
        with requests.Session() as http:
            http.trust_env = False
            info = http.get(api + "/info").json()
            created = http.post(api + "/generate", json={"address": "jürgen@bücher.example"})
    finally:
        process.stop(signal.SIGTERM)
    assert info["domains"] == ["xn--bcher-kva.example"]
    assert created.json()["email"] == "jürgen@xn--bcher-kva.example"
