"""Debian's fetchmail fetches a real-world mail of the corpus over POP3, byte for byte."""

from __future__ import annotations

import os
import shutil
import smtplib
import subprocess
from pathlib import Path

import pytest

from pytest_tempinbox.server.inbox_server import InboxServer
from pytest_tempinbox.server.readers.passwords import passwords_of

from ...helpers import CLIENT_NAME

CORPUS = Path(__file__).parents[2] / "corpus" / "transactional" / "allauth"

pytestmark = pytest.mark.skipif(
    shutil.which("fetchmail") is None, reason="fetchmail is not installed (Debian: fetchmail)"
)


@pytest.mark.parametrize("store", ["memory", "redis"])
def test_fetchmail_delivers_a_corpus_mail_byte_exact_and_deletes_it(
    tmp_path: Path, store: str, request: pytest.FixtureRequest
) -> None:
    raw = (CORPUS / "en-password-reset-code.eml").read_bytes().replace(b"\r\n", b"\n")
    raw = raw.replace(b"\n", b"\r\n")
    url = "memory" if store == "memory" else request.getfixturevalue("redis_url")
    with InboxServer(pop3_port=0, store=url) as server:
        address = server.store.generate().address
        with smtplib.SMTP(server.smtp_host, server.smtp_port, local_hostname=CLIENT_NAME) as smtp:
            smtp.sendmail("app@example.com", [address], raw)
        password = passwords_of(server.store).password(address)
        delivered = tmp_path / "delivered.eml"
        rc = tmp_path / "fetchmailrc"
        rc.write_text(
            "set invisible\n"
            f"poll {server.smtp_host} service {server.pop3_port} protocol POP3 auth password\n"
            f'  user "{address}" there with password "{password}" is "tester" here\n'
            '  options norewrite fetchall no keep sslproto ""\n'
            f'  mda "cat > {delivered}"\n'
        )
        rc.chmod(0o600)
        done = subprocess.run(
            [
                "fetchmail",
                "--nodetach",
                "--silent",
                "-f",
                str(rc),
                "--pidfile",
                str(tmp_path / "pid"),
            ],
            env={**os.environ, "HOME": str(tmp_path), "FETCHMAILHOME": str(tmp_path)},
            capture_output=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr.decode()
        fetched = delivered.read_bytes()
        assert fetched.replace(b"\r\n", b"\n") == raw.replace(b"\r\n", b"\n")
        assert server.store.messages(address) == []
