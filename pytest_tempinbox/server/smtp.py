"""The SMTP side: an aiosmtpd handler that routes mail into the store.

The only module that imports aiosmtpd. It accepts mail only for live generated
addresses (no relaying, ever), and stores each message before answering ``250``
to DATA. By default it accepts any AUTH PLAIN/LOGIN credentials, so that
applications configured with a username and password work unchanged; the AUTH
and TLS modes (:mod:`pytest_tempinbox.modes`) change that. Faults injected into
an inbox (:mod:`pytest_tempinbox.server.faults`) strike here, at RCPT or at DATA.
"""

from __future__ import annotations

import asyncio
import collections
import hmac
import inspect
import logging
import re
import socket
import ssl
from email._header_value_parser import get_addr_spec, get_angle_addr
from email.errors import HeaderParseError
from typing import Any, AnyStr

from aiosmtpd.smtp import (
    SMTP,
    AuthResult,
    Envelope,
    LoginPassword,
    Session,
    TLSSetupException,
    syntax,
)

from ..limits import (
    COMMAND_LINE_LIMIT,
    DEFAULT_DATA_LINE_LIMIT,
    DEFAULT_IDLE_TIMEOUT,
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_MAX_RECIPIENTS,
    DEFAULT_MESSAGE_SIZE_LIMIT,
)
from ..models import Fault, Stage
from ..modes import DEFAULT_TLS, SMTPAuth
from ..parsing.headers import DOT_ATOM
from .faults import data_answer, reply_line
from .store import Store

__all__ = ["InboxHandler", "SMTPService"]

log = logging.getLogger(__name__)

MAX_LOCAL_PART, MAX_DOMAIN, MAX_PATH = 64, 255, 256
# Seconds a dropped session may take to end; closing it ends it at once.
_DROP_GRACE = 5.0
_NOT_LIVE = "not a live generated address"


# aiosmtpd finds its commands, AUTH mechanisms and handler hooks by these prefixes.
_DISPATCH_PREFIXES = ("smtp_", "auth_", "handle_")
_dispatch_names_of: dict[type, list[str]] = {}


def _dispatch_names(cls: type) -> list[str]:
    names = _dispatch_names_of.get(cls)
    if names is None:
        names = sorted(name for name in dir(cls) if name.startswith(_DISPATCH_PREFIXES))
        _dispatch_names_of[cls] = names
    return list(names)


class InboxHandler:
    """aiosmtpd handler hooks: MAIL and RCPT check addresses, DATA delivers into the store.

    Without ``advertise_auth``, EHLO's answer leaves AUTH out. ``dir()`` of a
    handler lists only its hooks: aiosmtpd reads it on every connection.
    """

    def __dir__(self) -> list[str]:
        # See _TrackedSMTP.__dir__: aiosmtpd lists the handler's hooks on every connection.
        return _dispatch_names(type(self))

    def __init__(
        self,
        store: Store,
        *,
        max_recipients: int = DEFAULT_MAX_RECIPIENTS,
        advertise_auth: bool = True,
    ) -> None:
        self.store = store
        self.max_recipients = max_recipients
        self.advertise_auth = advertise_auth

    async def handle_EHLO(
        self,
        server: SMTP,
        session: Session,
        envelope: Envelope,
        hostname: str,
        responses: list[str],
    ) -> list[str]:
        """Answer EHLO with aiosmtpd's extensions, AUTH left out when it is not offered.

        The lines go out in one write: aiosmtpd writes each line it is given on
        its own, and a client reading them wakes up for each.
        """
        session.host_name = hostname  # aiosmtpd leaves this to a handler with this hook
        if not self.advertise_auth:
            responses = [line for line in responses if not line.startswith("250-AUTH")]
        return ["\r\n".join(responses)]

    async def handle_MAIL(
        self,
        server: SMTP,
        session: Session,
        envelope: Envelope,
        address: str,
        mail_options: list[str],
    ) -> str:
        """Accept any sender (``<>`` too) whose path is within RFC 5321's lengths."""
        if address != "<>":
            refusal = _path_refusal(address, envelope)
            if refusal:
                return refusal
        envelope.mail_from = address
        envelope.mail_options.extend(mail_options)
        return "250 2.1.0 OK"

    async def handle_RCPT(
        self,
        server: SMTP,
        session: Session,
        envelope: Envelope,
        address: str,
        rcpt_options: list[str],
    ) -> str:
        """Accept a live generated address (any case); refuse everything else with 550."""
        refusal = _path_refusal(address, envelope)
        if refusal:
            return refusal
        if len(envelope.rcpt_tos) >= self.max_recipients:
            return f"452 4.5.3 Too many recipients: at most {self.max_recipients} per message"
        if not self.store.accepts(address):
            return self._refuse(session, address)
        fault = self._take_fault(envelope, address, "rcpt")
        if fault is not None:
            reply = await _strike(server, fault)
            if reply is not None:
                return reply
            if not self.store.accepts(address):  # deleted during the delay
                return self._refuse(session, address)
        envelope.rcpt_tos.append(address)
        envelope.rcpt_options.extend(rcpt_options)
        return "250 2.1.5 OK"

    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        """Store a copy for each accepted recipient, then answer 250.

        Faults for the end of DATA strike first. SMTP has one DATA reply for
        every recipient, so when one recipient's fault replies or disconnects,
        nobody gets the message (the client will send it to them all again).
        A delay waits, the longest of them; a client that leaves meanwhile
        cancels the session, and nothing is stored.
        """
        raw = envelope.original_content or b""
        # aiosmtpd keeps the null reverse-path as "<>"; the API calls it "".
        mail_from = "" if envelope.mail_from == "<>" else str(envelope.mail_from)
        faults = [
            fault
            for address in (dict.fromkeys(envelope.rcpt_tos) if self.store.faults_added else ())
            if (fault := self._take_fault(envelope, address, "data")) is not None
        ]
        if faults:
            reply = await _strike(server, data_answer(faults))
            if reply is not None:
                return reply
        stored = self.store.deliver(mail_from, envelope.rcpt_tos, raw)
        if not stored:
            # Every recipient was deleted between RCPT and the end of DATA.
            return "554 5.1.1 No live recipients left: the inboxes were deleted"
        return f"250 2.0.0 OK: queued as {stored[0].id}"

    def _refuse(self, session: Session, address: str) -> str:
        """Refuse ``address`` with 550, and remember it for the failures of waits."""
        peer = session.peer
        client_ip = peer[0] if isinstance(peer, tuple) and peer else None
        helo = session.host_name if isinstance(session.host_name, str) else None
        self.store.refusals.record(address, _NOT_LIVE, client_ip, helo)
        # The address is not echoed: it may hold bytes that cannot be encoded.
        return f"550 5.1.1 Recipient address rejected: {_NOT_LIVE}"

    def _take_fault(self, envelope: Envelope, address: str, stage: Stage) -> Fault | None:
        """The fault this transaction's delivery to ``address`` gets at ``stage``, if any.

        A transaction takes at most one fault per address: a delayed RCPT does
        not also take the next fault at DATA, nor a repeated RCPT another one.
        """
        if not self.store.faults_added:  # the usual case: no test ever asked for one
            return None
        taken = envelope.faulted if isinstance(envelope, _Transaction) else set()
        key = address.lower()
        if key in taken:
            return None
        fault = self.store.take_fault(address, stage)
        if fault is not None:
            taken.add(key)
        return fault

    async def handle_exception(self, error: Exception) -> str:
        """Log an unexpected error and answer a temporary failure without internals."""
        if isinstance(error, TLSSetupException):
            # A client that does not trust the certificate: its failure, not ours.
            # aiosmtpd closes the connection without sending this answer.
            log.info("STARTTLS handshake failed: %s", error.__cause__)
        else:
            log.error("error while handling an SMTP command", exc_info=error)
        return "451 4.3.0 Local error in processing, try again later"


# aiosmtpd looks at handle_EHLO's signature on every connection (to tell its old
# four-argument form apart), which takes longer than the rest of setting up the
# session; inspect.signature() hands out a __signature__ as it is.
setattr(InboxHandler.handle_EHLO, "__signature__", inspect.signature(InboxHandler.handle_EHLO))  # noqa: B010


async def _strike(server: SMTP, fault: Fault) -> str | None:
    """Carry out ``fault``: the reply to give instead of the normal one, or None to go on.

    A delay (also one with a reply or disconnect after it, see :func:`data_answer`)
    holds the answer; a disconnect closes the connection without one; a 421
    reply is followed by closing it, as RFC 5321 3.8 says a server does.
    """
    if fault.delay is not None:
        if isinstance(server, _TrackedSMTP):
            await server.pause(fault.delay)
        else:
            await asyncio.sleep(fault.delay)
    if fault.disconnect or fault.code == 421:
        if fault.code == 421:
            await server.push(reply_line(fault))
        if isinstance(server, _TrackedSMTP):
            await server.drop()
        elif server.transport is not None:
            server.transport.close()
        return "421 4.4.2 Connection dropped (injected fault)"  # nobody reads it
    return None if fault.code is None else reply_line(fault)


def _path_refusal(address: str, envelope: Envelope) -> str | None:
    if not envelope.smtp_utf8 and not address.isascii():
        # RFC 6531 3.7.4.1, and what Postfix answers: unicode needs MAIL ... SMTPUTF8.
        return "553 5.6.7 Must declare SMTPUTF8 to send unicode address"
    # RFC 5321 4.5.3.1: local part 64 octets, domain 255, path (with <>) 256.
    encoded = address.encode("utf-8", "surrogateescape")
    local, at, domain = encoded.rpartition(b"@")
    if not at or not local or not domain:
        return "553 5.1.3 Malformed address: a local part, '@' and a domain are needed"
    if len(local) > MAX_LOCAL_PART or len(domain) > MAX_DOMAIN or len(encoded) + 2 > MAX_PATH:
        return (
            f"553 5.1.3 Address too long: local part {MAX_LOCAL_PART}, domain {MAX_DOMAIN},"
            f" path {MAX_PATH} octets at most"
        )
    return None


def _accept_any_credentials(
    server: SMTP, session: Session, envelope: Envelope, mechanism: str, auth_data: Any
) -> AuthResult:
    return AuthResult(success=True, auth_data=auth_data)


class _Credentials:
    """An aiosmtpd authenticator accepting one user name and password, compared in constant time."""

    def __init__(self, auth: SMTPAuth) -> None:
        self._username = (auth.username or "").encode("utf-8")
        self._password = (auth.password or "").encode("utf-8")

    def __call__(
        self, server: SMTP, session: Session, envelope: Envelope, mechanism: str, auth_data: Any
    ) -> AuthResult:
        if not isinstance(auth_data, LoginPassword):
            return AuthResult(success=False, handled=False)
        # Both compared, always: which of the two was wrong takes no longer to learn.
        user_ok = hmac.compare_digest(auth_data.login, self._username)
        password_ok = hmac.compare_digest(auth_data.password, self._password)
        # handled=False: aiosmtpd then answers a failure with 535 5.7.8.
        return AuthResult(success=user_ok and password_ok, handled=False, auth_data=auth_data)


class _Transaction(Envelope):
    """aiosmtpd's envelope, and the addresses that took a fault in this transaction."""

    def __init__(self) -> None:
        super().__init__()
        self.faulted: set[str] = set()


class _QuietSession(Session):
    # aiosmtpd logs a deprecation warning whenever AUTH sets Session.login_data;
    # a plain attribute keeps every authenticated session from logging it.
    login_data: Any = None


# "<local@domain>" in plain ASCII atoms: how nearly every client writes a path.
_PLAIN_PATH = re.compile(rf"<({DOT_ATOM}@{DOT_ATOM})>")

# aiosmtpd's replies that lack an enhanced status code (RFC 3463), with it.
_ENHANCED_REPLIES = {
    "500 Command line too long": "500 5.5.2 Command line too long",
    "530 Must issue a STARTTLS command first": "530 5.7.0 Must issue a STARTTLS command first",
}


class _TrackedSMTP(SMTP):
    """aiosmtpd's protocol, counting its open sessions, with our line limits and AUTH modes.

    Command lines are read with a small buffer limit, DATA lines with
    ``data_line_limit``: allowing long text lines never lets a long command line
    be buffered. Without ``auth_offered``, AUTH answers as on a server without
    authentication; with ``auth_required``, MAIL, RCPT and DATA need it.
    """

    def __init__(
        self,
        handler: InboxHandler,
        sessions: set[_TrackedSMTP],
        *,
        max_connections: int,
        data_line_limit: int,
        auth_offered: bool = True,
        auth_required: bool = False,
        **options: Any,
    ) -> None:
        super().__init__(handler, **options)
        self._sessions = sessions
        self._max_connections = max_connections
        self._refused = False
        self._auth_offered = auth_offered
        # Not aiosmtpd's auth_required: that warns, on every connection, when AUTH
        # is allowed without TLS, which a test server does allow.
        self._password_required = auth_required
        # aiosmtpd keeps these limits in a dict shared by every session (and grows
        # MAIL's on each EHLO); each session gets its own.
        self.command_size_limits = collections.defaultdict(lambda: COMMAND_LINE_LIMIT)
        self.command_size_limit = COMMAND_LINE_LIMIT
        self.line_length_limit = data_line_limit + 1  # + 1 for a transparent dot

    def __dir__(self) -> list[str]:
        # aiosmtpd builds each connection's command and AUTH tables from dir() and
        # inspect.getmembers() of the protocol and the handler: a getattr and a sort
        # over some 150 names, most of the cost of accepting a connection. The names
        # it looks for are the class's, so list only those, once per class.
        return _dispatch_names(type(self))

    def _getaddr(self, arg: str) -> tuple[str | None, str | None]:
        # aiosmtpd's own, but for the typing.Protocol class it defines on every
        # call (for MAIL and RCPT alike), which costs more than parsing the
        # address, and for a path cut short ("<", "<a@"): the email package raises
        # IndexError there, which aiosmtpd answered "451 try again later".
        if not arg:
            return "", ""
        plain = _PLAIN_PATH.match(arg)
        if plain is not None:
            # What the email package makes of "<a.b@c.d>": the address as written,
            # and the rest without the blanks that follow it (unless a comment does).
            rest = arg[plain.end() :]
            rest = rest.lstrip() if rest[:1] in (" ", "\t") else rest
            if not rest.startswith("("):
                return self._within_limit(plain[1], rest)
        try:
            if arg.lstrip().startswith("<"):
                angle, rest = get_angle_addr(arg)
                addr = angle.addr_spec
            else:
                spec, rest = get_addr_spec(arg)
                addr = spec.addr_spec
        except (HeaderParseError, IndexError):
            return None, None  # "553 5.1.3 Error: malformed address"
        return self._within_limit(addr, rest)

    def _within_limit(self, addr: str, rest: str) -> tuple[str | None, str | None]:
        localpart = addr.rpartition("@")[0]
        if self.local_part_limit and len(localpart) > self.local_part_limit:
            return None, None
        return addr, rest

    def _create_session(self) -> Session:
        return _QuietSession(self.loop)

    def _create_envelope(self) -> Envelope:
        return _Transaction()

    async def pause(self, seconds: float) -> None:
        """Hold the session's answer for ``seconds``; the idle timer holds off as long."""
        # The timer counts from the command: an injected delay is not the client's idleness.
        self._reset_timeout(seconds + self._timeout_duration)
        await asyncio.sleep(seconds)
        self._reset_timeout()

    async def drop(self) -> None:
        """Close the connection without a word, and wait for that to end the session."""
        self.close_now()
        # connection_lost cancels the session's task, and with it this wait, at once.
        await asyncio.sleep(_DROP_GRACE)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        if self in self._sessions:
            # The session goes on over TLS after STARTTLS: not a new connection.
            super().connection_made(transport)
            return
        # Counted here, as each connection is made, so a burst cannot outrun it.
        if len(self._sessions) >= self._max_connections:
            self._refused = True
            assert isinstance(transport, asyncio.WriteTransport)
            transport.write(b"421 4.7.0 Too many connections, try again later\r\n")
            transport.close()
            return
        self._sessions.add(self)
        super().connection_made(transport)

    def connection_lost(self, error: Exception | None) -> None:
        if self._refused:
            return
        self._sessions.discard(self)
        super().connection_lost(error)

    async def push(self, status: AnyStr) -> None:
        """Send a reply; aiosmtpd's replies without an enhanced status code gain one."""
        if isinstance(status, str):
            await super().push(_ENHANCED_REPLIES.get(status, status))
        else:
            await super().push(status)

    async def check_auth_needed(self, caller_method: str) -> bool:
        """Refuse MAIL, RCPT and DATA (and HELP, VRFY) before a required AUTH succeeds."""
        assert self.session is not None
        if self._password_required and not self.session.authenticated:
            await self.push("530 5.7.0 Authentication required")
            return True
        return False

    @syntax("AUTH <mechanism>", when="_auth_offered")
    async def smtp_AUTH(self, arg: str) -> None:
        """Authenticate; without AUTH offered, answer as Postfix does without SASL."""
        if not self._auth_offered:
            await self.push("503 5.5.1 Error: authentication not enabled")
            return
        await super().smtp_AUTH(arg)

    def close_now(self) -> None:
        """Close the connection at once, without waiting for a client's TLS shutdown."""
        if self._original_transport is not None:
            self._original_transport.close()  # the TCP connection under STARTTLS
        elif self.transport is None:
            return
        elif self.transport.get_extra_info("sslcontext") is not None:
            assert isinstance(self.transport, asyncio.WriteTransport)
            self.transport.abort()  # implicit TLS: close() would wait for the client
        else:
            self.transport.close()

    @syntax("DATA")  # as aiosmtpd's own: HELP lists a command by this mark
    async def smtp_DATA(self, arg: str) -> None:
        """Read DATA with the text-line limit, then go back to the command-line limit."""
        reader: Any = self._reader
        command_limit = reader._limit
        reader._limit = self.line_length_limit
        try:
            await super().smtp_DATA(arg)
        finally:
            reader._limit = command_limit


class SMTPService:
    """Serves a store over SMTP on a socket that the caller has bound and put in listening state.

    ``hostname`` is used in the greeting and the EHLO answer (aiosmtpd's default,
    :func:`socket.getfqdn`, can take seconds). EHLO advertises ``SIZE``,
    ``8BITMIME``, ``SMTPUTF8`` and ``AUTH LOGIN PLAIN``; sessions idle for
    ``timeout`` seconds are closed. At most ``max_connections`` sessions are open at
    once (the next gets ``421 4.7.0``), a message has at most ``max_recipients``
    recipients (the next RCPT gets ``452 4.5.3``), and a DATA line at most
    ``data_line_limit`` octets (else ``500`` after the final dot).

    ``tls`` is a mode of :data:`~pytest_tempinbox.modes.TLS_MODES`; every mode but
    ``off`` needs ``tls_context``, a server-side context with the certificate. With
    ``required``, STARTTLS must come before anything but EHLO, NOOP and QUIT, and
    AUTH is offered only after it. ``auth`` says which credentials AUTH accepts.
    """

    def __init__(
        self,
        store: Store,
        *,
        hostname: str,
        message_size_limit: int = DEFAULT_MESSAGE_SIZE_LIMIT,
        timeout: float = DEFAULT_IDLE_TIMEOUT,
        max_recipients: int = DEFAULT_MAX_RECIPIENTS,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        data_line_limit: int = DEFAULT_DATA_LINE_LIMIT,
        tls: str = DEFAULT_TLS,
        tls_context: ssl.SSLContext | None = None,
        auth: SMTPAuth | None = None,
    ) -> None:
        if (tls != "off") != (tls_context is not None):
            raise ValueError(f"TLS mode {tls!r} and the context given do not go together")
        self.auth = auth or SMTPAuth()
        self.handler = InboxHandler(
            store, max_recipients=max_recipients, advertise_auth=self.auth.mode != "none"
        )
        self.hostname = hostname
        self.message_size_limit = message_size_limit
        self.timeout = timeout
        self.max_connections = max_connections
        self.data_line_limit = data_line_limit
        self.tls = tls
        self.tls_context = tls_context
        self._sessions: set[_TrackedSMTP] = set()
        self._server: asyncio.Server | None = None

    def _protocol_options(self) -> dict[str, Any]:
        """The protocol's keywords for the TLS and AUTH modes."""
        options: dict[str, Any] = {
            "auth_offered": self.auth.mode != "none",
            "auth_required": self.auth.mode == "password",
            # Plain-text AUTH is what applications under test mostly do; only
            # "required" keeps AUTH for after STARTTLS, as a mature server would.
            "auth_require_tls": self.tls == "required",
            "authenticator": _accept_any_credentials,
        }
        if self.auth.mode == "password":
            options["authenticator"] = _Credentials(self.auth)
        if self.tls in ("starttls", "required"):
            options["tls_context"] = self.tls_context
            options["require_starttls"] = self.tls == "required"
        return options

    async def start(self, sock: socket.socket) -> None:
        """Start accepting connections on ``sock`` in the running loop."""
        loop = asyncio.get_running_loop()
        options = self._protocol_options()

        def protocol() -> asyncio.Protocol:
            session: asyncio.Protocol = _TrackedSMTP(
                self.handler,
                self._sessions,
                max_connections=self.max_connections,
                data_line_limit=self.data_line_limit,
                hostname=self.hostname,
                data_size_limit=self.message_size_limit,
                enable_SMTPUTF8=True,
                timeout=self.timeout,
                loop=loop,
                **options,
            )
            return session

        if self.tls == "implicit":
            self._server = await loop.create_server(
                protocol,
                sock=sock,
                ssl=self.tls_context,
                # A client that connects and never finishes the handshake is let go.
                ssl_handshake_timeout=min(self.timeout, 60.0),
            )
        else:
            self._server = await loop.create_server(protocol, sock=sock)

    async def stop(self) -> None:
        """Stop accepting, and close every open session, idle or mid-transaction."""
        if self._server is None:
            return
        self._server.close()
        for session in list(self._sessions):
            session.close_now()
        await self._server.wait_closed()
