"""The processes the Redis part runs: a private redis-server, and standalone inbox servers on it.

:func:`redis_server` starts ``redis-server`` on a free loopback port with no
persistence (``--save '' --appendonly no``) and yields its URL; :func:`standalone`
starts ``python -m pytest_tempinbox --store URL`` on free ports and yields where
it listens, read from the lines it prints. :func:`missing` says why the part
cannot run on this machine (no redis-server, or no redis package), or None.
Starting and stopping are not timed.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from .processes import HOST, free_port, stop_process

__all__ = ["REDIS_SERVER", "Standalone", "flush", "missing", "redis_server", "standalone"]

REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"
_START_TIMEOUT = 30.0
_ROOT = Path(__file__).resolve().parent.parent
_SMTP_LINE = re.compile(r"SMTP listening on smtp://(\S+):(\d+)")
_API_LINE = re.compile(r"API listening on (http://\S+/api)")


@dataclass(frozen=True)
class Standalone:
    """A running standalone server process: where its SMTP and its API listen."""

    smtp_host: str
    smtp_port: int
    api_url: str


def missing() -> str | None:
    """Why the Redis part cannot run here (a missing redis-server or redis package), or None."""
    if not os.access(REDIS_SERVER, os.X_OK):
        return f"redis-server is not installed (looked for {REDIS_SERVER})"
    try:
        import redis  # noqa: F401
    except ImportError:
        return "the redis package is not installed (python -m pip install -e '.[redis]')"
    return None


@contextlib.contextmanager
def redis_server() -> Iterator[str]:
    """Run a private redis-server without persistence; yield its URL once it answers PING."""
    import redis

    port = free_port()
    command = [
        REDIS_SERVER,
        "--port",
        str(port),
        "--bind",
        HOST,
        "--save",
        "",
        "--appendonly",
        "no",
    ]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"redis://{HOST}:{port}/0"
    try:
        deadline = time.monotonic() + _START_TIMEOUT
        with redis.Redis.from_url(url) as client:
            while True:
                try:
                    client.ping()
                    break
                except redis.ConnectionError:
                    if process.poll() is not None:
                        raise RuntimeError(f"redis-server exited {process.returncode}") from None
                    if time.monotonic() > deadline:
                        raise RuntimeError("redis-server did not answer in time") from None
                    time.sleep(0.05)
        yield url
    finally:
        stop_process(process)


def flush(url: str) -> None:
    """Empty the Redis at ``url`` (between rounds, so that each starts from nothing)."""
    import redis

    with redis.Redis.from_url(url) as client:
        client.flushall()


@contextlib.contextmanager
def standalone(store: str, max_messages_per_inbox: int) -> Iterator[Standalone]:
    """Run ``python -m pytest_tempinbox`` on ``store`` with free ports until the block ends."""
    with tempfile.TemporaryDirectory(prefix="tempinbox-bench-") as directory:
        log = Path(directory) / "server.log"
        command = [
            sys.executable, "-m", "pytest_tempinbox",
            "--store", store,
            "--smtp-port", "0",
            "--api-port", "0",
            "--max-messages-per-inbox", str(max_messages_per_inbox),
        ]  # fmt: skip
        with log.open("wb") as output:
            process = subprocess.Popen(
                command,
                cwd=_ROOT,
                stdout=output,
                stderr=subprocess.STDOUT,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )
        try:
            deadline = time.monotonic() + _START_TIMEOUT
            while True:
                text = log.read_text(errors="replace")
                smtp, api = _SMTP_LINE.search(text), _API_LINE.search(text)
                if smtp and api:
                    break
                if process.poll() is not None:
                    raise RuntimeError(
                        f"the server exited {process.returncode}: {text.strip()[-300:]}"
                    )
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the server did not start in time: {text.strip()[-300:]}")
                time.sleep(0.05)
            yield Standalone(smtp.group(1), int(smtp.group(2)), api.group(1))
        finally:
            stop_process(process)
