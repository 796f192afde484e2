"""The SMTP side: an aiosmtpd handler that routes mail into the store.

The only module that imports aiosmtpd. It accepts mail only for live generated
addresses (no relaying, ever), stores each message before answering ``250`` to
DATA, and accepts any AUTH PLAIN/LOGIN credentials so that applications
configured with a username and password work unchanged.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from typing import Any

from aiosmtpd.smtp import SMTP, AuthResult, Envelope, Session

from .store import Store

__all__ = ["DEFAULT_MESSAGE_SIZE_LIMIT", "InboxHandler", "SMTPService"]

log = logging.getLogger(__name__)

DEFAULT_MESSAGE_SIZE_LIMIT = 10 * 1024 * 1024


class InboxHandler:
    """aiosmtpd handler hooks: RCPT checks the store, DATA delivers into it."""

    def __init__(self, store: Store) -> None:
        self.store = store

    async def handle_RCPT(
        self,
        server: SMTP,
        session: Session,
        envelope: Envelope,
        address: str,
        rcpt_options: list[str],
    ) -> str:
        """Accept a live generated address (any case); refuse everything else with 550."""
        if not self.store.accepts(address):
            # The address is not echoed: it may hold bytes that cannot be encoded.
            return "550 5.1.1 Recipient address rejected: not a live generated address"
        envelope.rcpt_tos.append(address)
        envelope.rcpt_options.extend(rcpt_options)
        return "250 2.1.5 OK"

    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        """Store a copy for each accepted recipient, then answer 250."""
        raw = envelope.original_content or b""
        # aiosmtpd keeps the null reverse-path as "<>"; the API calls it "".
        mail_from = "" if envelope.mail_from == "<>" else str(envelope.mail_from)
        stored = self.store.deliver(mail_from, envelope.rcpt_tos, raw)
        if not stored:
            # Every recipient was deleted between RCPT and the end of DATA.
            return "554 5.1.1 No live recipients left: the inboxes were deleted"
        return f"250 2.0.0 OK: queued as {stored[0].id}"

    async def handle_exception(self, error: Exception) -> str:
        """Log an unexpected error and answer a temporary failure without internals."""
        log.error("error while handling an SMTP command", exc_info=error)
        return "451 4.3.0 Local error in processing, try again later"


def _accept_any_credentials(
    server: SMTP, session: Session, envelope: Envelope, mechanism: str, auth_data: Any
) -> AuthResult:
    return AuthResult(success=True, auth_data=auth_data)


class _QuietSession(Session):
    # aiosmtpd logs a deprecation warning whenever AUTH sets Session.login_data;
    # a plain attribute keeps every authenticated session from logging it.
    login_data: Any = None


class _TrackedSMTP(SMTP):
    """aiosmtpd's protocol, registering itself while its connection is open."""

    def __init__(self, handler: InboxHandler, sessions: set[SMTP], **options: Any) -> None:
        super().__init__(handler, **options)
        self._sessions = sessions

    def _create_session(self) -> Session:
        return _QuietSession(self.loop)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._sessions.add(self)
        super().connection_made(transport)

    def connection_lost(self, error: Exception | None) -> None:
        self._sessions.discard(self)
        super().connection_lost(error)


class SMTPService:
    """Serves a store over SMTP on a socket that the caller has bound and put in listening state.

    ``hostname`` is used in the greeting and the EHLO answer (aiosmtpd's default,
    :func:`socket.getfqdn`, can take seconds). EHLO advertises ``SIZE``,
    ``8BITMIME``, ``SMTPUTF8`` and ``AUTH LOGIN PLAIN``; sessions idle for
    ``timeout`` seconds are closed.
    """

    def __init__(
        self,
        store: Store,
        *,
        hostname: str,
        message_size_limit: int = DEFAULT_MESSAGE_SIZE_LIMIT,
        timeout: float = 300.0,
    ) -> None:
        self.handler = InboxHandler(store)
        self.hostname = hostname
        self.message_size_limit = message_size_limit
        self.timeout = timeout
        self._sessions: set[SMTP] = set()
        self._server: asyncio.Server | None = None

    async def start(self, sock: socket.socket) -> None:
        """Start accepting connections on ``sock`` in the running loop."""
        loop = asyncio.get_running_loop()

        def protocol() -> asyncio.Protocol:
            session: asyncio.Protocol = _TrackedSMTP(
                self.handler,
                self._sessions,
                hostname=self.hostname,
                data_size_limit=self.message_size_limit,
                enable_SMTPUTF8=True,
                auth_require_tls=False,
                authenticator=_accept_any_credentials,
                timeout=self.timeout,
                loop=loop,
            )
            return session

        self._server = await loop.create_server(protocol, sock=sock)

    async def stop(self) -> None:
        """Stop accepting, and close every open session, idle or mid-transaction."""
        if self._server is None:
            return
        self._server.close()
        for session in list(self._sessions):
            if session.transport is not None:
                session.transport.close()
        await self._server.wait_closed()
