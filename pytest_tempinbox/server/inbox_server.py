"""The server: the store, the SMTP listener and the HTTP API on one event loop in one thread.

:class:`InboxServer` binds both sockets itself (port 0 picks a free port, read
back from the bound socket), so a taken port fails in :meth:`InboxServer.start`
in the caller's thread, and ``start()`` returns only once both listeners accept
connections. uvicorn is imported and started on the API socket when the first
HTTP connection waits there: in-process use never pays for it. The module is
long because :class:`InboxServer` is public: its docstring documents every
keyword, and its many short properties are what tests and the plugin read.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import ssl
import threading
from collections.abc import Callable, Iterable, Mapping
from types import TracebackType
from typing import TYPE_CHECKING

from .._net import reachable_host
from ..config import DEFAULT_DOMAIN, DEFAULT_EVENT_LOOP, DEFAULT_HOST, DEFAULT_STORE, ServerConfig
from ..errors import ServerStartError, StoreUnavailable
from ..limits import (
    DEFAULT_DATA_LINE_LIMIT,
    DEFAULT_HEARTBEAT,
    DEFAULT_IDLE_TIMEOUT,
    DEFAULT_LISTEN_BACKLOG,
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_MAX_MESSAGES_PER_INBOX,
    DEFAULT_MAX_RECIPIENTS,
    DEFAULT_MAX_STORED_BYTES,
    DEFAULT_MAX_STREAMS,
    DEFAULT_MAX_STREAMS_PER_INBOX,
    DEFAULT_MESSAGE_SIZE_LIMIT,
)
from ..smtp_security import DEFAULT_SMTP_AUTH, DEFAULT_TLS
from ..values import provider_url
from .counters import ServerCounters
from .event_loops import loop_factory
from .http.listener import LazyHTTP
from .in_process import ASGIApp, LocalTransport
from .smtp.service import SMTPService
from .sockets import Refusals, http_refusal, listen, smtp_refusal
from .store.factory import open_store
from .store.protocol import InboxStore

if TYPE_CHECKING:
    from ..quotas import Quotas
    from ..rate_limits import RateLimits
    from ..tenants import Tenants
    from .certificates import CertificateFiles
    from .readers.service import ReaderService
    from .tls import CertificateAuthority
    from .webhooks.sender import Webhooks

__all__ = ["InboxServer"]

log = logging.getLogger(__name__)

_STOP_TIMEOUT = 10.0
_EXPIRY_INTERVAL = 1.0


def _url_host(host: str) -> str:
    host = reachable_host(host)
    return f"[{host}]" if ":" in host else host


class InboxServer:
    """A disposable inbox server: SMTP and the ``/api`` HTTP API, in a background thread.

    The API's port also serves the inbox viewer, a web page at :attr:`viewer_url`.

    Use it as a context manager, or call :meth:`start` and :meth:`stop`. Ports
    default to 0 (a free port each); read the real ones from :attr:`smtp_port`
    and :attr:`api_port` after start. ``domains`` are the domains generated
    addresses use (the first is the default); ``hostname`` names the server in
    the SMTP greeting (default: the first domain).

    The limits (docs/limits.md says what a client sees at each):
    ``message_size_limit`` bytes per message, ``max_recipients`` per message,
    ``max_connections`` SMTP sessions at once, ``smtp_timeout`` seconds of
    idleness per session, ``data_line_limit`` octets per line of message text,
    ``max_messages_per_inbox`` and ``max_stored_bytes`` (the oldest messages are
    evicted beyond them), ``inbox_ttl`` seconds of life per inbox (None:
    until deleted), ``max_streams`` event streams open at once
    (``max_streams_per_inbox`` on one inbox), and ``listen_backlog``
    connections each listener queues before accepting them. When bound to
    loopback, only requests whose Host header is
    the bound address, ``localhost``, ``127.0.0.1``, ``[::1]`` or one of
    ``allowed_hosts`` are answered.

    ``tls`` is ``off``, ``starttls``, ``required`` or ``implicit``; every mode but
    ``off`` needs the ``tls`` extra (trustme), and :meth:`start` makes a
    throwaway CA whose certificate is at :attr:`ca_path`. ``smtp_auth`` is
    ``any`` (any credentials), ``none`` (AUTH not offered) or ``USER:PASSWORD``
    (only those, and MAIL needs them). docs/tls.md says what a client sees in
    each mode. A bad ``tls`` or ``smtp_auth`` raises :class:`ValueError`.

    ``event_heartbeat`` is the seconds of silence after which an event stream
    (``GET /api/events/{email}``) sends a comment line, so that proxies keep
    it open; it must be above 0 (else :class:`ValueError`).

    ``store`` is where the inboxes live: ``memory`` (this process), or a
    ``redis://`` / ``rediss://`` URL for inboxes that several servers share
    (the ``redis`` extra; docs/deployment.md). :meth:`start` raises
    :class:`~pytest_tempinbox.errors.ServerStartError` when that Redis does not
    answer.

    ``dkim_keys`` maps DNS names to TXT records (``{"sel._domainkey.example.com":
    "v=DKIM1; k=rsa; p=..."}``): the public keys a message's DKIM signature is
    verified with, never looked up in real DNS (the message's ``dkim``).
    ``link_checks`` False makes ``GET .../link-check`` refuse (403): a server
    bound beyond loopback requests the links of the mail it is sent when asked.
    ``event_loop`` is ``auto`` (uvloop when installed: the ``uvloop`` extra),
    ``asyncio`` or ``uvloop``. ``provider_keys`` maps a provider's name to the
    one API key its endpoints accept (``{"sendgrid": "SG.test"}``); a provider
    without one accepts any key (see docs/providers.md). ``tenants``, a
    tenants file's path or a :class:`~pytest_tempinbox.tenants.Tenants`, makes
    every API route but the probes ask for a tenant's token, and each inbox
    its generator's own (docs/tenants.md); a bad file raises :class:`ValueError`.
    ``rate_limits`` (a :class:`~pytest_tempinbox.rate_limits.RateLimits`) limits
    requests per token and per client address, and SMTP connections per client
    and commands per connection; with tenants they hold by default
    (docs/tenants.md, "Rate limits").
    ``quotas`` (:class:`~pytest_tempinbox.quotas.Quotas`) are the server's
    quota values: each tenant's unless its file says otherwise, and without
    tenants everyone's (docs/tenants.md, "Quotas").
    ``transcripts`` keeps each message's SMTP conversation, read with
    ``GET /api/messages/{email}/{id}/transcript`` (docs/transcripts.md).
    ``compress_read_messages`` keeps a message's raw bytes compressed (zlib)
    from its first read on, with the memory store: a long-running server's
    memory for a little of each first read's time (off here, on in the
    standalone command; docs/limits.md, "Memory under load").

    ``imap_port`` and ``pop3_port`` start IMAP and POP3 listeners (0: a free
    port each; None: none), with the SMTP side's TLS mode and certificate, its
    idle timeout and connection limit; their user is an inbox's address, their
    password the one ``POST /api/generate`` hands out (docs/readers.md).

    ``mcp`` serves the MCP endpoint for agents at ``/mcp`` on the API's port
    (the ``mcp`` extra; docs/mcp.md): :meth:`start` raises
    :class:`~pytest_tempinbox.errors.ServerStartError` without it.

    ``webhooks`` are ``http://`` or ``https://`` URLs that each delivery and
    inbox deletion is POSTed to as JSON, off the SMTP path, signed with
    ``webhook_secret`` when given (docs/webhooks.md); a URL of another
    scheme raises :class:`ValueError`.

    ``tls_cert`` and ``tls_key`` are PEM files of the SMTP listener's certificate
    (its chain after it), used instead of a throwaway CA (``ca_path`` is then
    None) in the ``tls`` mode given, which must not be ``off``. ``api_tls_cert``
    and ``api_tls_key`` make the API and the viewer HTTPS (:attr:`api_url` is
    ``https://``). :meth:`start` reads them, raising
    :class:`~pytest_tempinbox.errors.ServerStartError` when they cannot be
    used; :meth:`reload_certificates` reads them again (docs/tls.md).

    The keywords make a :class:`~pytest_tempinbox.config.ServerConfig`, kept as
    ``config`` (with ``hostname`` filled in); :meth:`from_config` starts from one.
    """

    def __init__(
        self,
        *,
        host: str = DEFAULT_HOST,
        smtp_port: int = 0,
        api_port: int = 0,
        domains: Iterable[str] = (DEFAULT_DOMAIN,),
        hostname: str | None = None,
        message_size_limit: int = DEFAULT_MESSAGE_SIZE_LIMIT,
        max_recipients: int = DEFAULT_MAX_RECIPIENTS,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        smtp_timeout: float = DEFAULT_IDLE_TIMEOUT,
        data_line_limit: int = DEFAULT_DATA_LINE_LIMIT,
        max_messages_per_inbox: int = DEFAULT_MAX_MESSAGES_PER_INBOX,
        max_stored_bytes: int = DEFAULT_MAX_STORED_BYTES,
        inbox_ttl: float | None = None,
        max_streams: int = DEFAULT_MAX_STREAMS,
        max_streams_per_inbox: int = DEFAULT_MAX_STREAMS_PER_INBOX,
        listen_backlog: int = DEFAULT_LISTEN_BACKLOG,
        allowed_hosts: Iterable[str] = (),
        tls: str = DEFAULT_TLS,
        smtp_auth: str = DEFAULT_SMTP_AUTH,
        event_heartbeat: float = DEFAULT_HEARTBEAT,
        store: str = DEFAULT_STORE,
        dkim_keys: Mapping[str, str] | None = None,
        link_checks: bool = True,
        event_loop: str = DEFAULT_EVENT_LOOP,
        provider_keys: Mapping[str, str] | None = None,
        tls_cert: str | None = None,
        tls_key: str | None = None,
        api_tls_cert: str | None = None,
        api_tls_key: str | None = None,
        tenants: str | Tenants | None = None,
        rate_limits: RateLimits | None = None,
        quotas: Quotas | None = None,
        transcripts: bool = True,
        compress_read_messages: bool = False,
        imap_port: int | None = None,
        pop3_port: int | None = None,
        mcp: bool = False,
        webhooks: Iterable[str] = (),
        webhook_secret: str | None = None,
    ) -> None:
        self._configure(
            ServerConfig(
                host=host,
                smtp_port=smtp_port,
                api_port=api_port,
                domains=domains,
                hostname=hostname,
                message_size_limit=message_size_limit,
                max_recipients=max_recipients,
                max_connections=max_connections,
                smtp_timeout=smtp_timeout,
                data_line_limit=data_line_limit,
                max_messages_per_inbox=max_messages_per_inbox,
                max_stored_bytes=max_stored_bytes,
                inbox_ttl=inbox_ttl,
                max_streams=max_streams,
                max_streams_per_inbox=max_streams_per_inbox,
                listen_backlog=listen_backlog,
                allowed_hosts=allowed_hosts,
                tls=tls,
                smtp_auth=smtp_auth,
                event_heartbeat=event_heartbeat,
                store=store,
                dkim_keys=dkim_keys or {},
                link_checks=link_checks,
                event_loop=event_loop,
                provider_keys=provider_keys or {},
                tls_cert=tls_cert,
                tls_key=tls_key,
                api_tls_cert=api_tls_cert,
                api_tls_key=api_tls_key,
                tenants=tenants,
                rate_limits=rate_limits,
                quotas=quotas,
                transcripts=transcripts,
                compress_read_messages=compress_read_messages,
                imap_port=imap_port,
                pop3_port=pop3_port,
                mcp=mcp,
                webhooks=webhooks,
                webhook_secret=webhook_secret,
            )
        )

    @classmethod
    def from_config(cls, config: ServerConfig) -> InboxServer:
        """A server started with ``config``, as the command line and the plugin build it."""
        server = cls.__new__(cls)
        server._configure(config)
        return server

    def _configure(self, config: ServerConfig) -> None:
        self.store: InboxStore = open_store(config)
        hostname = config.hostname or self.store.domains[0]
        self.config = config if config.hostname else config.replace(hostname=hostname)
        self._authority: CertificateAuthority | None = None
        self._smtp_files: CertificateFiles | None = None
        self._api_files: CertificateFiles | None = None
        self._requested_ports = (config.smtp_port, config.api_port)
        self._ports = (0, 0)
        self._readers: dict[str, socket.socket] = {}  # the reader listeners' sockets, by protocol
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._app: ASGIApp | None = None
        self._app_lock = threading.Lock()
        self.counters = ServerCounters()  # what GET /metrics reports
        self.refusals = Refusals()
        """The connections refused at the open-file limit, and the descriptor kept spare for it."""
        self.webhooks: Webhooks | None = None
        """The webhooks' queue and counters (docs/webhooks.md); None without a webhook."""
        if config.webhooks or (config.tenants is not None and config.tenants.webhooks):
            self._announce_to_webhooks()

    def _announce_to_webhooks(self) -> None:
        # Only a server with a webhook imports them, and wraps its store.
        from .webhooks.sender import Webhooks
        from .webhooks.store import announcing

        self.webhooks = Webhooks.from_config(self.config, lambda: self.api_url + "/messages")
        self.store = announcing(self.store, self.webhooks)
        self.counters.webhooks = self.webhooks.metrics

    @property
    def host(self) -> str:
        """The address both listeners bind (a wildcard such as ``0.0.0.0`` included)."""
        return self.config.host

    @property
    def hostname(self) -> str:
        """The server's name in the SMTP greeting (by default the first domain)."""
        return self.config.hostname or self.store.domains[0]

    @property
    def tls(self) -> str:
        """The SMTP listener's TLS mode: ``off``, ``starttls``, ``required`` or ``implicit``."""
        return self.config.tls

    @property
    def smtp_host(self) -> str:
        """The host to send mail to (a wildcard bind is reached through loopback)."""
        return reachable_host(self.host)

    @property
    def smtp_port(self) -> int:
        """The SMTP listener's port (after :meth:`start`)."""
        return self._ports[0]

    @property
    def api_port(self) -> int:
        """The HTTP API's port (after :meth:`start`)."""
        return self._ports[1]

    @property
    def imap_port(self) -> int | None:
        """The IMAP listener's port (after :meth:`start`); None without one."""
        return self._reader_port("IMAP", self.config.imap_port)

    @property
    def pop3_port(self) -> int | None:
        """The POP3 listener's port (after :meth:`start`); None without one."""
        return self._reader_port("POP3", self.config.pop3_port)

    def _reader_port(self, name: str, requested: int | None) -> int | None:
        sock = self._readers.get(name)
        if sock is None:
            return None if requested is None else 0
        port: int = sock.getsockname()[1]
        return port

    @property
    def smtp_url(self) -> str:
        """``smtp://HOST:PORT`` of the SMTP listener (``smtps://`` with implicit TLS)."""
        scheme = "smtps" if self.tls == "implicit" else "smtp"
        return f"{scheme}://{_url_host(self.host)}:{self.smtp_port}"

    @property
    def smtp_auth(self) -> str:
        """The AUTH mode: ``any``, ``none`` or ``password`` (never the password itself)."""
        return self.config.smtp_auth.mode

    @property
    def ca_path(self) -> str | None:
        """The PEM file of the CA that issued the SMTP certificate; None when TLS is off.

        Made by :meth:`start` and removed by :meth:`stop`. Point clients at it,
        or the ``SSL_CERT_FILE`` environment variable for code that uses
        :func:`ssl.create_default_context`.
        """
        return None if self._authority is None else self._authority.ca_path

    def ssl_context(self) -> ssl.SSLContext:
        """A new client-side context that trusts the server's certificate.

        For ``smtplib.SMTP.starttls(context=...)``, ``smtplib.SMTP_SSL(context=...)``
        or aiosmtplib's ``tls_context``. With ``tls_cert``, it trusts the
        system's CAs (those a certificate from an ACME client chains to).
        Raises :class:`RuntimeError` when TLS is off or the server has not started.
        """
        if self._smtp_files is not None:
            return ssl.create_default_context()  # a certificate given: the system's CAs
        if self._authority is None:
            raise RuntimeError(
                f"no TLS certificate: TLS is {self.tls}, or the server is not started"
            )
        from .tls import client_context

        return client_context(self._authority.ca_path)

    @property
    def api_url(self) -> str:
        """The API's base URL, ending in ``/api``."""
        return f"{self._api_scheme}://{_url_host(self.host)}:{self.api_port}/api"

    def provider_url(self, name: str) -> str:
        """The base URL to give email provider ``name``'s SDK (``"sendgrid"``, ``"resend"``).

        The provider's own paths are served under it (see docs/providers.md):
        SendGrid's ``host``, Resend's ``api_url``. An unknown name is a
        :class:`ValueError`.
        """
        return provider_url(self.api_url, name)

    @property
    def viewer_url(self) -> str:
        """The inbox viewer's page, at the root of the API's port (see docs/viewer.md)."""
        return f"{self._api_scheme}://{_url_host(self.host)}:{self.api_port}/"

    @property
    def _api_scheme(self) -> str:
        return "http" if self.config.api_tls_cert is None else "https"

    def reload_certificates(self) -> bool:
        """Read the ``tls_cert`` and ``api_tls_cert`` files again; False when none was given.

        New handshakes present the new certificates; connections already open
        keep theirs. Raises :class:`~pytest_tempinbox.errors.ServerStartError`
        when the new files cannot be used: the certificates in use are kept.
        The standalone server calls it on SIGHUP.
        """
        files = [found for found in (self._smtp_files, self._api_files) if found is not None]
        for found in files:
            found.reload()
        return bool(files)

    @property
    def running(self) -> bool:
        """Tell whether the server thread is serving."""
        return self._thread is not None and self._thread.is_alive()

    @property
    def limits(self) -> dict[str, float | None]:
        """Every limit, by the names ``GET /api/info`` reports them under."""
        return self.config.limits()

    def local_transport(self) -> LocalTransport:
        """A transport for :class:`~pytest_tempinbox.TempInboxClient` that skips the network.

        Its answers are exactly those of HTTP (see :mod:`pytest_tempinbox.server.in_process`).
        Only for use in this process, while the server runs.
        """
        if self._loop is None or not self.running:
            raise RuntimeError("the server is not running")
        gated = self.config.tenants is not None
        return LocalTransport(
            self.store, self.app, self._loop, self.api_url, self.counters, gated=gated
        )

    def app(self) -> ASGIApp:
        """The Starlette app of the API, built (and Starlette imported) on first call."""
        with self._app_lock:
            if self._app is None:
                from .api.settings import ApiSettings
                from .http.app import create_app

                ca_pem = None if self._authority is None else self._authority.ca_pem
                settings = ApiSettings(self.config, self.smtp_port, ca_pem, self.counters)
                self._app = create_app(self.store, settings)
            return self._app

    def start(self) -> None:
        """Bind both ports and start serving; return once both accept connections.

        Raises :class:`~pytest_tempinbox.errors.ServerStartError` when a port is
        taken or the host cannot be bound, TLS is on and trustme is missing,
        ``event_loop`` is ``uvloop`` and uvloop is missing, or
        the store does not answer (Redis unreachable), or ``mcp`` is on and the
        MCP SDK is missing.
        """
        if self._thread is not None:
            raise RuntimeError("this server was already started")
        if self.config.mcp:
            import importlib.util

            if importlib.util.find_spec("mcp") is None:
                needed = "pip install 'pytest-tempinbox[mcp]'"
                raise ServerStartError(f"the MCP endpoint (--mcp) needs the MCP SDK: {needed}")
        new_loop = loop_factory(self.config.event_loop)
        try:
            self.store.stats()  # the store answers: a Redis store reaches Redis
        except StoreUnavailable as exc:
            raise ServerStartError(f"the store does not answer: {exc}") from None
        self._read_certificates()
        if self.tls != "off" and self._smtp_files is None:
            from .tls import CertificateAuthority, certificate_names

            names = [self.hostname, *self.store.domains, *self.config.allowed_hosts]
            self._authority = CertificateAuthority(certificate_names(self.host, names))
        try:
            smtp_socket, api_socket = self._bind()
            self._bind_readers(smtp_socket, api_socket)
        except BaseException:
            self._discard_authority()
            raise
        self._ports = (smtp_socket.getsockname()[1], api_socket.getsockname()[1])
        if self._readers:  # the bound ports, as GET /api/info reports them
            self.config = self.config.replace(imap_port=self.imap_port, pop3_port=self.pop3_port)
        self._thread = threading.Thread(
            target=self._run,
            args=(new_loop, smtp_socket, api_socket),
            name="tempinbox-server",
            daemon=True,
        )
        self._thread.start()
        self._ready.wait()
        if self._error is not None:
            self._thread.join()
            self._discard_authority()
            raise ServerStartError(f"the server failed to start: {self._error}") from self._error

    def stop(self) -> None:
        """Stop serving, close every connection and both ports, and end the thread.

        Pending long-polls answer at once; safe to call more than once.
        """
        thread, loop, stopping = self._thread, self._loop, self._stopping
        if thread is None or not thread.is_alive() or loop is None or stopping is None:
            return
        loop.call_soon_threadsafe(stopping.set)
        thread.join(_STOP_TIMEOUT)
        if thread.is_alive():
            log.warning("the inbox server thread did not stop within %s s", _STOP_TIMEOUT)
        if self._authority is not None:
            self._authority.close()  # the CA file goes; ca_path still names it

    def _bind(self) -> tuple[socket.socket, socket.socket]:
        smtp_port, api_port = self._requested_ports
        backlog, refusals = self.config.listen_backlog, self.refusals
        smtp_reply = smtp_refusal(self.hostname, self.tls)
        refusals.open()
        smtp_socket = listen(self.host, smtp_port, "SMTP", backlog, refusals, smtp_reply)
        try:
            return smtp_socket, listen(
                self.host, api_port, "HTTP", backlog, refusals, http_refusal()
            )
        except BaseException:
            smtp_socket.close()
            refusals.close()
            raise

    def _bind_readers(self, *bound: socket.socket) -> None:
        # The reader listeners' sockets, bound like SMTP's; none without their ports.
        wanted = {"IMAP": self.config.imap_port, "POP3": self.config.pop3_port}
        try:
            for name, port in wanted.items():
                if port is not None:
                    self._readers[name] = listen(
                        self.host, port, name, self.config.listen_backlog, self.refusals
                    )
        except BaseException:
            for sock in [*bound, *self._readers.values()]:
                sock.close()
            self._readers.clear()
            self.refusals.close()
            raise

    def _read_certificates(self) -> None:
        # Before anything binds: a file that cannot be used is one error at start.
        config = self.config
        if config.tls_cert is None and config.api_tls_cert is None:
            return  # nothing to read: the certificates' module stays unloaded
        from .certificates import read_certificates

        self._smtp_files, self._api_files = read_certificates(self.config)

    def _discard_authority(self) -> None:
        # A server that failed to start has no certificate to offer.
        if self._authority is not None:
            self._authority.close()
            self._authority = None

    def __enter__(self) -> InboxServer:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"<InboxServer {self.smtp_url} {self.api_url}>"

    def _run(
        self,
        new_loop: Callable[[], asyncio.AbstractEventLoop],
        smtp_socket: socket.socket,
        api_socket: socket.socket,
    ) -> None:
        loop = new_loop()
        self._loop = loop
        try:
            loop.run_until_complete(self._serve(smtp_socket, api_socket))
        except BaseException as exc:
            log.exception("the inbox server stopped on an error")
            self._error = exc
        finally:
            self._ready.set()
            smtp_socket.close()
            api_socket.close()
            for sock in self._readers.values():
                sock.close()
            self.refusals.close()
            _cancel_remaining_tasks(loop)
            loop.run_until_complete(loop.shutdown_default_executor())
            loop.close()

    async def _serve(self, smtp_socket: socket.socket, api_socket: socket.socket) -> None:
        self._stopping = asyncio.Event()
        try:
            await self.store.start()
        except StoreUnavailable as exc:  # it recovers by itself; start() checked it answers
            log.warning("the store is not ready: %s", exc)
        if self.webhooks is not None:
            self.webhooks.start(self.store)
        tls_context = None if self._authority is None else self._authority.server_context()
        if self._smtp_files is not None:
            tls_context = self._smtp_files.context
        smtp = SMTPService(
            self.store, self.config, tls_context, self.counters, refusals=self.refusals
        )
        await smtp.start(smtp_socket)
        readers: list[ReaderService] = []
        if self._readers:  # their modules load only when a reader's port is given
            from .readers.listeners import reader_context, start_readers

            context = reader_context(self.store, self.config, tls_context, self.counters)
            readers = await start_readers(self._readers, context, self.config.listen_backlog)
        http = LazyHTTP(
            self.app,
            api_socket,
            self._stopping,
            self.config.listen_backlog,
            self.refusals,
            self._api_files,
        )
        http.arm()
        self._ready.set()

        # Expired inboxes are also dropped when touched; this frees the memory of
        # those nobody touches, and ends their pending waits on time.
        while not self._stopping.is_set():
            try:
                self.store.expire()
            except StoreUnavailable as exc:  # the store is back later; serving goes on
                self.counters.store_errors += 1
                log.warning("the store does not answer: %s", exc)
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), _EXPIRY_INTERVAL)

        # Wake pending long-polls first, so that uvicorn's graceful shutdown sees
        # their answers leave instead of waiting for them.
        self.store.close()
        await asyncio.gather(smtp.stop(), http.stop(), *(each.stop() for each in readers))
        if self.webhooks is not None:
            await self.webhooks.stop()


def _cancel_remaining_tasks(loop: asyncio.AbstractEventLoop) -> None:
    tasks = asyncio.all_tasks(loop)
    for task in tasks:
        task.cancel()
    if tasks:
        loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
    loop.run_until_complete(loop.shutdown_asyncgens())
