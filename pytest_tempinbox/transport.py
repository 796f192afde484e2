"""How the client's requests reach the API: the answer type and the transport protocols.

The client speaks to the API through a :class:`Transport` (blocking) and an
:class:`AsyncTransport` (awaited), two protocols as httpx's ``BaseTransport``
and ``AsyncBaseTransport`` are. Over the network that is HTTP (in
:mod:`pytest_tempinbox.client.http`), awaited in a worker thread. When the
server runs in the same process,
:class:`~pytest_tempinbox.server.in_process.LocalTransport` is both, and answers
without sockets, exactly as HTTP would, only sooner.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

__all__ = ["Answer", "AsyncTransport", "Body", "Params", "Transport"]

Params = Mapping[str, str] | None
"""A request's query parameters."""
Body = bytes | None
"""A request's JSON body."""


class Answer:
    """An API answer: its status, content type and body."""

    # A plain class, not a dataclass: creating a dataclass costs about 1 ms of import.
    __slots__ = ("content", "content_type", "status")

    def __init__(self, status: int, content_type: str, content: bytes) -> None:
        self.status = status
        self.content_type = content_type
        self.content = content

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Answer):
            return NotImplemented
        return (self.status, self.content_type, self.content) == (
            other.status,
            other.content_type,
            other.content,
        )

    def __hash__(self) -> int:
        return hash((self.status, self.content_type, self.content))

    def __repr__(self) -> str:
        content = self.content if len(self.content) <= 200 else self.content[:200] + b"..."
        return f"Answer(status={self.status}, content_type={self.content_type!r}, {content!r})"

    def json(self) -> Any:
        """The body, decoded as JSON."""
        return json.loads(self.content)


class Transport(Protocol):
    """Carries one request to the API (paths relative to its ``/api`` base) and back, blocking.

    A transport to a server in the same process may also set ``in_process = True``:
    a failed wait then knows that only this process sends the server mail.
    """

    def request(
        self, method: str, path: str, *, params: Params = None, body: Body = None, timeout: float
    ) -> Answer:
        """Send the request; raise :class:`ServerUnavailable` when there is no answer."""

    def close(self) -> None:
        """Release what the transport holds."""


@runtime_checkable
class AsyncTransport(Protocol):
    """Carries one request to the API and back, awaited: it must not block the event loop.

    Cancelling the caller ends the request, or, where it cannot (a blocking
    request in a worker thread), lets go of it soon: the transport sees to it.
    """

    async def request_async(
        self, method: str, path: str, *, params: Params = None, body: Body = None, timeout: float
    ) -> Answer:
        """Like :meth:`Transport.request`, awaitable without blocking the event loop."""

    def close(self) -> None:
        """Release what the transport holds."""
