"""The in-process transport: the client's requests answered without sockets or HTTP.

When the server runs in the test's own process, :class:`LocalTransport` answers
the calls a test makes all the time (generate, read the messages, delete), and
the refusals a failing wait asks for, by finding the request's route in the
API's route table (:mod:`pytest_tempinbox.server.api.routes`) and running its
direct answer in the caller's thread, which is safe because the store takes a
lock. A read that must wait hops to the server's loop to long-poll there with
the route's endpoint. Every other request goes through the very same ASGI app
on the server's loop (imported only then). So the answers are byte for byte
those of HTTP, only sooner.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
from collections.abc import Awaitable, Callable, Coroutine, Mapping, MutableMapping
from typing import Any
from urllib.parse import unquote, urlencode, urlsplit

from ..errors import INTERNAL_ERROR, ServerUnavailable, TempInboxError
from ..transport import Answer, Body, Params
from .api import endpoints
from .api.endpoints import MAX_TARGET_BYTES, Reply
from .api.request import Request
from .api.routes import Endpoint, match
from .counters import ServerCounters
from .store.protocol import InboxStore

__all__ = ["ASGIApp", "LocalTransport"]

log = logging.getLogger(__name__)

Scope = MutableMapping[str, Any]
ASGIMessage = MutableMapping[str, Any]
ASGIApp = Callable[
    [Scope, Callable[[], Awaitable[ASGIMessage]], Callable[[ASGIMessage], Awaitable[None]]],
    Awaitable[None],
]


class LocalTransport:
    """Answers the client in-process, from another thread than the server's loop.

    It is both a blocking and an awaited transport (see :mod:`pytest_tempinbox.transport`):
    awaited, it needs no worker thread, and cancelling the caller cancels the request.

    ``store`` and ``loop`` are the server's; ``app`` returns its ASGI app (built
    on first need). ``api_url`` is the server's API URL: its host names the
    server in the ``Host`` header (so absolute URLs in answers match HTTP's) and
    its path is the prefix of every request. A read of messages that waits is
    counted in ``counters.long_polls`` while it waits, as over HTTP. ``gated``
    (a server with tenants) sends every request through the app, whose guard
    asks for a token: none is sent, so only the open routes answer.
    """

    in_process = True
    """The server is in this process: only this process sends it mail (see the client's explain)."""

    def __init__(
        self,
        store: InboxStore,
        app: Callable[[], ASGIApp],
        loop: asyncio.AbstractEventLoop,
        api_url: str,
        counters: ServerCounters | None = None,
        *,
        gated: bool = False,
    ) -> None:
        self.store = store
        self._gated = gated
        self.app = app
        self.loop = loop
        self.counters = ServerCounters() if counters is None else counters
        url = urlsplit(api_url)
        self._base_path = url.path.rstrip("/")
        self._base_url = f"http://{url.netloc}/"
        self._host = url.netloc.encode("latin-1")
        self._server = (url.hostname or "127.0.0.1", url.port or 80)

    def request(
        self, method: str, path: str, *, params: Params = None, body: Body = None, timeout: float
    ) -> Answer:
        """Answer the request; raise :class:`ServerUnavailable` if the server cannot."""
        params = params or {}
        self._check_running(method, path)
        answer = self._answer_now(method, path, params, body, parse_limit=None)
        if answer is not None:
            return answer
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
        self, method: str, path: str, *, params: Params = None, body: Body = None, timeout: float
    ) -> Answer:
        """Answer the request while the caller's loop goes on.

        Only cheap answers are made in the caller's thread; waits and large
        parses run on the server's loop, and cancelling the caller cancels them.
        """
        params = params or {}
        self._check_running(method, path)
        limit = endpoints.INLINE_PARSE_BYTES
        answer = self._answer_now(method, path, params, body, parse_limit=limit)
        if answer is not None:
            return answer
        future = asyncio.wrap_future(self._submit(method, path, params, body))
        try:
            return await asyncio.wait_for(future, timeout)
        except asyncio.TimeoutError:
            raise ServerUnavailable(
                f"{method} {path} failed: no answer within {timeout:g} s"
            ) from None

    def close(self) -> None:
        """Nothing to release: the transport holds no connection."""

    def _check_running(self, method: str, path: str) -> None:
        if self.loop.is_closed():
            target = self._base_path + path
            raise ServerUnavailable(f"{method} {target} failed: the server is stopped")

    def _answer_now(
        self,
        method: str,
        path: str,
        params: Mapping[str, str],
        body: bytes | None,
        *,
        parse_limit: int | None,
    ) -> Answer | None:
        """The answer computed in this thread, or None when it is for the server's loop."""
        found = match(unquote(path))
        if found is None:
            return None
        route, args = found
        direct = route.direct
        if direct is None or method not in route.endpoints or not self._direct(path, params):
            return None
        try:
            asked = Request(self.store, args, params, body or b"", self._base_url)
            reply = direct(asked, parse_limit)
        except Exception as exc:
            reply = _error_reply(exc, method, path)
        return None if reply is None else _answer(reply)

    def _submit(
        self,
        method: str,
        path: str,
        params: Mapping[str, str],
        body: bytes | None,
    ) -> concurrent.futures.Future[Answer]:
        # A route answered directly that must wait or parse runs its endpoint there.
        found = match(unquote(path))
        endpoint, args = None, {}
        if found is not None and found[0].direct is not None and self._direct(path, params):
            endpoint, args = found[0].endpoints.get(method), found[1]
        call: Coroutine[Any, Any, Answer]
        if endpoint is not None:
            waits = found is not None and found[0].name == "messages" and "wait" in params
            call = self._on_loop(endpoint, args, params, body, method, path, waits)
        else:
            call = self._call_app(method, path, params, body)
        try:
            return asyncio.run_coroutine_threadsafe(call, self.loop)
        except RuntimeError as exc:  # the loop is closed: the server stopped
            call.close()
            raise ServerUnavailable(
                f"{method} {self._base_path}{path} failed: the server is stopped"
            ) from exc

    def _direct(self, path: str, params: Mapping[str, str]) -> bool:
        # A request target the app's guard refuses goes to the app, for its words;
        # on a server with tenants, every request does, to have its token checked.
        return (
            not self._gated
            and len(self._base_path + path) + len(urlencode(params)) <= MAX_TARGET_BYTES
        )

    async def _on_loop(
        self,
        endpoint: Endpoint,
        args: Mapping[str, str],
        params: Mapping[str, str],
        body: bytes | None,
        method: str,
        path: str,
        waits: bool = False,
    ) -> Answer:
        """The route's endpoint run on the server's loop: a read that must wait, or parse there.

        A read that ``waits`` counts as a long-poll while it runs.
        """
        counters = self.counters
        if waits:
            counters.long_polls += 1
        try:
            reply = await endpoint(Request(self.store, args, params, body or b"", self._base_url))
        except Exception as exc:
            reply = _error_reply(exc, method, path)
        finally:
            if waits:
                counters.long_polls -= 1
        return _answer(reply)

    async def _call_app(
        self, method: str, path: str, params: Mapping[str, str], body: bytes | None
    ) -> Answer:
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
            "query_string": urlencode(params).encode("latin-1"),
            "root_path": "",
            "headers": headers,
            "server": self._server,
            "client": ("127.0.0.1", 0),
        }
        return await _run_app(self.app(), scope, body or b"")


def _error_reply(exc: Exception, method: str, path: str) -> Reply:
    if isinstance(exc, TempInboxError):
        return endpoints.error_reply(exc)
    log.error("error while answering %s %s", method, path, exc_info=exc)
    detail = "the server failed to answer; see its log"
    return endpoints.problem_reply(500, INTERNAL_ERROR, detail)


def _answer(reply: Reply) -> Answer:
    return Answer(reply.status, reply.content_type, reply.body)


async def _run_app(app: ASGIApp, scope: Scope, body: bytes) -> Answer:
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
        await app(scope, receive, send)
    except Exception:
        # The app has already answered 500 (and logged it), as uvicorn would.
        pass
    finally:
        disconnected.cancel()
    return Answer(status, content_type.split(";")[0].strip(), b"".join(chunks))
