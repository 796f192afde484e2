"""The shortest way through the app for ``GET /api/messages/{email}``: the long-poll's.

A shared server holds a pending long-poll for every test of every CI job that
waits for mail, and each holds the coroutines of the layers it went through
while it waits. Starlette's exception middleware and router hold about 2.7 KiB
of them per request; :class:`MessagesLane`, the app's innermost middleware,
sends this one route (``GET`` and ``HEAD``) straight to its handler instead,
with the path argument Starlette's router would give it, and answers the
package's errors with the handler the app registers for them. Anything else
raised goes on to Starlette's server-error middleware, as from the router.
Every other request passes on untouched.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from ...errors import TempInboxError

__all__ = ["MessagesLane"]


class MessagesLane:
    """Send ``GET``/``HEAD`` of ``path`` to ``route``; everything else to ``app``.

    ``path`` is the route's template (``/api/messages/{email}``), matched as
    Starlette matches a ``str`` parameter (no slash); ``route`` is the ASGI
    app the route table's entry is served by, and ``on_error`` the app's
    handler for :class:`~pytest_tempinbox.errors.TempInboxError`.
    """

    def __init__(
        self,
        app: ASGIApp,
        path: str,
        route: ASGIApp,
        on_error: Callable[[Request, Exception], Awaitable[Response]],
    ) -> None:
        self.app = app
        head, _, tail = path.partition("{email}")
        self.pattern = re.compile(re.escape(head) + "(?P<email>[^/]+)" + re.escape(tail))
        self.route = route
        self.on_error = on_error

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve the messages route in place, or pass the request on."""
        if scope["type"] == "http" and scope["method"] in ("GET", "HEAD"):
            found = self.pattern.fullmatch(scope["path"])
            if found is not None:
                scope["path_params"] = {"email": found["email"]}
                try:
                    await self.route(scope, receive, send)
                except TempInboxError as error:
                    response = await self.on_error(Request(scope, receive, send), error)
                    await response(scope, receive, send)
                return
        await self.app(scope, receive, send)
