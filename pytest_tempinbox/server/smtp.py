"""The SMTP side: the service listening on its socket, and each connection it serves.

Each connection is served by aiosmtpd's protocol (through
:mod:`pytest_tempinbox.server._aiosmtpd`, which alone touches its private
parts) with the project's limits and AUTH and TLS modes, and hands mail to
:class:`~pytest_tempinbox.server.smtp_handler.InboxHandler`, which checks
addresses and delivers into the store. By default AUTH PLAIN/LOGIN accepts any
credentials, so that applications configured with a username and password work
unchanged; the AUTH and TLS modes (:mod:`pytest_tempinbox.smtp_security`) change that.
"""

from __future__ import annotations

import asyncio
import collections
import hmac
import socket
import ssl
from collections.abc import Callable
from email.errors import HeaderParseError
from typing import Any, AnyStr, cast

from aiosmtpd.smtp import SMTP, AuthResult, Envelope, LoginPassword, syntax
from aiosmtpd.smtp import Session as AiosmtpdSession
from aiosmtpd.smtp import __ident__ as AIOSMTPD_IDENT

from ..config import ServerConfig
from ..limits import COMMAND_LINE_LIMIT
from ..parsing.email_internals import get_addr_spec, get_angle_addr
from ..smtp_security import SMTPAuth
from ._aiosmtpd import SMTPProtocol
from .counters import AUTH_REQUIRED, ServerCounters
from .smtp_fast_lane import PLAIN_PATH, FastLane, LaneSettings, Session
from .smtp_handler import InboxHandler, Transaction
from .storage import InboxStore

__all__ = ["InboxHandler", "SMTPService"]


def _accept_any_credentials(
    server: SMTP, session: AiosmtpdSession, envelope: Envelope, mechanism: str, auth_data: Any
) -> AuthResult:
    return AuthResult(success=True, auth_data=auth_data)


class _Credentials:
    """An aiosmtpd authenticator accepting one user name and password, compared in constant time."""

    def __init__(self, auth: SMTPAuth) -> None:
        self._username = (auth.username or "").encode("utf-8")
        self._password = (auth.password or "").encode("utf-8")

    def __call__(
        self,
        server: SMTP,
        session: AiosmtpdSession,
        envelope: Envelope,
        mechanism: str,
        auth_data: Any,
    ) -> AuthResult:
        if not isinstance(auth_data, LoginPassword):
            return AuthResult(success=False, handled=False)
        # Both compared, always: which of the two was wrong takes no longer to learn.
        user_ok = hmac.compare_digest(auth_data.login, self._username)
        password_ok = hmac.compare_digest(auth_data.password, self._password)
        # handled=False: aiosmtpd then answers a failure with 535 5.7.8.
        return AuthResult(success=user_ok and password_ok, handled=False, auth_data=auth_data)


# aiosmtpd's replies that lack an enhanced status code (RFC 3463), with it.
_ENHANCED_REPLIES = {
    "500 Command line too long": "500 5.5.2 Command line too long",
    "530 Must issue a STARTTLS command first": "530 5.7.0 Must issue a STARTTLS command first",
}


class _TrackedSMTP(SMTPProtocol):
    """aiosmtpd's protocol, counting its open sessions, with our line limits and AUTH modes.

    Command lines are read with a small buffer limit, DATA lines with
    ``data_line_limit``: allowing long text lines never lets a long command line
    be buffered. Without ``auth_offered``, AUTH answers as on a server without
    authentication; with ``auth_required``, MAIL, RCPT and DATA need it.
    """

    envelope_class = Transaction

    def __init__(
        self,
        handler: InboxHandler,
        sessions: set[Session],
        *,
        max_connections: int,
        data_line_limit: int,
        auth_offered: bool = True,
        auth_required: bool = False,
        **options: Any,
    ) -> None:
        super().__init__(handler, **options)
        self._sessions = sessions
        self._refusal_counts = handler.counters.refused
        self._max_connections = max_connections
        self._auth_offered = auth_offered
        # Not aiosmtpd's auth_required: that warns, on every connection, when AUTH
        # is allowed without TLS, which a test server does allow.
        self._password_required = auth_required
        # aiosmtpd keeps these limits in a dict shared by every session (and grows
        # MAIL's on each EHLO); each session gets its own.
        self.command_size_limits = collections.defaultdict(lambda: COMMAND_LINE_LIMIT)
        self.command_size_limit = COMMAND_LINE_LIMIT
        self.line_length_limit = data_line_limit + 1  # + 1 for a transparent dot

    def read_path(self, arg: str) -> tuple[str | None, str | None]:
        """The address of a MAIL or RCPT path and the rest of ``arg``, as aiosmtpd reads them.

        aiosmtpd's own reading, but for the typing.Protocol class it defines on
        every call (for MAIL and RCPT alike), which costs more than parsing the
        address, and for a path cut short ("<", "<a@"): the email package raises
        IndexError there, which aiosmtpd answered "451 try again later"; here it
        is a malformed address.
        """
        if not arg:
            return "", ""
        plain = PLAIN_PATH.match(arg)
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

    def admit(self, transport: asyncio.BaseTransport) -> bool:
        """Count the connection in, or refuse it with ``421`` when the limit is reached."""
        # Counted here, as each connection is made, so a burst cannot outrun it.
        if len(self._sessions) >= self._max_connections:
            transport = cast(asyncio.WriteTransport, transport)  # uvloop's too
            transport.write(b"421 4.7.0 Too many connections, try again later\r\n")
            transport.close()
            return False
        self._sessions.add(self)
        return True

    def release(self) -> None:
        """Count the connection out."""
        self._sessions.discard(self)

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
            if caller_method == "RCPT":
                self._refusal_counts[AUTH_REQUIRED] += 1
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


class SMTPService:
    """Serves a store over SMTP on a socket that the caller has bound and put in listening state.

    The settings come from ``config``. ``hostname`` is used in the greeting and the EHLO
    answer (aiosmtpd's default, :func:`socket.getfqdn`, can take seconds). EHLO
    advertises ``SIZE``, ``8BITMIME``, ``SMTPUTF8`` and ``AUTH LOGIN PLAIN``; sessions
    idle for ``timeout`` seconds are closed. At most ``max_connections`` sessions are
    open at once (the next gets ``421 4.7.0``), a message has at most ``max_recipients``
    recipients (the next RCPT gets ``452 4.5.3``), and a DATA line at most
    ``data_line_limit`` octets (else ``500`` after the final dot).

    ``tls`` is a mode of :data:`~pytest_tempinbox.smtp_security.TLS_MODES`; every mode but
    ``off`` needs ``tls_context``, a server-side context with the certificate. With
    ``required``, STARTTLS must come before anything but EHLO, NOOP and QUIT, and
    AUTH is offered only after it. ``auth`` says which credentials AUTH accepts.

    What it serves is counted in ``counters`` (its own when none is given),
    which also learns how to count the open sessions.
    """

    def __init__(
        self,
        store: InboxStore,
        config: ServerConfig,
        tls_context: ssl.SSLContext | None = None,
        counters: ServerCounters | None = None,
        *,
        fast_lane: bool = True,
    ) -> None:
        tls = config.tls
        if (tls != "off") != (tls_context is not None):
            raise ValueError(f"TLS mode {tls!r} and the context given do not go together")
        self.auth = config.smtp_auth
        self.counters = ServerCounters() if counters is None else counters
        self.handler = InboxHandler(
            store,
            max_recipients=config.max_recipients,
            advertise_auth=self.auth.mode != "none",
            counters=self.counters,
        )
        self.hostname = config.hostname or store.domains[0]
        self.message_size_limit = config.message_size_limit
        self.timeout = config.smtp_timeout
        self.max_connections = config.max_connections
        self.data_line_limit = config.data_line_limit
        self.tls = tls
        self.tls_context = tls_context
        # The fast lane serves every mode but those where AUTH or STARTTLS comes first.
        self.fast_lane = fast_lane and tls != "required" and self.auth.mode != "password"
        self._sessions: set[Session] = set()
        self.lane: LaneSettings | None = None
        """What the fast lanes share, once started with the fast lane."""
        self.counters.smtp_sessions = self._sessions.__len__
        self.counters.smtp_listening = self.serving
        self._server: asyncio.Server | None = None

    def serving(self) -> bool:
        """Tell whether the listener accepts connections."""
        return self._server is not None and self._server.is_serving()

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

        def aiosmtpd_protocol() -> SMTPProtocol:
            return _TrackedSMTP(
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

        protocol: Callable[[], asyncio.Protocol] = aiosmtpd_protocol
        if self.fast_lane:
            self.lane = settings = LaneSettings(
                self.handler,
                self._sessions,
                aiosmtpd_protocol,
                hostname=self.hostname,
                ident=AIOSMTPD_IDENT,
                timeout=self.timeout,
                max_connections=self.max_connections,
                data_size_limit=self.message_size_limit,
                line_length_limit=self.data_line_limit + 1,  # as _TrackedSMTP's
                starttls=self.tls == "starttls",
            )

            def protocol() -> asyncio.Protocol:
                return FastLane(settings, loop)

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
