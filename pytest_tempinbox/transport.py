"""How the client's requests reach the API: the answer type, and the in-process transport.

The client speaks to the API through a :class:`Transport`. Over the network that
is HTTP (in :mod:`pytest_tempinbox.client`). When the server runs in the same
process, :class:`LocalTransport` hands each request to the very same ASGI app
on the server's event loop, skipping sockets, HTTP parsing and requests, so the
answers are exactly the ones HTTP would give, only sooner.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import unquote, urlencode, urlsplit

from .errors import ServerUnavailable

__all__ = ["Answer", "LocalTransport", "Transport"]

Scope = MutableMapping[str, Any]
ASGIMessage = MutableMapping[str, Any]
ASGIApp = Callable[
    [Scope, Callable[[], Awaitable[ASGIMessage]], Callable[[ASGIMessage], Awaitable[None]]],
    Awaitable[None],
]


@dataclass(frozen=True)
class Answer:
    """An API answer: its status, content type and body."""

    status: int
    content_type: str
    content: bytes

    def json(self) -> Any:
        """The body, decoded as JSON."""
        return json.loads(self.content)


class Transport(Protocol):
    """Carries one request to the API (paths relative to its ``/api`` base) and back.

    ``request_async`` must not block the caller's event loop. ``cancellable``
    tells whether cancelling it also ends the request at once; when it does not,
    callers keep their long-polls short so that a cancelled one ends soon.
    """

    cancellable: bool

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: bytes | None = None,
        timeout: float,
    ) -> Answer:
        """Send the request; raise :class:`ServerUnavailable` when there is no answer."""

    async def request_async(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: bytes | None = None,
        timeout: float,
    ) -> Answer:
        """Like :meth:`request`, awaitable without blocking the event loop."""

    def close(self) -> None:
        """Release what the transport holds."""


class LocalTransport:
    """Calls the server's ASGI app on the server's own event loop, from another thread.

    ``api_url`` is the server's API URL: its host names the server in the
    ``Host`` header (so absolute URLs in answers match HTTP's) and its path is the
    prefix of every request.
    """

    cancellable = True

    def __init__(self, app: ASGIApp, loop: asyncio.AbstractEventLoop, api_url: str) -> None:
        self.app = app
        self.loop = loop
        url = urlsplit(api_url)
        self._base_path = url.path.rstrip("/")
        self._host = url.netloc.encode("latin-1")
        self._server = (url.hostname or "127.0.0.1", url.port or 80)

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: bytes | None = None,
        timeout: float,
    ) -> Answer:
        """Run the request through the app; raise :class:`ServerUnavailable` if it cannot."""
        future = self._submit(method, path, params, body)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise ServerUnavailable(
                f"{method} {path} failed: no answer within {timeout:g} s"
            ) from None
        except concurrent.futures.CancelledError:
            raise ServerUnavailable(f"{method} {path} failed: the server stopped") from None

    async def request_async(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: bytes | None = None,
        timeout: float,
    ) -> Answer:
        """Run the request on the server's loop while the caller's loop goes on.

        Cancelling the caller cancels the request on the server's loop too.
        """
        future = asyncio.wrap_future(self._submit(method, path, params, body))
        try:
            return await asyncio.wait_for(future, timeout)
        except asyncio.TimeoutError:
            raise ServerUnavailable(
                f"{method} {path} failed: no answer within {timeout:g} s"
            ) from None

    def _submit(
        self,
        method: str,
        path: str,
        params: Mapping[str, str] | None,
        body: bytes | None,
    ) -> concurrent.futures.Future[Answer]:
        raw_path = self._base_path + path
        headers = [(b"host", self._host), (b"content-length", str(len(body or b"")).encode())]
        if body is not None:
            headers.append((b"content-type", b"application/json"))
        scope: Scope = {
            "type": "http",
            "asgi": {"version": "3.0", "spec_version": "2.3"},
            "http_version": "1.1",
            "method": method,
            "scheme": "http",
            "path": unquote(raw_path),
            "raw_path": raw_path.encode("latin-1"),
            "query_string": urlencode(params or {}).encode("latin-1"),
            "root_path": "",
            "headers": headers,
            "server": self._server,
            "client": ("127.0.0.1", 0),
        }
        call = self._call(scope, body or b"")
        try:
            return asyncio.run_coroutine_threadsafe(call, self.loop)
        except RuntimeError as exc:  # the loop is closed: the server stopped
            call.close()
            raise ServerUnavailable(f"{method} {raw_path} failed: the server is stopped") from exc

    def close(self) -> None:
        """Nothing to release: the transport holds no connection."""

    async def _call(self, scope: Scope, body: bytes) -> Answer:
        sent_body = False
        disconnected = asyncio.get_running_loop().create_future()
        status = 500
        content_type = ""
        chunks: list[bytes] = []

        async def receive() -> ASGIMessage:
            nonlocal sent_body
            if not sent_body:
                sent_body = True
                return {"type": "http.request", "body": body, "more_body": False}
            await disconnected  # as a client that stays connected until the answer ends
            return {"type": "http.disconnect"}

        async def send(message: ASGIMessage) -> None:
            nonlocal status, content_type
            if message["type"] == "http.response.start":
                status = message["status"]
                for name, value in message.get("headers", []):
                    if name.lower() == b"content-type":
                        content_type = value.decode("latin-1")
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))

        try:
            await self.app(scope, receive, send)
        except Exception:
            # The app has already answered 500 (and logged it), as uvicorn would.
            pass
        finally:
            disconnected.cancel()
        return Answer(status, content_type.split(";")[0].strip(), b"".join(chunks))
