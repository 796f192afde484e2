"""An SMTP client process for when Postfix's smtp-source is not installed.

``python -m bench.sender HOST PORT RECIPIENT COUNT SIZE`` sends COUNT messages
with SIZE bytes of body to RECIPIENT over one smtplib connection, the way
``smtp-source -d -s 1 -m COUNT -l SIZE -t RECIPIENT`` does, and exits 0 when
every one was accepted.
"""

from __future__ import annotations

import smtplib
import sys
from collections.abc import Sequence

__all__ = ["body", "main", "send"]

LINE = 78


def body(size: int) -> bytes:
    """SIZE bytes of text in numbered lines of 78 characters and CRLF, as smtp-source sends."""
    lines = []
    total = 0
    number = 1
    while total < size:
        line = (str(number) + "X" * LINE)[: min(LINE, size - total)]
        lines.append(line)
        total += len(line) + 2
        number += 1
    return ("\r\n".join(lines) + "\r\n").encode()


def send(host: str, port: int, recipient: str, count: int, size: int) -> None:
    """Send ``count`` messages of ``size`` body bytes to ``recipient`` over one connection."""
    text = body(size)
    with smtplib.SMTP(host, port, local_hostname="client.test", timeout=60) as smtp:
        for number in range(count):
            head = (
                f"From: <app@example.test>\r\nTo: <{recipient}>\r\n"
                f"Message-Id: <{number}.bench@client.test>\r\n\r\n"
            ).encode()
            smtp.sendmail("app@example.test", [recipient], head + text)


def main(argv: Sequence[str] | None = None) -> int:
    """Parse HOST PORT RECIPIENT COUNT SIZE and send; return the exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 5:
        print(__doc__, file=sys.stderr)
        return 2
    host, port, recipient, count, size = args
    send(host, int(port), recipient, int(count), int(size))
    return 0


if __name__ == "__main__":
    sys.exit(main())
