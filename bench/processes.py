"""Programs the bench runs in processes of their own: a free port for each, and stopping them."""

from __future__ import annotations

import socket
import subprocess

__all__ = ["HOST", "STOP_TIMEOUT", "free_port", "stop_process"]

HOST = "127.0.0.1"
STOP_TIMEOUT = 10.0
"""Seconds a program has to exit after SIGTERM before it is killed."""


def free_port() -> int:
    """A loopback port nothing listens on now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((HOST, 0))
        port: int = probe.getsockname()[1]
    return port


def stop_process(process: subprocess.Popen[bytes]) -> None:
    """Ask ``process`` to stop (SIGTERM), kill it if it has not within :data:`STOP_TIMEOUT`."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
