"""The server's reader listeners: which protocols there are, and starting them on bound sockets.

:class:`~pytest_tempinbox.server.inbox_server.InboxServer` binds a socket per
port given (``imap_port``, ``pop3_port``) in the caller's thread, as it binds
SMTP's, then awaits :func:`start_readers` on its loop; its handlers come from
the protocol's module (``imap``, ``pop3`` of this package), imported here only.
"""

from __future__ import annotations

import importlib
import socket
import ssl

from ...config import ServerConfig
from ...errors import ServerStartError
from ..counters import ServerCounters
from ..store.protocol import InboxStore
from .changes import InboxChanges
from .context import ReaderContext
from .counters import ReaderCounters
from .passwords import passwords_of
from .service import ReaderService

__all__ = ["PROTOCOLS", "reader_context", "start_readers"]

PROTOCOLS = {"IMAP": "imap", "POP3": "pop3"}
"""Each reader protocol's name (as in logs and errors) and its module in this package."""


def reader_context(
    store: InboxStore,
    config: ServerConfig,
    tls_context: ssl.SSLContext | None,
    counters: ServerCounters,
) -> ReaderContext:
    """The context the server's reader sessions share: its store, TLS, limits and counters."""
    if counters.readers is None:
        counters.readers = ReaderCounters()
    changes = InboxChanges()
    store.on_messages_deleted(changes.deleted)
    return ReaderContext(
        store=store,
        hostname=config.hostname or store.domains[0],
        passwords=passwords_of(store),
        tls_context=tls_context,
        implicit_tls=config.tls == "implicit",
        counters=counters,
        tls=config.tls,
        idle_timeout=config.smtp_timeout,
        max_connections=config.max_connections,
        tally=counters.readers,
        changes=changes,
    )


async def start_readers(
    sockets: dict[str, socket.socket], context: ReaderContext, backlog: int
) -> list[ReaderService]:
    """Serve each protocol named in ``sockets`` (``"IMAP"``, ``"POP3"``) on its socket.

    Raises :class:`~pytest_tempinbox.errors.ServerStartError` when a protocol
    is not part of this installation.
    """
    services = []
    for name, sock in sockets.items():
        try:
            module = importlib.import_module(f"{__package__}.{PROTOCOLS[name]}")
        except ImportError as exc:
            raise ServerStartError(f"no {name} server in this installation: {exc}") from exc
        service = ReaderService(
            sock, module.handle, context, name=name, busy=module.BUSY, backlog=backlog
        )
        await service.start()
        services.append(service)
    return services
