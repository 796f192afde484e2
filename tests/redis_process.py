"""A real ``redis-server`` process on a loopback ephemeral port, which a test may stop and restart.

Debian's ``redis-server``; a test that needs it is skipped, saying why, where it
is not installed. With ``appendonly``, every write is fsynced to an append-only
file in the process's folder, so a restart on the same port finds the data.
"""

from __future__ import annotations

import shutil
import socket
import ssl
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import pytest

REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass(frozen=True)
class RedisTls:
    """The PEM files of a TLS port: the server's certificate chain, its key, and the CA."""

    cert_file: Path
    key_file: Path
    ca_file: Path


def _resp(*args: str) -> bytes:
    """One command in the Redis protocol."""
    parts = [b"*%d\r\n" % len(args)]
    for arg in args:
        parts.append(b"$%d\r\n%s\r\n" % (len(arg.encode()), arg.encode()))
    return b"".join(parts)


class RedisProcess:
    """``redis-server`` on 127.0.0.1; ``url`` is its ``redis://`` URL.

    Optionally: ``password`` is required of clients (``--requirepass``, and
    ``url`` carries it), and ``tls`` makes its one port a TLS port (``url`` is
    then ``rediss://``).
    """

    def __init__(
        self,
        folder: Path,
        *,
        appendonly: bool = False,
        password: str | None = None,
        tls: RedisTls | None = None,
    ) -> None:
        if not Path(REDIS_SERVER).exists():
            pytest.skip("redis-server is not installed (Debian package redis-server)")
        pytest.importorskip("redis", reason="the redis extra is not installed")
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self.appendonly = appendonly
        self.password = password
        self.tls = tls
        self.port = _free_port()
        self.process: subprocess.Popen[bytes] | None = None
        self.start()

    @property
    def url(self) -> str:
        """The URL a server's ``--store`` takes."""
        scheme = "rediss" if self.tls is not None else "redis"
        login = f":{quote(self.password, safe='')}@" if self.password is not None else ""
        return f"{scheme}://{login}127.0.0.1:{self.port}/0"

    @property
    def pid(self) -> int:
        """The process id of the running ``redis-server``."""
        assert self.process is not None, "redis-server is not running"
        return self.process.pid

    def start(self) -> None:
        """Start (or start again) on the same port and folder; return once it answers PING."""
        persistence = ["--appendonly", "yes", "--appendfsync", "always"] if self.appendonly else []
        ports = ["--port", str(self.port)]
        if self.tls is not None:
            ports = [
                "--port",
                "0",
                "--tls-port",
                str(self.port),
                "--tls-cert-file",
                str(self.tls.cert_file),
                "--tls-key-file",
                str(self.tls.key_file),
                "--tls-ca-cert-file",
                str(self.tls.ca_file),
                "--tls-auth-clients",
                "no",
            ]
        login = ["--requirepass", self.password] if self.password is not None else []
        self.process = subprocess.Popen(
            [
                REDIS_SERVER,
                *ports,
                *login,
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--dir",
                str(self.folder),
                *(persistence or ["--appendonly", "no"]),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                if self._answers():
                    return
            except OSError:
                pass
            time.sleep(0.02)
        raise AssertionError(f"redis-server did not answer on port {self.port}")

    def _answers(self) -> bool:
        """Whether it answers PING (after AUTH, over TLS, as it is set up)."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=1) as raw:
            if self.tls is None and self.password is None:
                raw.sendall(b"PING\r\n")
                return raw.recv(64).startswith(b"+PONG")
            sock: socket.socket = raw
            if self.tls is not None:
                context = ssl.create_default_context(cafile=str(self.tls.ca_file))
                sock = context.wrap_socket(raw, server_hostname="127.0.0.1")
            try:
                login = _resp("AUTH", self.password) if self.password is not None else b""
                sock.sendall(login + _resp("PING"))
                answer = b""
                while b"PONG" not in answer and not answer.startswith(b"-"):
                    chunk = sock.recv(256)
                    if not chunk:
                        return False
                    answer += chunk
                return b"+PONG" in answer
            finally:
                if sock is not raw:
                    sock.close()

    def stop(self) -> None:
        """Stop it (SIGTERM: it closes its append-only file) and wait for the exit."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(10)
        self.process = None
