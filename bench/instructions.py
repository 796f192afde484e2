"""Instructions per message on the server's side, as Valgrind's cachegrind counts them.

A cost of a few per cent is below what wall-clock rounds resolve on a shared
machine (round to round, the same server's throughput moves by a fifth), so
the parts that judge one (:mod:`bench.webhooks`) count instructions too:
the standalone server (``python -m pytest_tempinbox``) runs under
``valgrind --tool=cachegrind --cache-sim=no`` with the options given, and
smtp-source sends it :data:`FEW`, then, in a second run, :data:`MANY`
messages of 1 KiB over one connection. The difference of the two runs' totals
over the difference of their messages is the instructions a message costs:
start-up, the imports and shutdown cancel out, the package's bytecode being
compiled before either run. ``PYTHONHASHSEED`` is fixed, so that both runs
hash alike. Needs Debian's ``valgrind`` and Postfix's
smtp-source; :func:`missing` says which is not installed.
"""

from __future__ import annotations

import compileall
import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import requests

from .machine import SMTP_SOURCE
from .processes import HOST, free_port

__all__ = ["FEW", "MANY", "compare", "missing", "per_message"]

FEW = 500
MANY = 2500
_START_TIMEOUT = 120.0  # Python's start-up under Valgrind takes seconds
_ROOT = Path(__file__).resolve().parent.parent


def missing() -> str | None:
    """What this measurement needs and the machine lacks, in words; None when it can run."""
    if shutil.which("valgrind") is None:
        return "valgrind is not installed (Debian: valgrind)"
    if not os.access(SMTP_SOURCE, os.X_OK):
        return f"{SMTP_SOURCE} is not installed (Debian: postfix)"
    return None


def compare(
    part: str, first: list[str], second: list[str], errors: list[str]
) -> tuple[float, float] | None:
    """The instructions per message with options ``first``, then ``second``; None if uncounted.

    Says why on stdout when the machine cannot count them; a count that fails
    is one of ``errors``, as ``part``'s.
    """
    why_not = missing()
    if why_not is not None:
        print(f"  {part}: no instruction count, judged on throughput: {why_not}")
        return None
    print(f"  {part}: instructions for {FEW} and {MANY} messages")
    # Every module compiled first: from a fresh clone, the first counted run compiled the
    # modules only the standalone command imports, and the count read 10% high.
    compileall.compile_dir(_ROOT / "pytest_tempinbox", quiet=1)
    try:
        return per_message(first), per_message(second)
    except (OSError, RuntimeError, subprocess.SubprocessError) as exc:
        errors.append(f"{part}: counting instructions failed: {exc}")
        return None


def per_message(options: list[str]) -> float:
    """The server's instructions per message with the command-line ``options``."""
    return (_total(options, MANY) - _total(options, FEW)) / (MANY - FEW)


def _total(options: list[str], messages: int) -> int:
    """The instructions of one server's whole life, ``messages`` sent to it."""
    smtp_port, api_port = free_port(), free_port()
    with tempfile.TemporaryDirectory() as scratch:
        command = [
            "valgrind",
            "--tool=cachegrind",
            "--cache-sim=no",
            f"--cachegrind-out-file={scratch}/out",
            f"--log-file={scratch}/summary",
            sys.executable,
            "-m",
            "pytest_tempinbox",
            "--smtp-port", str(smtp_port),
            "--api-port", str(api_port),
            "--max-messages-per-inbox", str(MANY),
            *options,
        ]  # fmt: skip
        environment = {**os.environ, "PYTHONHASHSEED": "0"}
        server = subprocess.Popen(
            command,
            cwd=_ROOT,
            env=environment,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        try:
            address = _generate(f"http://{HOST}:{api_port}/api/generate", server)
            subprocess.run(
                [
                    SMTP_SOURCE,
                    "-d",
                    "-s", "1",
                    "-m", str(messages),
                    "-l", "1024",
                    "-M", "client.test",
                    "-f", "app@example.test",
                    "-t", address,
                    f"{HOST}:{smtp_port}",
                ],
                check=True,
                timeout=600,
            )  # fmt: skip
            server.send_signal(signal.SIGINT)
            server.wait(timeout=300)
            summary = Path(scratch, "summary").read_text()
        finally:
            if server.poll() is None:
                server.kill()
                server.wait()
    found = re.search(r"I\s+refs:\s+([\d,]+)", summary)
    if found is None:
        raise RuntimeError(f"cachegrind gave no count: {summary.strip()[-300:]}")
    return int(found.group(1).replace(",", ""))


def _generate(url: str, server: subprocess.Popen[str]) -> str:
    """A new inbox's address, once the server under Valgrind answers."""
    deadline = time.monotonic() + _START_TIMEOUT
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"the server exited {server.returncode} under Valgrind")
        with contextlib.suppress(requests.RequestException):
            return str(requests.post(url, timeout=5).json()["email"])
        time.sleep(0.5)
    raise RuntimeError(f"the server did not answer within {_START_TIMEOUT:g} s under Valgrind")
