"""The inbox server: the store, the SMTP listener, the HTTP app, in one background loop.

:class:`InboxServer` (:mod:`.inbox_server`) runs them; :mod:`.store` keeps the
inboxes, :mod:`.smtp` receives mail (aiosmtpd), :mod:`.app` serves ``/api`` and
the viewer (Starlette under uvicorn) from the answers of :mod:`.endpoints`, and
:mod:`.local` answers the in-process client from those same answers. It may
import :mod:`pytest_tempinbox.parsing`, never :mod:`pytest_tempinbox.client`.
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
