"""Generated SMTP conversations (hypothesis), for the tests that send them to two servers.

A conversation opens with EHLO and is made of single commands and whole
transactions; a transaction's DATA always gets ``354`` (its MAIL and RCPT are
to a live address, ``{0}``), so its lines are never read as commands, and no
conversation runs into the limit of unknown commands that closes a session.
"""

from __future__ import annotations

from hypothesis import strategies as st

__all__ = ["ODD_DATA_LINES", "conversations", "script"]

# DATA lines that are text however a server splits them: dots, bare CR and LF, NUL, 8-bit.
ODD_DATA_LINES = [
    b"..",
    b".x",
    b"",
    b"Subject: hi",
    b"a\rb",
    b"a\nb",
    b"\n.\n",
    b"nul\x00",
    b"\xe9t\xe9",
    b"RSET",
]


def conversations(commands: list[bytes], data_lines: list[bytes]) -> st.SearchStrategy[bytes]:
    """Conversations of these ``commands`` and transactions of these ``data_lines``, as sent."""
    transaction = st.lists(st.sampled_from(data_lines), max_size=12).map(
        lambda lines: [b"MAIL FROM:<a@example.test>", b"RCPT TO:<{0}>", b"DATA", *lines, b"."]
    )
    steps = st.one_of(st.sampled_from(commands).map(lambda line: [line]), transaction)
    return st.lists(steps, max_size=8).map(
        lambda steps: script([b"EHLO c.test", *(line for step in steps for line in step)])
    )


def script(lines: list[bytes]) -> bytes:
    """``lines`` as sent, each with its CRLF, and QUIT after them."""
    return b"".join(line + b"\r\n" for line in [*lines, b"QUIT"])
