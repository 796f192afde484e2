"""A real ``redis-server`` process on a loopback ephemeral port, which a test may stop and restart.

Debian's ``redis-server``; a test that needs it is skipped, saying why, where it
is not installed. With ``appendonly``, every write is fsynced to an append-only
file in the process's folder, so a restart on the same port finds the data.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class RedisProcess:
    """``redis-server`` on 127.0.0.1; ``url`` is its ``redis://`` URL."""

    def __init__(self, folder: Path, *, appendonly: bool = False) -> None:
        if not Path(REDIS_SERVER).exists():
            pytest.skip("redis-server is not installed (Debian package redis-server)")
        pytest.importorskip("redis", reason="the redis extra is not installed")
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self.appendonly = appendonly
        self.port = _free_port()
        self.process: subprocess.Popen[bytes] | None = None
        self.start()

    @property
    def url(self) -> str:
        """The URL a server's ``--store`` takes."""
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        """Start (or start again) on the same port and folder; return once it answers PING."""
        persistence = ["--appendonly", "yes", "--appendfsync", "always"] if self.appendonly else []
        self.process = subprocess.Popen(
            [
                REDIS_SERVER,
                "--port",
                str(self.port),
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
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as sock:
                    sock.sendall(b"PING\r\n")
                    if sock.recv(64).startswith(b"+PONG"):
                        return
            except OSError:
                time.sleep(0.02)
        raise AssertionError(f"redis-server did not answer on port {self.port}")

    def stop(self) -> None:
        """Stop it (SIGTERM: it closes its append-only file) and wait for the exit."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(10)
        self.process = None
