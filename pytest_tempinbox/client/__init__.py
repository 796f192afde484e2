"""The client: the HTTP API's client, the ``Inbox`` handle, and why a wait saw no mail.

:class:`TempInboxClient` (:mod:`.http`) speaks to any server of this package,
over HTTP (:mod:`.transports`) or, in the server's own process, through its
in-process transport; :class:`Inbox` (in :mod:`.http` too, imported from
:mod:`.inbox`) is one address and its mail. Each multi-step job is a flow of
calls (:mod:`.calls`) written once: the waits in :mod:`.flows`, and in
:mod:`.explain` where the mail went when a wait runs out. :mod:`.remote` finds
a running server by its API URL and downloads its CA. Imports go one way, from
:mod:`.calls` up to :mod:`.http`; none goes to :mod:`pytest_tempinbox.server`.
Importing this package is cheap: requests loads when an HTTP transport is made.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .http import TempInboxClient
    from .inbox import Inbox

__all__ = ["Inbox", "TempInboxClient"]


def __getattr__(name: str) -> Any:
    # PEP 562: requests loads when the client is first named.
    if name == "TempInboxClient":
        from .http import TempInboxClient

        return TempInboxClient
    if name == "Inbox":
        from .inbox import Inbox

        return Inbox
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
