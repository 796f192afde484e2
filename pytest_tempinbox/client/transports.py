"""The client's transports over HTTP: blocking with requests, awaited in a worker thread.

:class:`HTTPTransport` is the blocking transport (see :mod:`pytest_tempinbox.transport`),
the only code that imports requests, and only when it is made. :class:`InThread`
awaits a blocking transport in a worker thread: what an awaited call over HTTP
needs, and only that (the in-process transport is awaited without a thread).
"""

from __future__ import annotations

import asyncio
import functools
import time
from typing import TYPE_CHECKING

from .._net import is_loopback_url
from ..errors import ServerUnavailable
from ..transport import Answer, Body, Params, Transport

if TYPE_CHECKING:
    import requests

__all__ = ["RATE_LIMIT_LONGEST_PAUSE", "RATE_LIMIT_RETRIES", "HTTPTransport", "InThread"]

# A long-poll in a worker thread, which cancelling cannot end, is sent in slices
# this long, so that a cancelled wait lets go of its thread within this time.
_SLICE = 1.0
# A request a server's rate limit refused (429 rate_limited) is sent again after its
# Retry-After, this many times at most, when the server asks for this many seconds at most.
RATE_LIMIT_RETRIES = 3
RATE_LIMIT_LONGEST_PAUSE = 5.0


class HTTPTransport:
    """Carries the client's requests over HTTP, with one pooled :class:`requests.Session`.

    It blocks; awaited, the client runs it through :class:`InThread`. ``verify``
    is requests' own: ``True`` (the system's CAs, or ``REQUESTS_CA_BUNDLE``), the
    path of a PEM bundle of CAs to trust for an ``https://`` URL, or ``False``.
    Given, it wins over the environment's bundle. ``token``, a tenant's API
    token, goes in every request's ``Authorization: Bearer`` header (never in a URL).
    """

    def __init__(
        self,
        api_url: str,
        session: requests.Session | None = None,
        *,
        verify: bool | str | None = None,
        token: str | None = None,
    ) -> None:
        import requests  # here, so that the in-process transport never pays for it

        self._requests = requests
        self.api_url = api_url.rstrip("/")
        self.session = session or requests.Session()
        self.verify = verify
        if session is None and is_loopback_url(self.api_url):
            # Proxies and .netrc never apply to loopback, and looking them up costs time.
            self.session.trust_env = False
        if token is not None:
            self.session.headers["Authorization"] = f"Bearer {token}"

    def request(
        self, method: str, path: str, *, params: Params = None, body: Body = None, timeout: float
    ) -> Answer:
        """Send the request; raise :class:`ServerUnavailable` when there is no answer.

        A ``429 rate_limited`` answer (a server's rate limit, docs/tenants.md) is
        waited out and the request sent again, as its ``Retry-After`` asks, up to
        :data:`RATE_LIMIT_RETRIES` times and :data:`RATE_LIMIT_LONGEST_PAUSE`
        seconds a pause; past those, the ``429`` is the answer. A quota's ``429``
        (``quota_exceeded``) is the answer at once: it frees in minutes or hours.
        """
        for _ in range(RATE_LIMIT_RETRIES):
            answer, pause = self._send(method, path, params, body, timeout)
            if pause is None:
                return answer
            time.sleep(pause)
        return self._send(method, path, params, body, timeout)[0]

    def _send(
        self, method: str, path: str, params: Params, body: Body, timeout: float
    ) -> tuple[Answer, float | None]:
        """One request's answer, and how long to pause before sending it again (None: do not)."""
        url = self.api_url + path
        headers = {"Content-Type": "application/json"} if body is not None else None
        try:
            response = self.session.request(
                method,
                url,
                params=params,
                data=body,
                headers=headers,
                timeout=timeout,
                verify=self.verify,
            )
        except self._requests.RequestException as exc:
            raise ServerUnavailable(f"{method} {url} failed: {exc}") from exc
        content_type = response.headers.get("content-type", "").split(";")[0].strip()
        answer = Answer(response.status_code, content_type, response.content)
        if response.status_code != 429 or b'"rate_limited"' not in response.content:
            return answer, None
        try:
            pause = float(response.headers.get("retry-after", "1"))
        except ValueError:  # an HTTP date: not what this server sends
            return answer, None
        return answer, (pause if 0 <= pause <= RATE_LIMIT_LONGEST_PAUSE else None)

    def close(self) -> None:
        """Close the pooled connections."""
        self.session.close()


class InThread:
    """A blocking transport, awaited: each request runs in a worker thread.

    Cancelling the caller cannot end a request in a thread, so a long-poll (a
    ``wait`` of more than a second) is sent as polls of a second at most, until
    one brings mail or the wait is over: a cancelled wait lets go of its thread
    within a second, and the server's waiter with it.
    """

    def __init__(self, transport: Transport) -> None:
        self.transport = transport

    async def request_async(
        self, method: str, path: str, *, params: Params = None, body: Body = None, timeout: float
    ) -> Answer:
        """Like the transport's ``request``, in a worker thread."""
        loop = asyncio.get_running_loop()
        wait = _wait_of(params)
        deadline = loop.time() + wait
        while True:
            part, part_timeout = params, timeout
            if wait > _SLICE:
                left = min(max(0.0, deadline - loop.time()), _SLICE)
                part = {**(params or {}), "wait": f"{left:.3f}"}
                part_timeout = timeout - wait + left
            request = functools.partial(
                self.transport.request, method, path, params=part, body=body, timeout=part_timeout
            )
            answer = await loop.run_in_executor(None, request)
            if wait <= _SLICE or loop.time() >= deadline or answer.content.strip() != b"[]":
                return answer

    def close(self) -> None:
        """Release the transport's connections."""
        self.transport.close()


def _wait_of(params: Params) -> float:
    """The ``wait`` of a long-poll's query, in seconds; 0 for another request."""
    try:
        return float((params or {}).get("wait", 0))
    except ValueError:
        return 0.0
