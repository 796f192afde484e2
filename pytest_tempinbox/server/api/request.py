"""One request to the API, as every endpoint of the route table takes it.

The HTTP app (:mod:`pytest_tempinbox.server.http.app`) makes one from each HTTP
request, and the in-process transport (:mod:`pytest_tempinbox.server.in_process`)
from each call of the client; an endpoint reads what it needs of it and
answers with a :class:`~.endpoints.Reply`. No web framework is imported here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..store.protocol import InboxStore

if TYPE_CHECKING:
    from .settings import ApiSettings

__all__ = ["Request"]


# A plain class, not a dataclass: making a dataclass costs about a millisecond of import
# (its methods are compiled from source), and this one is made at every server's start.
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

    __slots__ = ("args", "base_url", "body", "headers", "query", "settings", "store", "tenant")

    def __init__(
        self,
        store: InboxStore,
        args: Mapping[str, Any],
        query: Mapping[str, str],
        body: bytes = b"",
        base_url: str = "",
        settings: ApiSettings | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self.store, self.args, self.query, self.body = store, args, query, body
        self.base_url, self.settings = base_url, settings
        self.headers: Mapping[str, str] = {} if headers is None else headers
        self.tenant: str | None = None

    def server(self) -> ApiSettings:
        """The server's settings, for a route that needs them."""
        assert self.settings is not None, "a route that reads the settings is served by the app"
        return self.settings

    def __repr__(self) -> str:
        return f"Request(args={dict(self.args)!r}, query={dict(self.query)!r})"
