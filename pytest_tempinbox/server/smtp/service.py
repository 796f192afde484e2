"""The SMTP side: the service listening on its socket, and how each connection is served.

A connection starts in the fast lane (:mod:`pytest_tempinbox.server.smtp.fast_lane`),
which answers the everyday conversation itself and hands anything else over to
aiosmtpd's protocol (:mod:`pytest_tempinbox.server.smtp.protocol`, imported
with the first connection that needs it). Both hand mail to
:class:`~pytest_tempinbox.server.smtp.handler.InboxHandler`, which checks
addresses and delivers into the store. When AUTH or STARTTLS must come first
(``--smtp-auth USER:PASSWORD``, ``--tls required``), aiosmtpd serves every
connection from its start.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
from collections.abc import Callable
from typing import TYPE_CHECKING

import aiosmtpd  # its package alone, for its version: not its protocol

from ...config import ServerConfig
from ..counters import ServerCounters
from ..sockets import Refusals, smtp_refusal
from ..store.protocol import InboxStore
from .fast_lane import FastLane, LaneSettings, Session
from .handler import InboxHandler

if TYPE_CHECKING:
    from ...smtp_logins import SMTPLogins
    from ._aiosmtpd import SMTPProtocol
    from .client_limits import ClientCounts

__all__ = ["InboxHandler", "SMTPService"]


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
    AUTH is offered only after it. ``auth`` says which credentials AUTH accepts;
    when a tenant has SMTP credentials (``logins``), AUTH accepts those (and
    with ``USER:PASSWORD`` that one too) and no others, and a session that
    logged in with a tenant's reaches that tenant's inboxes only.

    What it serves is counted in ``counters`` (its own when none is given),
    which also learns how to count the open sessions. With ``refusals``, a
    connection holding one of the last descriptors below the open-file limit
    is answered ``421`` and closed (:mod:`pytest_tempinbox.server.sockets`).
    """

    def __init__(
        self,
        store: InboxStore,
        config: ServerConfig,
        tls_context: ssl.SSLContext | None = None,
        counters: ServerCounters | None = None,
        *,
        fast_lane: bool = True,
        refusals: Refusals | None = None,
    ) -> None:
        tls = config.tls
        if (tls != "off") != (tls_context is not None):
            raise ValueError(f"TLS mode {tls!r} and the context given do not go together")
        self.auth = config.smtp_auth
        tenants = config.tenants
        self.logins: SMTPLogins | None = tenants.smtp_logins if tenants is not None else None
        """The tenants' SMTP credentials, when some tenant has them (``docs/tenants.md``)."""
        if not self.logins:
            self.logins = None
        self.counters = ServerCounters() if counters is None else counters
        self.transcripts = config.transcripts
        """Whether each session keeps its SMTP transcript (``docs/transcripts.md``)."""
        book = None
        if self.transcripts:
            from .transcript import TranscriptBook

            # On the store: the API's transcript route reads it there.
            book = store.transcripts = TranscriptBook()  # type: ignore[attr-defined]
        self.handler = InboxHandler(
            store,
            max_recipients=config.max_recipients,
            advertise_auth=self.auth.mode != "none",
            counters=self.counters,
            tenant_logins=self.logins is not None,
            transcripts=book,
        )
        self.hostname = config.hostname or store.domains[0]
        self.message_size_limit = config.message_size_limit
        self.timeout = config.smtp_timeout
        self.max_connections = config.max_connections
        self.data_line_limit = config.data_line_limit
        self.backlog = config.listen_backlog
        self.refusals = refusals
        self.refusal = smtp_refusal(self.hostname, tls)
        limits = config.rate_limits_in_force()
        self.clients: ClientCounts | None = None
        """The connections per client address and commands per connection, when limited."""
        if limits is not None and limits.smtp:
            from .client_limits import ClientCounts  # a server without the limits never loads it

            self.clients = ClientCounts(
                limits.smtp_connections_per_client, limits.smtp_commands_per_connection
            )
        self.tls = tls
        self.tls_context = tls_context
        # The fast lane serves every mode but those where AUTH or STARTTLS comes first.
        self.fast_lane = fast_lane and tls != "required" and self.auth.mode != "password"
        self.sessions: set[Session] = set()
        """The open connections, fast lanes and aiosmtpd protocols alike."""
        self.lane: LaneSettings | None = None
        """What the fast lanes share, once started with the fast lane."""
        self.counters.smtp_sessions = self.sessions.__len__
        self.counters.smtp_listening = self.serving
        self._server: asyncio.Server | None = None

    def serving(self) -> bool:
        """Tell whether the listener accepts connections."""
        return self._server is not None and self._server.is_serving()

    async def start(self, sock: socket.socket) -> None:
        """Start accepting connections on ``sock`` in the running loop."""
        loop = asyncio.get_running_loop()
        made: list[Callable[[], SMTPProtocol]] = []

        def aiosmtpd_protocol() -> SMTPProtocol:
            if not made:  # aiosmtpd is imported with the first connection that needs it
                from .protocol import protocol_factory

                made.append(protocol_factory(self, loop))
            return made[0]()

        protocol: Callable[[], asyncio.Protocol] = aiosmtpd_protocol
        if self.fast_lane:
            self.lane = settings = LaneSettings(
                self.handler,
                self.sessions,
                aiosmtpd_protocol,
                hostname=self.hostname,
                ident=f"Python SMTP {aiosmtpd.__version__}",  # aiosmtpd's greeting
                timeout=self.timeout,
                max_connections=self.max_connections,
                data_size_limit=self.message_size_limit,
                data_line_limit=self.data_line_limit,
                starttls=self.tls == "starttls",
                refusals=self.refusals,
                refusal=self.refusal,
                transcripts=self.transcripts,
            )

            clients = self.clients
            if clients is None:

                def protocol() -> asyncio.Protocol:
                    return FastLane(settings, loop)

            else:  # the lane holding the limits: a server without them does no more work
                from .client_limits import LimitedLane

                def protocol() -> asyncio.Protocol:
                    return LimitedLane(settings, loop, clients)

        if self.tls == "implicit":
            self._server = await loop.create_server(
                protocol,
                sock=sock,
                ssl=self.tls_context,
                # A client that connects and never finishes the handshake is let go.
                ssl_handshake_timeout=min(self.timeout, 60.0),
                backlog=self.backlog,
            )
        else:
            # The backlog is given again: asyncio listens anew with its own default (100).
            self._server = await loop.create_server(protocol, sock=sock, backlog=self.backlog)

    async def stop(self) -> None:
        """Stop accepting, and close every open session, idle or mid-transaction."""
        if self._server is None:
            return
        self._server.close()
        for session in list(self.sessions):
            session.close_now()
        await self._server.wait_closed()
