"""Programs the bench runs in processes of their own: a free port for each, and stopping them."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys

__all__ = ["HOST", "STOP_TIMEOUT", "free_port", "start_standalone", "stop_process"]

HOST = "127.0.0.1"
STOP_TIMEOUT = 10.0
"""Seconds a program has to exit after SIGTERM before it is killed."""


def free_port() -> int:
    """A loopback port nothing listens on now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((HOST, 0))
        port: int = probe.getsockname()[1]
    return port


def stop_process(process: subprocess.Popen[bytes] | subprocess.Popen[str]) -> None:
    """Ask ``process`` to stop (SIGTERM), kill it if it has not within :data:`STOP_TIMEOUT`."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def start_standalone(*flags: str) -> tuple[subprocess.Popen[str], str, int, str]:
    """``python -m pytest_tempinbox`` on free ports with ``flags``, in its own process.

    Returns the process (its stdout and stderr piped), the SMTP host and port,
    and the API's origin (``http://host:port``), read from the lines it prints
    once it listens.
    """
    process = subprocess.Popen(
        [sys.executable, "-m", "pytest_tempinbox", "--smtp-port", "0", "--api-port", "0", *flags],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert process.stdout is not None
    text = process.stdout.readline() + process.stdout.readline()
    smtp_at = re.search(r"smtp://([\d.]+):(\d+)", text)
    api_at = re.search(r"(http://[\d.]+:\d+)", text)
    if not smtp_at or not api_at:
        stop_process(process)
        raise RuntimeError(f"the server did not say where it listens: {text!r}")
    return process, smtp_at.group(1), int(smtp_at.group(2)), api_at.group(1)
