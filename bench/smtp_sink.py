"""Postfix's ``smtp-sink``: a C SMTP server that takes every message and throws it away.

It is the physical floor of SMTP on this machine: another process, no Python,
nothing stored, nothing checked. :class:`SmtpSink` starts it on 127.0.0.1 on a
free port (as ``nobody`` when the bench runs as root, which it refuses
otherwise) with ``-c``, so that it prints a running count of the messages it
took; :meth:`SmtpSink.received` reads that count back. Starting and stopping
are never timed.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from .machine import SMTP_SINK
from .processes import HOST, free_port, stop_process

__all__ = ["SMTP_SINK", "SmtpSink", "available"]

_BACKLOG = "1000"
_START_TIMEOUT = 10.0
# -c prints "sess=N quit=N mesg=N" after every session, QUIT and message, \r-separated.
_MESSAGES = re.compile(rb"mesg=(\d+)")


def available() -> bool:
    """Whether smtp-sink is installed (Debian package ``postfix``)."""
    return os.access(SMTP_SINK, os.X_OK)


class SmtpSink:
    """One ``smtp-sink`` process on 127.0.0.1; a context manager, like the Python servers."""

    def __init__(self) -> None:
        self.host = HOST
        self.port = 0
        self._process: subprocess.Popen[bytes] | None = None
        self._counts: Path | None = None

    def start(self) -> None:
        """Start the sink on a free port; returns once it accepts connections."""
        self.port = free_port()
        handle, name = tempfile.mkstemp(prefix="tempinbox-bench-sink-", suffix=".out")
        self._counts = Path(name)
        command = [SMTP_SINK, "-c"]
        if os.geteuid() == 0:
            command += ["-u", "nobody"]
        command += [f"{self.host}:{self.port}", _BACKLOG]
        self._process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=handle, stderr=subprocess.STDOUT
        )
        os.close(handle)
        deadline = time.monotonic() + _START_TIMEOUT
        while True:
            try:
                # A bare connection: the sink counts a session, never a message.
                socket.create_connection((self.host, self.port), timeout=1.0).close()
                return
            except OSError:
                if self._process.poll() is not None or time.monotonic() > deadline:
                    output = self._counts.read_bytes().decode(errors="replace").strip()
                    self.stop()
                    raise RuntimeError(f"smtp-sink did not start: {output[-300:]}") from None
                time.sleep(0.01)

    def received(self) -> int:
        """How many messages the sink has taken since it started."""
        if self._counts is None:
            return 0
        counts = _MESSAGES.findall(self._counts.read_bytes())
        return int(counts[-1]) if counts else 0

    def stop(self) -> None:
        """Stop the sink and remove its count file."""
        process, self._process = self._process, None
        if process is not None:
            stop_process(process)
        if self._counts is not None:
            self._counts.unlink(missing_ok=True)
            self._counts = None

    def __enter__(self) -> SmtpSink:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
