"""The SMTP fast lane answers as aiosmtpd does: the same transcripts, the same mail stored.

Two SMTP services share one memory store: one with the fast lane, one served
by aiosmtpd's protocol alone. Every conversation below goes to both, whole
(pipelined in one write) and a byte at a time, and the replies and what each
stored must match; each, and generated ones, also goes to the lane cut at
random points (hypothesis), and must be answered as when sent whole. The
conversations cover what the lane serves itself and what it hands over (AUTH,
HELP, syntax errors, unknown parameters, long lines, limits in DATA), before
and after a transaction.
"""

from __future__ import annotations

import base64
import os
import re
import signal
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_tempinbox.config import ServerConfig
from pytest_tempinbox.server.event_loops import loop_factory
from pytest_tempinbox.server.inbox_server import InboxServer
from pytest_tempinbox.server.smtp.service import SMTPService
from pytest_tempinbox.server.sockets import listen
from pytest_tempinbox.server.store.memory.store import Store

from ..redis_process import RedisProcess
from .smtp_conversation_support import ODD_DATA_LINES, conversations
from .store_support import LOOPS, ServingLoop

TIMEOUT = 10.0
SIZE_LIMIT = 3000
LINE_LIMIT = 200
MAX_RECIPIENTS = 3
HOSTNAME = "mx.lane.test"


class Pair:
    """The same store served twice: with the fast lane, and by aiosmtpd alone."""

    def __init__(self, loop: ServingLoop, store: Store, config: ServerConfig) -> None:
        self.store = store
        self.ports: dict[bool, int] = {}
        self.services: list[SMTPService] = []
        for lane in (True, False):
            service = SMTPService(store, config, fast_lane=lane)
            assert service.fast_lane is lane
            sock = listen("127.0.0.1", 0, "SMTP", 100)
            self.ports[lane] = sock.getsockname()[1]
            loop.call(service.start(sock))
            self.services.append(service)

    def live(self) -> str:
        """A fresh live address."""
        return self.store.generate().address


@pytest.fixture(scope="module", params=LOOPS)
def pair(request: pytest.FixtureRequest) -> Iterator[Pair]:
    """A memory store served with and without the fast lane, on one loop of each kind."""
    loop = ServingLoop(loop_factory(request.param))
    store = loop.serve(Store(("lane.test",)))
    config = ServerConfig(
        hostname=HOSTNAME,
        message_size_limit=SIZE_LIMIT,
        data_line_limit=LINE_LIMIT,
        max_recipients=MAX_RECIPIENTS,
    )
    served = Pair(loop, store, config)
    yield served
    for service in served.services:
        loop.call(service.stop())
    loop.close()


def converse(port: int, chunks: list[bytes], pause: float = 0.0) -> bytes:
    """Send ``chunks`` (each in one write, ``pause`` seconds apart), then read every reply.

    Replies are read until the server closes. A pause lets each chunk arrive in
    a read of its own; without one, the server may read several at once.
    """
    with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for chunk in chunks:
            sock.sendall(chunk)
            time.sleep(pause)
        received = b""
        while data := sock.recv(65536):
            received += data
    return re.sub(rb"queued as \S+", b"queued as ID", received)


def stored(pair: Pair, addresses: list[str]) -> list[tuple[str, list[str], bytes]]:
    """What the inboxes received: sender, recipients and raw bytes of each message."""
    found = []
    for address in addresses:
        for message in pair.store.messages(address):
            envelope = message.envelope
            found.append((envelope.mail_from, list(envelope.rcpt_to), message.raw))
    return found


def plain_message(to: str) -> bytes:
    return f"From: app@example.test\r\nTo: {to}\r\nSubject: hello\r\n\r\nHello.\r\n".encode()


# Each conversation: (name, a function of the live addresses giving the lines sent).
# "{0}", "{1}"... in a line are live addresses; each conversation ends with QUIT.
CONVERSATIONS: list[tuple[str, list[str]]] = [
    (
        "plain",
        [
            "EHLO client.test",
            "MAIL FROM:<app@example.test>",
            "RCPT TO:<{0}>",
            "DATA",
            "Subject: hi",
            "",
            "Hello.",
            ".",
            "QUIT",
        ],
    ),
    (
        "helo",
        [
            "HELO client.test",
            "MAIL FROM:<app@example.test>",
            "RCPT TO:<{0}>",
            "DATA",
            "Subject: hi",
            "",
            "Hello.",
            ".",
            "QUIT",
        ],
    ),
    (
        "lower case",
        [
            "ehlo client.test",
            "mail from:<app@example.test>",
            "rcpt to:<{0}>",
            "data",
            "Subject: hi",
            "",
            ".",
            "quit",
        ],
    ),
    (
        "blanks",
        [
            "EHLO   client.test  ",
            "MAIL FROM: <app@example.test>  ",
            "RCPT TO:   <{0}>",
            "DATA  ",
            "x",
            ".",
            "QUIT",
        ],
    ),
    (
        "out of order",
        [
            "MAIL FROM:<a@example.test>",
            "RCPT TO:<{0}>",
            "DATA",
            "EHLO c.test",
            "RCPT TO:<{0}>",
            "DATA",
            "MAIL FROM:<a@example.test>",
            "DATA",
            "MAIL FROM:<b@example.test>",
            "QUIT",
        ],
    ),
    (
        "unknown recipient",
        [
            "EHLO c.test",
            "MAIL FROM:<a@example.test>",
            "RCPT TO:<nobody@lane.test>",
            "RCPT TO:<someone@elsewhere.test>",
            "RCPT TO:<{0}>",
            "DATA",
            "x",
            ".",
            "QUIT",
        ],
    ),
    (
        "mail parameters",
        [
            "EHLO c.test",
            "MAIL FROM:<a@example.test> SIZE=100 BODY=8BITMIME",
            "RSET",
            "MAIL FROM:<a@example.test> SIZE=999999",
            "RSET",
            "MAIL FROM:<a@example.test> BODY=BINARY",
            "MAIL FROM:<a@example.test> X=1",
            "MAIL FROM:<a@example.test> SMTPUTF8=yes",
            "MAIL FROM:<a@example.test> SIZE",
            "MAIL FROM:<a@example.test> SIZE=1 SIZE=2",
            "MAIL FROM:<a@example.test> SIZE=x",
            "MAIL FROM:<a@example.test> size=10 body=7bit smtputf8",
            "RCPT TO:<{0}>",
            "DATA",
            "x",
            ".",
            "QUIT",
        ],
    ),
    (
        "helo parameters",
        [
            "HELO c.test",
            "MAIL FROM:<a@example.test> SIZE=10",
            "MAIL FROM:<a@example.test>",
            "RCPT TO:<{0}> NOTIFY=NEVER",
            "RCPT TO:<{0}>",
            "DATA",
            ".",
            "QUIT",
        ],
    ),
    (
        "odd paths",
        [
            "EHLO c.test",
            "MAIL FROM:<>",
            "RSET",
            "MAIL FROM:app@example.test",
            "RSET",
            "MAIL FROM:<a@example.test>x",
            "MAIL FROM:<a@example.test> (comment)",
            "RSET",
            "MAIL FROM:<@relay.test:a@example.test>",
            "RSET",
            "MAIL FROM:<a@",
            "MAIL FROM:",
            "MAIL TO:<a@example.test>",
            "MAIL",
            'MAIL FROM:<"quoted name"@example.test>',
            "RCPT TO:<{0}> ",
            "RCPT TO:{0}",
            "RCPT",
            "RCPT TO:<{0}>x",
            "DATA",
            ".",
            "QUIT",
        ],
    ),
    (
        "paths that are no RFC 5321 paths",
        [
            "EHLO c.test",
            "MAIL FROM:<sender@example.org",
            "MAIL FROM:<a@ SIZE=100",
            "MAIL FROM:<a b@example.org>",
            'MAIL FROM:<"a b"@example.org>',
            "RCPT TO:<{0}",
            "RCPT TO:<{0} NOTIFY=NEVER>",
            "RCPT TO:<a {0}>",
            "RCPT TO:<{0}>",
            "DATA",
            "x",
            ".",
            "QUIT",
        ],
    ),
    (
        "unicode",
        [
            "EHLO c.test",
            "MAIL FROM:<jos\u00e9@example.test>",
            "MAIL FROM:<jos\u00e9@example.test> SMTPUTF8",
            "RCPT TO:<{0}>",
            "RCPT TO:<b\u00fc@lane.test>",
            "DATA",
            "Subject: caf\u00e9",
            "",
            "\u00e9t\u00e9",
            ".",
            "QUIT",
        ],
    ),
    (
        "small commands",
        ["NOOP", "NOOP whatever", "EHLO c.test", "RSET", "RSET now", "NOOP", "QUIT now", "QUIT"],
    ),
    (
        "handed over",
        [
            "EHLO c.test",
            "AUTH PLAIN " + base64.b64encode(b"\0user\0pass").decode(),
            "MAIL FROM:<a@example.test>",
            "RCPT TO:<{0}>",
            "DATA",
            "x",
            ".",
            "QUIT",
        ],
    ),
    (
        "handed over mid-transaction",
        [
            "EHLO c.test",
            "MAIL FROM:<a@example.test>",
            "RCPT TO:<{0}>",
            "HELP",
            "VRFY someone",
            "RCPT TO:<{1}>",
            "DATA",
            "x",
            ".",
            "QUIT",
        ],
    ),
    (
        "unknown and empty",
        [
            "EHLO c.test",
            "",
            "FOO bar",
            "EXPN x",
            "STARTTLS",
            "\u00e9HLO x",
            "MAIL\tFROM:<a@example.test>",
            "MAIL FROM:<a@example.test>",
            "RCPT TO:<{0}>",
            "DATA",
            "x",
            ".",
            "QUIT",
        ],
    ),
    ("no name", ["EHLO", "HELO", "EHLO ", "MAIL FROM:<a@example.test>", "HELO c.test", "QUIT"]),
    (
        "two transactions",
        [
            "EHLO c.test",
            "MAIL FROM:<a@example.test>",
            "RCPT TO:<{0}>",
            "DATA",
            "Subject: one",
            "",
            "1",
            ".",
            "MAIL FROM:<b@example.test>",
            "RCPT TO:<{1}>",
            "RCPT TO:<{0}>",
            "DATA",
            "Subject: two",
            "",
            "2",
            ".",
            "QUIT",
        ],
    ),
    (
        "ehlo resets",
        [
            "EHLO c.test",
            "MAIL FROM:<a@example.test>",
            "RCPT TO:<{0}>",
            "EHLO c.test",
            "DATA",
            "RCPT TO:<{0}>",
            "HELO c.test",
            "MAIL FROM:<a@example.test>",
            "QUIT",
        ],
    ),
    (
        "too many recipients",
        [
            "EHLO c.test",
            "MAIL FROM:<a@example.test>",
            "RCPT TO:<{0}>",
            "RCPT TO:<{1}>",
            "RCPT TO:<{2}>",
            "RCPT TO:<{3}>",
            "RCPT TO:<{0}>",
            "DATA",
            "x",
            ".",
            "QUIT",
        ],
    ),
    (
        "dots",
        [
            "EHLO c.test",
            "MAIL FROM:<a@example.test>",
            "RCPT TO:<{0}>",
            "DATA",
            ".hidden",
            "..two",
            "...",
            "a.",
            " .",
            ".",
            "MAIL FROM:<a@example.test>",
            "RCPT TO:<{0}>",
            "DATA",
            ".",
            "QUIT",
        ],
    ),
    (
        "long command",
        [
            "EHLO c.test",
            "NOOP " + "x" * 600,
            "MAIL FROM:<a@example.test>",
            "RCPT TO:<" + "x" * 480 + "@lane.test>",
            "RCPT TO:<{0}>",
            "DATA",
            ".",
            "QUIT",
        ],
    ),
    (
        "long data line",
        [
            "EHLO c.test",
            "MAIL FROM:<a@example.test>",
            "RCPT TO:<{0}>",
            "DATA",
            "a" * (LINE_LIMIT - 1),
            "b" * LINE_LIMIT,
            "c" * (LINE_LIMIT + 5),
            "d",
            ".",
            "NOOP",
            "QUIT",
        ],
    ),
    (
        "line at the limits",
        [
            "EHLO c.test",
            "MAIL FROM:<a@example.test>",
            "RCPT TO:<{0}>",
            "DATA",
            "a" * (LINE_LIMIT - 2),
            "b" * (LINE_LIMIT - 1),
            ".",
            "QUIT",
        ],
    ),
    (
        "too much data",
        [
            "EHLO c.test",
            "MAIL FROM:<a@example.test>",
            "RCPT TO:<{0}>",
            "DATA",
            *["x" * 150] * 25,
            ".",
            "RSET",
            "QUIT",
        ],
    ),
    (
        "too much, then too long",
        [
            "EHLO c.test",
            "MAIL FROM:<a@example.test>",
            "RCPT TO:<{0}>",
            "DATA",
            *["y" * 190] * 16,
            "z" * (LINE_LIMIT * 3),
            ".",
            "QUIT",
        ],
    ),
    (
        "too long, then too much",
        [
            "EHLO c.test",
            "MAIL FROM:<a@example.test>",
            "RCPT TO:<{0}>",
            "DATA",
            "z" * (LINE_LIMIT * 3),
            *["y" * 190] * 16,
            ".",
            "QUIT",
        ],
    ),
    (
        "empty body",
        ["EHLO c.test", "MAIL FROM:<a@example.test>", "RCPT TO:<{0}>", "DATA", ".", "QUIT"],
    ),
]

# Lines of DATA in bare LF, and a lone "." ended by a bare LF: aiosmtpd reads lines to CRLF.
RAW_CONVERSATIONS: list[tuple[str, bytes]] = [
    (
        "bare LF data",
        b"EHLO c.test\r\nMAIL FROM:<a@example.test>\r\nRCPT TO:<{0}>\r\nDATA\r\n"
        b"Subject: lf\nline\n.\nmore\r\n.\r\nQUIT\r\n",
    ),
    (
        "bare LF commands",
        b"EHLO c.test\nMAIL FROM:<a@example.test>\nRCPT TO:<{0}>\nDATA\nx\r\n.\r\nQUIT\n",
    ),
    ("NUL and CR", b"EHLO c.test\r\nNO\x00OP\r\nMAIL FROM:<a@example.test>\rRCPT\r\nQUIT\r\n"),
    ("8-bit in a command", b"EHLO c.\xfftest\r\nMAIL FROM:<a\xff@example.test>\r\nQUIT\r\n"),
]


# The conversations the lane serves start to end; it hands every other one over.
SERVED_BY_THE_LANE = {
    "plain",
    "helo",
    "lower case",
    "blanks",
    "unknown recipient",
    "two transactions",
    "too many recipients",
    "dots",
    "long data line",
    "line at the limits",
    "too much data",
    "too much, then too long",
    "too long, then too much",
    "empty body",
    "bare LF data",
    "bare LF commands",
}


def _lines(lines: list[str], addresses: list[str]) -> bytes:
    return "".join(line.format(*addresses) + "\r\n" for line in lines).encode("utf-8")


def _raw(template: bytes, addresses: list[str]) -> bytes:
    return template.replace(b"{0}", addresses[0].encode())


def _cases() -> list[tuple[str, object]]:
    return [(name, lines) for name, lines in CONVERSATIONS] + list(RAW_CONVERSATIONS)


Outcome = tuple[bytes, list[tuple[str, list[int], bytes]]]


def outcome(pair: Pair, lane: bool, script: object, cut: Callable[[bytes], list[bytes]]) -> Outcome:
    """The replies to ``script`` sent in the pieces ``cut`` makes, and what it stored.

    Live addresses are written ``<address N>`` in both, so that runs compare.
    """
    addresses = [pair.live() for _ in range(4)]
    sent = _lines(script, addresses) if isinstance(script, list) else _raw(script, addresses)  # type: ignore[arg-type]
    chunks = cut(sent)
    transcript = converse(pair.ports[lane], chunks, pause=0.002 if 1 < len(chunks) < 20 else 0.0)
    for number, address in enumerate(addresses):
        transcript = transcript.replace(address.encode(), f"<address {number}>".encode())
    received = [
        (
            mail_from,
            [addresses.index(to) for to in rcpt_to],
            raw.replace(addresses[0].encode(), b"<address 0>"),
        )
        for mail_from, rcpt_to, raw in stored(pair, addresses)
    ]
    return transcript, received


def whole(sent: bytes) -> list[bytes]:
    return [sent]


def byte_by_byte(sent: bytes) -> list[bytes]:
    return [sent[i : i + 1] for i in range(len(sent))]


@pytest.mark.parametrize("cut", [whole, byte_by_byte], ids=["pipelined", "byte-by-byte"])
@pytest.mark.parametrize(("name", "script"), _cases(), ids=[name for name, _ in _cases()])
def test_the_lane_answers_as_aiosmtpd(
    pair: Pair, name: str, script: object, cut: Callable[[bytes], list[bytes]]
) -> None:
    lane_settings = pair.services[0].lane
    assert lane_settings is not None
    handovers = lane_settings.handovers
    lane, aiosmtpd = (outcome(pair, lane, script, cut) for lane in (True, False))
    assert lane == aiosmtpd
    assert lane[0].endswith(b"221 Bye\r\n") or b"\r\n421" in lane[0]
    assert (lane_settings.handovers == handovers) == (name in SERVED_BY_THE_LANE)


def at(cuts: list[int]) -> Callable[[bytes], list[bytes]]:
    """Cut the bytes sent at these offsets (taken modulo their length)."""

    def cut(sent: bytes) -> list[bytes]:
        offsets = sorted({offset % len(sent) for offset in cuts})
        return [
            sent[a:b] for a, b in zip([0, *offsets], [*offsets, len(sent)], strict=True) if a < b
        ]

    return cut


CUTS = st.lists(st.integers(0, 1 << 16), max_size=8)


@settings(max_examples=40, deadline=None)
@given(case=st.sampled_from(_cases()), cuts=CUTS)
def test_a_transcript_does_not_depend_on_where_tcp_splits_it(
    pair: Pair, case: tuple[str, object], cuts: list[int]
) -> None:
    """Every transcript above, cut at random points: the replies and the mail stored hold."""
    script = case[1]
    assert outcome(pair, True, script, at(cuts)) == outcome(pair, True, script, whole)


# A generated conversation's commands and DATA lines: near each limit, and odd.
CONVERSATION = conversations(
    [
        b"EHLO c.test",
        b"HELO c.test",
        b"MAIL FROM:<a@example.test>",
        b"MAIL FROM:<a@example.test> SIZE=100",
        b"RCPT TO:<{0}>",
        b"RCPT TO:<nobody@lane.test>",
        b"RSET",
        b"NOOP",
        b"NOOP \x00",
        b"NOOP \xe9",
        b"NOOP " + b"x" * (512 - 2 - 5),  # the longest command line, and one octet more
        b"NOOP " + b"x" * (512 - 1 - 5),
    ],
    [
        *ODD_DATA_LINES,
        b"x" * (LINE_LIMIT - 2),
        b"x" * (LINE_LIMIT - 1),
        b"." + b"x" * (LINE_LIMIT - 2),
        b"y" * (LINE_LIMIT + 1),
        b"z" * (SIZE_LIMIT // 3),
    ],
)


@settings(max_examples=40, deadline=None)
@given(script=CONVERSATION, cuts=CUTS)
def test_a_generated_conversation_is_answered_alike_by_both_lanes_however_it_is_split(
    pair: Pair, script: bytes, cuts: list[int]
) -> None:
    split = outcome(pair, True, script, at(cuts))
    assert split == outcome(pair, True, script, whole)
    assert split == outcome(pair, False, script, whole)


@pytest.mark.parametrize("split", [False, True], ids=["whole", "CR and LF apart"])
def test_a_line_over_both_limits_is_too_much_data_however_it_is_split(
    pair: Pair, split: bool
) -> None:
    """The line that takes DATA over the size limit gets 552, also when it is too long.

    Its CR and LF arriving in reads of their own once made the lane answer 500.
    """
    lines = b"x" * (LINE_LIMIT - 2) + b"\r\n"
    last = b"z" * (LINE_LIMIT + 1) + b"\r"  # 3,003 octets in all with its LF: over 3,000
    for lane in (True, False):
        address = pair.live()
        head = f"EHLO c.test\r\nMAIL FROM:<a@example.test>\r\nRCPT TO:<{address}>\r\nDATA\r\n"
        body = lines * (SIZE_LIMIT // LINE_LIMIT - 1) + last
        tail = b"\n.\r\nQUIT\r\n"
        chunks = [head.encode() + body, tail] if split else [head.encode() + body + tail]
        transcript = converse(pair.ports[lane], chunks, pause=0.05)
        assert b"552 Error: Too much mail data\r\n221 Bye\r\n" in transcript, transcript
        assert stored(pair, [address]) == []


@pytest.mark.parametrize("last", [b".", b"x"], ids=["ending in a dot", "ending in a letter"])
def test_a_long_data_line_cut_across_reads_is_not_an_end(pair: Pair, last: bytes) -> None:
    """A line over the limit, then its last byte and its line end in reads of their own.

    The lane keeps only a line end's first half of a line over the limit; a
    line that ends with ``.`` must not then pass for the lone dot that ends DATA.
    """
    transcripts = []
    for lane in (True, False):
        address = pair.live()
        chunks = [
            f"EHLO c.test\r\nMAIL FROM:<a@example.test>\r\nRCPT TO:<{address}>\r\n"
            "DATA\r\n".encode(),
            b"y" * (LINE_LIMIT * 3),
            last,
            b"\r\n",
            b"after\r\n.\r\nQUIT\r\n",
        ]
        transcripts.append(converse(pair.ports[lane], chunks, pause=0.05))
        assert stored(pair, [address]) == []
    assert transcripts[0] == transcripts[1]
    assert b"500 Line too long" in transcripts[0]


def test_a_plain_message_is_stored_once(pair: Pair) -> None:
    address = pair.live()
    message = plain_message(address)
    sent = (
        f"EHLO c.test\r\nMAIL FROM:<app@example.test>\r\nRCPT TO:<{address}>\r\nDATA\r\n".encode()
        + message
        + b".\r\nQUIT\r\n"
    )
    transcript = converse(pair.ports[True], [sent])
    assert b"250 2.0.0 OK: queued as ID" in transcript
    assert stored(pair, [address]) == [("app@example.test", [address], message)]


def test_a_client_that_pipelines_while_redis_is_frozen_is_held_then_answered(
    tmp_path: Path,
) -> None:
    """The lane stops reading while a delivery waits on Redis, and answers every line after."""
    pytest.importorskip("redis", reason="the redis extra is not installed")
    pytest.importorskip("hiredis", reason="the redis extra is not installed")
    redis_server = RedisProcess(tmp_path / "redis")
    try:
        with InboxServer(hostname=HOSTNAME, store=redis_server.url) as server:
            address = server.store.generate().address
            noops = 40_000  # 240 KB of pipelined lines: well over what the lane holds unread
            with socket.create_connection(
                (server.smtp_host, server.smtp_port), timeout=TIMEOUT
            ) as sock:
                sock.sendall(
                    f"EHLO c.test\r\nMAIL FROM:<a@example.test>\r\nRCPT TO:<{address}>\r\n"
                    "DATA\r\nSubject: held\r\n\r\nHello.\r\n".encode()
                )
                os.kill(redis_server.pid, signal.SIGSTOP)
                try:
                    sock.sendall(b".\r\n" + b"NOOP\r\n" * noops + b"QUIT\r\n")
                finally:
                    os.kill(redis_server.pid, signal.SIGCONT)
                received = b""
                while data := sock.recv(65536):
                    received += data
            assert b"250 2.0.0 OK: queued as" in received
            assert received.count(b"250 OK\r\n") == noops
            assert received.endswith(b"221 Bye\r\n")
            assert [m.message().subject for m in server.store.messages(address)] == ["held"]
    finally:
        redis_server.stop()


def test_both_lanes_route_a_sub_address_to_its_inbox_alike(pair: Pair) -> None:
    transcripts, details = [], []
    for lane in (True, False):
        address = pair.live()
        name, _, domain = address.rpartition("@")
        sent = (
            (
                f"EHLO c.test\r\nMAIL FROM:<app@example.test>\r\nRCPT TO:<{name}+Tag@{domain}>\r\n"
                f"RCPT TO:<nobody+tag@{domain}>\r\nDATA\r\n"
            ).encode()
            + plain_message(address)
            + b".\r\nQUIT\r\n"
        )
        transcripts.append(converse(pair.ports[lane], [sent]))
        details.append([message.subaddress for message in pair.store.messages(address)])

    assert transcripts[0] == transcripts[1]
    assert b"250 2.1.5 OK" in transcripts[0]
    assert b"550 5.1.1" in transcripts[0]
    assert details == [["tag"], ["tag"]]


def test_both_lanes_deliver_to_a_non_ascii_address_declared_smtputf8(pair: Pair) -> None:
    transcripts = []
    for lane in (True, False):
        address = pair.store.generate(address=f"jü.{lane}.{time.monotonic_ns()}@lane.test").address
        sent = (
            (
                f"EHLO c.test\r\nMAIL FROM:<app@example.test> SMTPUTF8\r\nRCPT TO:<{address}>\r\n"
                f"DATA\r\n"
            ).encode()
            + plain_message(address)
            + b".\r\nQUIT\r\n"
        )
        transcripts.append(converse(pair.ports[lane], [sent]))
        assert len(pair.store.messages(address)) == 1

    assert transcripts[0] == transcripts[1]
    assert b"250 2.0.0 OK: queued as ID" in transcripts[0]
