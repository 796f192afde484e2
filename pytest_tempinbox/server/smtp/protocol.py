"""The aiosmtpd side of the SMTP service: the protocol of the connections the fast lane hands over.

:class:`TrackedSMTP` is aiosmtpd's protocol (through
:mod:`pytest_tempinbox.server.smtp._aiosmtpd`, which alone touches its private
parts) with the project's limits, AUTH modes and session count. The service
(:mod:`pytest_tempinbox.server.smtp`) imports this module, and with it
aiosmtpd, only when a connection needs it: the first one the fast lane hands
over, or every one when AUTH or STARTTLS must come first. By default AUTH
PLAIN/LOGIN accepts any credentials, so that applications configured with a
username and password work unchanged; the AUTH and TLS modes
(:mod:`pytest_tempinbox.smtp_security`) change that.
"""

from __future__ import annotations

import asyncio
import collections
import hmac
import re
from collections.abc import Callable
from email.errors import HeaderParseError
from typing import TYPE_CHECKING, Any, AnyStr, Protocol, cast

from aiosmtpd.smtp import SMTP, AuthResult, Envelope, LoginPassword, syntax
from aiosmtpd.smtp import Session as AiosmtpdSession

from ...limits import COMMAND_LINE_LIMIT
from ...parsing.email_internals import get_addr_spec, get_angle_addr
from ...smtp_security import SMTPAuth
from ..counters import AUTH_REQUIRED
from ._aiosmtpd import QuietSession, SMTPProtocol
from .client_limits import TOO_MANY_COMMANDS, TOO_MANY_CONNECTIONS, ClientCounts, client_address
from .fast_lane import PLAIN_PATH, Session
from .handler import InboxHandler
from .tenant_login import TenantLogin
from .transcript import Transcript

if TYPE_CHECKING:
    import ssl

    from ...smtp_logins import SMTPLogins
    from ..sockets import Refusals

__all__ = ["Service", "TrackedSMTP", "Transaction", "protocol_factory"]


class Service(Protocol):
    """What the protocol reads of the SMTP service (:class:`~.service.SMTPService`) it serves."""

    handler: InboxHandler
    sessions: set[Session]
    max_connections: int
    data_line_limit: int
    hostname: str
    message_size_limit: int
    timeout: float
    auth: SMTPAuth
    logins: SMTPLogins | None
    tls: str
    tls_context: ssl.SSLContext | None
    refusals: Refusals | None
    refusal: bytes
    clients: ClientCounts | None
    transcripts: bool


class Transaction(Envelope):
    """aiosmtpd's envelope, and the addresses that took a fault in this transaction."""

    def __init__(self) -> None:
        super().__init__()
        self.faulted: set[str] = set()


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


class _TenantCredentials:
    """An aiosmtpd authenticator accepting the tenants' SMTP logins (and the server's, if any).

    A tenant's login leaves a :class:`~.tenant_login.TenantLogin` in the session;
    the server's own (``--smtp-auth USER:PASSWORD``) its credentials, as before.
    """

    def __init__(self, logins: SMTPLogins, server_login: _Credentials | None) -> None:
        self._logins = logins
        self._server_login = server_login

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
        tenant = self._logins.tenant_of(auth_data.login, auth_data.password)
        if tenant is not None:
            return AuthResult(success=True, auth_data=TenantLogin(tenant))
        if self._server_login is not None:
            return self._server_login(server, session, envelope, mechanism, auth_data)
        # handled=False: aiosmtpd then answers a failure with 535 5.7.8.
        return AuthResult(success=False, handled=False)


# The command line limit as aiosmtpd measures it: without the line's CRLF.
_COMMAND_TEXT_LIMIT = COMMAND_LINE_LIMIT - 2

# A path's shape by RFC 5321 4.1.2: "<", no blank or bracket but in a quoted
# string, ">", then the line's end or a blank before the parameters. What is
# inside is read after (its local part, domain and lengths are checked there).
_PATH_SHAPE = re.compile(r'<(?:"(?:[^"\\\r\n]|\\.)*"|[^\s"<>])*>(?=\s|\Z)')

# aiosmtpd's replies that lack an enhanced status code (RFC 3463), with it.
_ENHANCED_REPLIES = {
    "500 Command line too long": "500 5.5.2 Command line too long",
    "530 Must issue a STARTTLS command first": "530 5.7.0 Must issue a STARTTLS command first",
    **{
        f"501 Syntax: {command} <address>{extended}": (
            f"501 5.5.4 Syntax: {command} <address>{extended}"
        )
        for command in ("MAIL FROM:", "RCPT TO:")
        for extended in ("", " [SP <mail-parameters>]")
    },
}


class TrackedSMTP(SMTPProtocol):
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
        refusals: Refusals | None = None,
        refusal: bytes = b"",
        clients: ClientCounts | None = None,
        transcripts: bool = False,
        **options: Any,
    ) -> None:
        super().__init__(handler, **options)
        self._transcripts = transcripts
        self._clients = clients
        self._client: str | None = None
        if clients is not None and clients.commands is not None:
            self.limit_commands(clients.commands, TOO_MANY_COMMANDS)
        self._sessions = sessions
        self._refusals, self._refusal = refusals, refusal
        self._refusal_counts = handler.counters.refused
        self._max_connections = max_connections
        self._auth_offered = auth_offered
        # Not aiosmtpd's auth_required: that warns, on every connection, when AUTH
        # is allowed without TLS, which a test server does allow.
        self._password_required = auth_required
        # aiosmtpd keeps these limits in a dict shared by every session (and grows
        # MAIL's on each EHLO); each session gets its own.
        # aiosmtpd measures a line without its CRLF; RFC 5321 4.5.3.1.4 counts it.
        self.command_size_limits = collections.defaultdict(lambda: _COMMAND_TEXT_LIMIT)
        self.command_size_limit = _COMMAND_TEXT_LIMIT
        self.data_line_limit = data_line_limit

    def read_path(self, arg: str) -> tuple[str | None, str | None]:
        """The address of a MAIL or RCPT path and the rest of ``arg``, as aiosmtpd reads them.

        aiosmtpd's own reading, but for the typing.Protocol class it defines on
        every call (for MAIL and RCPT alike), which costs more than parsing the
        address, and for a path that is no RFC 5321 path: a blank or a
        parameter inside the brackets, no closing ``>``, or anything but a blank
        after it. aiosmtpd's email-package reading repairs those (``<a b@x>`` as
        ``"a b"@x``); here they read as no address, which aiosmtpd answers with
        its ``501`` syntax reply.
        """
        if not arg:
            return "", ""
        if arg.lstrip()[:1] == "<" and _PATH_SHAPE.match(arg.lstrip()) is None:
            return "", ""  # aiosmtpd's 501 syntax reply: no path to read
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
        refusals = self._refusals
        if refusals is not None and refusals.at_ceiling(transport):  # near the open-file limit
            refusals.refuse_transport(transport, "SMTP", self._refusal)
            return False
        # Counted here, as each connection is made, so a burst cannot outrun it.
        if len(self._sessions) >= self._max_connections:
            transport = cast(asyncio.WriteTransport, transport)  # uvloop's too
            transport.write(b"421 4.7.0 Too many connections, try again later\r\n")
            transport.close()
            return False
        if self._clients is not None:
            address = client_address(transport)
            if not self._clients.enter(address):
                cast(asyncio.WriteTransport, transport).write(TOO_MANY_CONNECTIONS)
                transport.close()
                return False
            self._client = address
        self._sessions.add(self)
        return True

    def release(self) -> None:
        """Count the connection out."""
        self._sessions.discard(self)
        if self._clients is not None and self._client is not None:
            self._clients.leave(self._client)
            self._client = None

    def take_over(
        self,
        transport: asyncio.BaseTransport,
        session: Any,
        envelope: Any,
        ehlos: int,
        unread: bytes,
    ) -> None:
        """Serve a connection from the middle, counting on from the commands the lane served."""
        self.commands_served = getattr(session, "commands", 0)
        super().take_over(transport, session, envelope, ehlos, unread)

    async def push(self, status: AnyStr) -> None:
        """Send a reply; aiosmtpd's replies without an enhanced status code gain one."""
        if isinstance(status, str):
            status = _ENHANCED_REPLIES.get(status, status)
        transcript = getattr(self.session, "transcript", None)
        if transcript is not None and not self._greeted_elsewhere:
            line = status.encode("utf-8") if isinstance(status, str) else status
            transcript.server(line + b"\r\n")
        await super().push(status)

    def refuse_data(self, reply: str) -> str:
        """Remember the refusal of the message just read, for each recipient, as the lane does."""
        handler: InboxHandler = self.event_handler
        assert self.session is not None  # in DATA, both are
        assert self.envelope is not None
        return handler.refuse_data(self.session, self.envelope, reply)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        """Start serving, the session's transcript kept across STARTTLS's new session."""
        kept = getattr(self.session, "transcript", None)
        super().connection_made(transport)
        if self.session is not None and self._transcripts:
            transcript = cast(QuietSession, self.session).transcript = kept or Transcript()
            transcript.secure(transport)  # after STARTTLS's handshake too

    def data_received(self, data: bytes) -> None:
        """Read the client's bytes, into the session's transcript too."""
        transcript = getattr(self.session, "transcript", None)
        if transcript is not None:
            transcript.client(data)
        super().data_received(data)

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


def protocol_factory(
    service: Service, loop: asyncio.AbstractEventLoop
) -> Callable[[], TrackedSMTP]:
    """What makes the aiosmtpd protocol of each of ``service``'s connections, on ``loop``."""
    options = _options(service)

    def protocol() -> TrackedSMTP:
        return TrackedSMTP(
            service.handler,
            service.sessions,
            max_connections=service.max_connections,
            data_line_limit=service.data_line_limit,
            refusals=service.refusals,
            refusal=service.refusal,
            clients=service.clients,
            transcripts=service.transcripts,
            hostname=service.hostname,
            data_size_limit=service.message_size_limit,
            enable_SMTPUTF8=True,
            timeout=service.timeout,
            loop=loop,
            **options,
        )

    return protocol


def _options(service: Service) -> dict[str, Any]:
    """The protocol's keywords for the TLS and AUTH modes."""
    options: dict[str, Any] = {
        "auth_offered": service.auth.mode != "none",
        "auth_required": service.auth.mode == "password",
        # Plain-text AUTH is what applications under test mostly do; only
        # "required" keeps AUTH for after STARTTLS, as a mature server would.
        "auth_require_tls": service.tls == "required",
        "authenticator": _accept_any_credentials,
    }
    if service.auth.mode == "password":
        options["authenticator"] = _Credentials(service.auth)
    if service.logins is not None:
        server_login = options["authenticator"] if service.auth.mode == "password" else None
        options["authenticator"] = _TenantCredentials(service.logins, server_login)
    if service.tls in ("starttls", "required"):
        options["tls_context"] = service.tls_context
        options["require_starttls"] = service.tls == "required"
    return options
