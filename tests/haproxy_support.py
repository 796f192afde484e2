"""A real HAProxy in front of several servers: SMTP and HTTP, both balanced round-robin.

Debian's ``haproxy``, started on loopback ephemeral ports with a configuration
like the one docs/deployment.md shows, in TCP mode for both listeners (SMTP is
not HTTP, and the API's long-polls and event streams pass through untouched).
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

HAPROXY = shutil.which("haproxy") or "/usr/sbin/haproxy"


def require_haproxy() -> None:
    """Skip the test, saying why, where HAProxy is not installed."""
    if not Path(HAPROXY).exists():
        pytest.skip("HAProxy is not installed (Debian package haproxy)")


def free_port() -> int:
    """A port nothing listens on now (loopback)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def configuration(
    smtp_port: int,
    api_port: int,
    smtp_backends: Sequence[int],
    api_backends: Sequence[int],
    health_path: str = "/api/ready",
) -> str:
    """An HAProxy configuration: two TCP frontends, round-robin, health-checked backends."""
    smtp_servers = "\n".join(
        f"    server s{index} 127.0.0.1:{port} check port {api} inter 500ms"
        for index, (port, api) in enumerate(zip(smtp_backends, api_backends, strict=True))
    )
    api_servers = "\n".join(
        f"    server a{index} 127.0.0.1:{port} check inter 500ms"
        for index, port in enumerate(api_backends)
    )
    return f"""global
    maxconn 1000

defaults
    mode tcp
    timeout connect 2s
    timeout client 120s
    timeout server 120s

frontend smtp
    bind 127.0.0.1:{smtp_port}
    default_backend smtp_servers

backend smtp_servers
    balance roundrobin
    option httpchk
    http-check send meth GET uri {health_path} ver HTTP/1.1 hdr Host localhost
    http-check expect status 200
{smtp_servers}

frontend api
    bind 127.0.0.1:{api_port}
    default_backend api_servers

backend api_servers
    balance roundrobin
    option httpchk
    http-check send meth GET uri {health_path} ver HTTP/1.1 hdr Host localhost
    http-check expect status 200
{api_servers}
"""


class HAProxy:
    """A running ``haproxy`` process; ``smtp_port`` and ``api_port`` are its frontends."""

    def __init__(
        self,
        folder: Path,
        smtp_backends: Sequence[int],
        api_backends: Sequence[int],
        *,
        smtp_port: int,
        api_port: int,
    ) -> None:
        self.smtp_port, self.api_port = smtp_port, api_port
        path = folder / "haproxy.cfg"
        path.write_text(
            configuration(self.smtp_port, self.api_port, smtp_backends, api_backends),
            encoding="utf-8",
        )
        self.process = subprocess.Popen(
            [HAPROXY, "-f", str(path), "-db"],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self._wait_for(self.smtp_port)
        self._wait_for(self.api_port)

    def _wait_for(self, port: int) -> None:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                output = self.process.stdout.read() if self.process.stdout else ""
                raise AssertionError(f"haproxy exited: {output}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.05)
        raise AssertionError(f"haproxy does not listen on {port}")

    @property
    def api_url(self) -> str:
        """The API's URL through the balancer."""
        return f"http://127.0.0.1:{self.api_port}/api"

    def stop(self) -> None:
        """Stop HAProxy."""
        self.process.terminate()
        try:
            self.process.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.communicate()
