"""The SMTP service answers as a bare aiosmtpd 1.4.6 does, but where docs/limits.md says otherwise.

One memory store is served twice, with the same handler hooks: by the service
(the fast lane, handing over to aiosmtpd's protocol with the project's limits)
and by aiosmtpd's own ``SMTP`` class, untouched. Generated conversations that
stay within what both are meant to answer alike must get the same replies and
store the same mail; :data:`MEANT_TO_DIFFER` lists, with the line of
docs/limits.md that says so, each place where the service answers otherwise.
The service also gives some of aiosmtpd's own replies an enhanced status code
(RFC 3463: ``500 5.5.2``, ``501 5.5.4``, as docs/limits.md writes them), so
generated conversations' replies are compared without enhanced codes.
"""

from __future__ import annotations

import re
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aiosmtpd.smtp import SMTP, AuthResult
from hypothesis import example, given, settings

from pytest_tempinbox.config import ServerConfig
from pytest_tempinbox.server.smtp.service import SMTPService
from pytest_tempinbox.server.sockets import listen
from pytest_tempinbox.server.store.memory.store import Store

from .smtp_conversation_support import ODD_DATA_LINES, conversations, script
from .store_support import ServingLoop

SIZE_LIMIT = 3000
HOSTNAME = "mx.bare.test"
TIMEOUT = 10.0


def _any_credentials(*args: Any) -> AuthResult:
    return AuthResult(success=True)


class Servers:
    """The service and a bare aiosmtpd, on one store and one loop: their ports, by name."""

    def __init__(self, loop: ServingLoop, store: Store) -> None:
        self.store = store
        self.service = SMTPService(
            store, ServerConfig(hostname=HOSTNAME, message_size_limit=SIZE_LIMIT)
        )
        ours, bare = listen("127.0.0.1", 0, "SMTP", 100), listen("127.0.0.1", 0, "SMTP", 100)
        loop.call(self.service.start(ours))
        handler = self.service.handler

        def protocol() -> SMTP:
            return SMTP(
                handler,
                hostname=HOSTNAME,
                data_size_limit=SIZE_LIMIT,
                enable_SMTPUTF8=True,
                authenticator=_any_credentials,  # as the service: AUTH offered, any accepted
                auth_require_tls=False,
                loop=loop.loop,
            )

        async def serve_bare() -> Any:
            return await loop.loop.create_server(protocol, sock=bare)

        self.bare_server = loop.call(serve_bare())
        self.ports = {"ours": ours.getsockname()[1], "bare": bare.getsockname()[1]}


@pytest.fixture(scope="module")
def servers() -> Iterator[Servers]:
    """The service and a bare aiosmtpd serving one memory store."""
    loop = ServingLoop()
    store = loop.serve(Store(("bare.test",)))
    served = Servers(loop, store)
    yield served

    async def stop_bare() -> None:
        served.bare_server.close()

    loop.call(stop_bare())
    loop.call(served.service.stop())
    loop.close()


# An enhanced status code after a reply's code (RFC 3463), and the reply code before it.
ENHANCED_CODE = re.compile(rb"(?m)^(\d{3}[ -])[245]\.\d{1,3}\.\d{1,3} ")


def outcome(servers: Servers, which: str, script: bytes) -> tuple[bytes, list[bytes]]:
    """The replies to ``script`` (``{0}`` a fresh live address), and the raw mail stored."""
    address = servers.store.generate().address
    with socket.create_connection(("127.0.0.1", servers.ports[which]), timeout=TIMEOUT) as sock:
        sock.sendall(script.replace(b"{0}", address.encode()))
        received = b""
        while data := sock.recv(65536):
            received += data
    received = re.sub(rb"queued as \S+", b"queued as ID", received)
    stored = [message.raw for message in servers.store.messages(address)]
    return received.replace(address.encode(), b"<address>"), stored


CONVERSATION = conversations(
    [
        b"EHLO c.test",
        b"HELO c.test",
        b"MAIL FROM:<a@example.test> SIZE=100",
        b"MAIL FROM:<>",
        b'MAIL FROM:<"a b"@example.test>',
        b"RCPT TO:<nobody@bare.test>",
        b"RSET",
        b"NOOP",
        b"NOOP " + b"x" * (512 - 2 - 5),  # the longest command line, in both
        b"VRFY a@example.test",
        b"HELP",
    ],
    [
        *ODD_DATA_LINES,
        b"x" * 998,  # the longest DATA line, in both
        b"." + b"x" * 997,
        b"y" * 700,  # a few of them: over the size limit
    ],
)


@settings(max_examples=40, deadline=None)
@given(script=CONVERSATION)
@example(script=script([b"HELO c.test", b"MAIL FROM:<a@example.test> SIZE=100"]))  # 501 5.5.4
def test_a_conversation_within_the_documented_limits_is_answered_as_bare_aiosmtpd_does(
    servers: Servers, script: bytes
) -> None:
    ours, bare = outcome(servers, "ours", script), outcome(servers, "bare", script)
    assert ENHANCED_CODE.sub(rb"\1", ours[0]) == ENHANCED_CODE.sub(rb"\1", bare[0])
    assert ours[1] == bare[1]


def _transaction(*data: bytes) -> bytes:
    return script(
        [b"EHLO c.test", b"MAIL FROM:<a@example.test>", b"RCPT TO:<{0}>", b"DATA", *data, b"."]
    )


# Where the service is meant to answer otherwise: (what is sent, the line of
# docs/limits.md that says so, our reply, bare aiosmtpd's).
MEANT_TO_DIFFER = {
    "a DATA line of 999 characters and CRLF": (
        _transaction(b"x" * 999),
        "text line in DATA | 1,000 octets with CRLF (RFC 5321)",
        b"500 Line too long (see RFC5321 4.5.3.1.6)",
        b"250 2.0.0 OK",
    ),
    "a DATA line over both limits": (
        _transaction(b"x" * 998, b"y" * 998, b"z" * 1002),
        "the answer is the size limit's `552`",
        b"552 Error: Too much mail data",
        b"500 Line too long",
    ),
    "a command line of 511 characters and CRLF": (
        b"EHLO c.test\r\nNOOP " + b"x" * 506 + b"\r\nQUIT\r\n",
        "SMTP command line | 512 octets with CRLF",
        b"500 5.5.2 Command line too long",
        b"250 OK",
    ),
    "a blank inside a path's brackets": (
        b"EHLO c.test\r\nMAIL FROM:<a b@example.test>\r\nQUIT\r\n",
        "a `MAIL FROM` or\n  `RCPT TO` path that opens with `<` but is no RFC 5321 path",
        b"501 5.5.4 Syntax: MAIL FROM: <address>",
        b"250 2.1.0 OK",
    ),
    "a path without its closing bracket": (
        b"EHLO c.test\r\nMAIL FROM:<a@example.test SIZE=10\r\nQUIT\r\n",
        "a `MAIL FROM` or\n  `RCPT TO` path that opens with `<` but is no RFC 5321 path",
        b"501 5.5.4 Syntax: MAIL FROM: <address>",
        b"250 2.1.0 OK",
    ),
}


@pytest.fixture(scope="module")
def docs() -> str:
    """docs/limits.md, where each difference is written."""
    return (Path(__file__).parents[2] / "docs" / "limits.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("case", sorted(MEANT_TO_DIFFER))
def test_the_service_differs_from_bare_aiosmtpd_only_where_the_docs_say(
    servers: Servers, case: str, docs: str
) -> None:
    script, doc_line, ours, bare = MEANT_TO_DIFFER[case]
    assert doc_line in docs, f"docs/limits.md no longer says {doc_line!r}"
    assert ours in outcome(servers, "ours", script)[0]
    assert bare in outcome(servers, "bare", script)[0]
