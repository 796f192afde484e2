"""The inbox server: the store, the SMTP listener, the HTTP app, in one background loop.

:class:`InboxServer` (:mod:`.inbox_server`) runs them from one
:class:`~pytest_tempinbox.config.ServerConfig`, on sockets it binds itself
(:mod:`.sockets`), in four wings, each a package with one job:
:mod:`.store` keeps the inboxes (its protocol, the memory store, the Redis
store); :mod:`.smtp` receives mail (aiosmtpd, whose private parts only
:mod:`.smtp._aiosmtpd` touches); :mod:`.api` computes every answer of ``/api``
from the one route table, framework-free; :mod:`.http` serves them with
Starlette under uvicorn, and :mod:`.in_process` answers the in-process client
with the same answers. Beside them: :mod:`.tls`, :mod:`.viewer`,
:mod:`.event_loops` and :mod:`.counters`. It may import
:mod:`pytest_tempinbox.parsing`, never :mod:`pytest_tempinbox.client`.
Importing this package is cheap: the heavy libraries load with
:mod:`.inbox_server`, when :class:`InboxServer` is first named.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .inbox_server import InboxServer

__all__ = ["InboxServer"]


def __getattr__(name: str) -> Any:
    # PEP 562: aiosmtpd, Starlette and uvicorn load when the server is first named.
    if name == "InboxServer":
        from .inbox_server import InboxServer

        return InboxServer
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
