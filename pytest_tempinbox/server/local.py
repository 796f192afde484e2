"""The in-process transport: the client's requests answered without sockets or HTTP.

When the server runs in the test's own process, :class:`LocalTransport` answers
the calls a test makes all the time (generate, read the messages, delete), and
the refusals a failing wait asks for, by
running the API's own operations (:mod:`pytest_tempinbox.server.endpoints`) in the
caller's thread, which is safe because the store takes a lock. A read that must
wait hops to the server's loop to long-poll there. Every other request goes
through the very same ASGI app on the server's loop (imported only then). So
the answers are byte for byte those of HTTP, only sooner.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import re
from collections.abc import Awaitable, Callable, Coroutine, Mapping, MutableMapping
from typing import Any
from urllib.parse import unquote, urlencode, urlsplit

from ..errors import ServerUnavailable, TempInboxError
from ..transport import Answer
from . import endpoints as operations
from .endpoints import MAX_TARGET_BYTES, Reply
from .store import Store

__all__ = ["ASGIApp", "LocalTransport"]

log = logging.getLogger(__name__)

Scope = MutableMapping[str, Any]
ASGIMessage = MutableMapping[str, Any]
ASGIApp = Callable[
    [Scope, Callable[[], Awaitable[ASGIMessage]], Callable[[ASGIMessage], Awaitable[None]]],
    Awaitable[None],
]

# The routes answered by operations; each matches the decoded path, as Starlette's do.
_MESSAGES = re.compile(r"/messages/([^/]+)")
_DELETE = re.compile(r"/delete/([^/]+)")


class LocalTransport:
    """Answers the client in-process, from another thread than the server's loop.

    ``store`` and ``loop`` are the server's; ``app`` returns its ASGI app (built
    on first need). ``api_url`` is the server's API URL: its host names the
    server in the ``Host`` header (so absolute URLs in answers match HTTP's) and
    its path is the prefix of every request.
    """

    cancellable = True

    def __init__(
        self,
        store: Store,
        app: Callable[[], ASGIApp],
        loop: asyncio.AbstractEventLoop,
        api_url: str,
    ) -> None:
        self.store = store
        self.app = app
        self.loop = loop
        url = urlsplit(api_url)
        self._base_path = url.path.rstrip("/")
        self._base_url = f"http://{url.netloc}/"
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
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: bytes | None = None,
        timeout: float,
    ) -> Answer:
        """Answer the request while the caller's loop goes on.

        Only cheap answers are made in the caller's thread; waits and large
        parses run on the server's loop, and cancelling the caller cancels them.
        """
        params = params or {}
        self._check_running(method, path)
        limit = operations.INLINE_PARSE_BYTES
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
        if not self._for_operations(path, params):
            return None
        target = unquote(path)
        store = self.store
        try:
            if method == "POST" and target == "/generate":
                reply = operations.generate(store, body or b"", self._base_url)
            elif method == "DELETE" and (match := _DELETE.fullmatch(target)):
                reply = operations.delete(store, match[1])
            elif method == "GET" and (match := _MESSAGES.fullmatch(target)):
                after, wait = params.get("after"), params.get("wait")
                found = operations.messages_now(
                    store,
                    match[1],
                    after,
                    wait,
                    parse_limit,
                    subject=params.get("subject"),
                    sender=params.get("from"),
                    text=params.get("text"),
                )
                if found is None:
                    return None
                reply = found
            elif method == "GET" and target == "/refused":
                since, similar_to = params.get("since"), params.get("similar_to")
                reply = operations.refused(store, since, similar_to, params.get("limit"))
            else:
                return None
        except Exception as exc:
            reply = _error_reply(exc, method, path)
        return _answer(reply)

    def _submit(
        self,
        method: str,
        path: str,
        params: Mapping[str, str],
        body: bytes | None,
    ) -> concurrent.futures.Future[Answer]:
        match = _MESSAGES.fullmatch(unquote(path))
        call: Coroutine[Any, Any, Answer]
        if method == "GET" and match is not None and self._for_operations(path, params):
            call = self._wait(match[1], params, method, path)
        else:
            call = self._call_app(method, path, params, body)
        try:
            return asyncio.run_coroutine_threadsafe(call, self.loop)
        except RuntimeError as exc:  # the loop is closed: the server stopped
            call.close()
            raise ServerUnavailable(
                f"{method} {self._base_path}{path} failed: the server is stopped"
            ) from exc

    def _for_operations(self, path: str, params: Mapping[str, str]) -> bool:
        # A request target the app's guard refuses goes to the app, for its words.
        return len(self._base_path + path) + len(urlencode(params)) <= MAX_TARGET_BYTES

    async def _wait(self, email: str, params: Mapping[str, str], method: str, path: str) -> Answer:
        try:
            reply = await operations.messages(
                self.store,
                email,
                params.get("after"),
                params.get("wait"),
                subject=params.get("subject"),
                sender=params.get("from"),
                text=params.get("text"),
            )
        except Exception as exc:
            reply = _error_reply(exc, method, path)
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
        return operations.error_reply(exc)
    log.error("error while answering %s %s", method, path, exc_info=exc)
    detail = "the server failed to answer; see its log"
    return operations.problem_reply(500, "internal_error", detail)


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
