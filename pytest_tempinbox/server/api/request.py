"""One request to the API, as every endpoint of the route table takes it.

The HTTP app (:mod:`pytest_tempinbox.server.http.app`) makes one from each HTTP
request, and the in-process transport (:mod:`pytest_tempinbox.server.in_process`)
from each call of the client; an endpoint reads what it needs of it and
answers with a :class:`~.endpoints.Reply`. No web framework is imported here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..store.protocol import InboxStore

if TYPE_CHECKING:
    from .settings import ApiSettings

__all__ = ["Request"]


# A dataclass: the store it names already imports their module (through values.py),
# so creating it costs about half a millisecond of this module's import, no more.
@dataclass(slots=True, eq=False, repr=False)
class Request:
    """What an endpoint is given: the store, the request's parts, the server's settings.

    ``args`` are the path's parameters (strings, as the path gives them),
    ``query`` the query's and ``headers`` the request's headers (names in lower
    case); ``body`` is the request body for ``POST`` and empty otherwise.
    ``base_url`` is the server's root URL as the request names it, spelled out
    only for a route that ``uses_base_url``. ``settings`` are the server's
    (:class:`~.settings.ApiSettings`): None where the caller has none to give,
    for the routes that do not read them (those answered in the caller's thread).
    """

    store: InboxStore
    args: Mapping[str, Any]
    query: Mapping[str, str]
    body: bytes = b""
    base_url: str = ""
    settings: ApiSettings | None = None
    headers: Mapping[str, str] = field(default_factory=dict)

    def server(self) -> ApiSettings:
        """The server's settings, for a route that needs them."""
        assert self.settings is not None, "a route that reads the settings is served by the app"
        return self.settings

    def __repr__(self) -> str:
        return f"Request(args={dict(self.args)!r}, query={dict(self.query)!r})"
