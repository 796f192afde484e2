"""API calls described apart from how they are carried, and the flows made of them.

A :class:`Call` is one request and how to read its answer. A *flow* is a
generator that yields calls and receives their results (or has their errors
thrown in), as httpx's ``auth_flow`` yields requests: each multi-step job of the
client (a wait, ``assert_no_message``, explaining a failed wait) is written once
as a flow, and :func:`drive` runs it blocking while :func:`drive_async` awaits
it. The bottom of the client: it imports nothing of the client.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator, Mapping
from typing import TYPE_CHECKING, Any, Generic, TypeVar
from urllib.parse import quote as _url_quote

from ..errors import PROBLEMS, QuotaExceeded, ServerUnavailable, TempInboxError

if TYPE_CHECKING:
    from ..transport import Answer, Body, Params

__all__ = ["Call", "Flow", "drive", "drive_async", "error_from", "quote", "smtp_of"]

Result = TypeVar("Result")

Flow = Generator["Call[Any]", Any, Result]
"""A generator of calls whose value is the flow's result."""


# A plain class, not a dataclass: making a dataclass costs about a millisecond of import
# (its methods are compiled from source), and this one is made by every client's import.
class Call(Generic[Result]):
    """One API call: the request, and ``read``, which turns a successful answer into a result."""

    __slots__ = ("body", "method", "params", "path", "read", "timeout")

    def __init__(
        self,
        method: str,
        path: str,
        read: Callable[[Answer], Result],
        params: Params = None,
        body: Body = None,
        timeout: float | None = None,
    ) -> None:
        self.method, self.path, self.read = method, path, read
        self.params, self.body, self.timeout = params, body, timeout

    def __repr__(self) -> str:
        return f"Call({self.method!r}, {self.path!r}, params={self.params!r})"


def drive(flow: Flow[Result], make: Callable[[Call[Any]], Any]) -> Result:
    """Run ``flow`` to its end, each call it yields made, blocking, by ``make``.

    A call's error is thrown into the flow, which may handle it and go on.
    """
    __tracebackhide__ = True
    steps: _Steps[Result] = _Steps(flow)
    while (call := steps.next()) is not None:
        try:
            steps.sent = make(call)
        except Exception as exc:
            steps.error = exc
    return steps.value


async def drive_async(flow: Flow[Result], make: Callable[[Call[Any]], Awaitable[Any]]) -> Result:
    """Like :func:`drive`, each call awaited: cancelling the caller cancels the call made."""
    __tracebackhide__ = True
    steps: _Steps[Result] = _Steps(flow)
    while (call := steps.next()) is not None:
        try:
            steps.sent = await make(call)
        except Exception as exc:
            steps.error = exc
    return steps.value


class _Steps(Generic[Result]):
    """A flow being driven: what to send it next (a result or an error), and its value."""

    __slots__ = ("error", "flow", "sent", "value")

    def __init__(self, flow: Flow[Result]) -> None:
        self.flow = flow
        self.sent: Any = None
        self.error: Exception | None = None

    def next(self) -> Call[Any] | None:
        """The flow's next call, or None when it has ended (its result is then ``value``)."""
        __tracebackhide__ = True
        # Not called from an except clause: what the flow raises next is not chained
        # to an error it has handled.
        try:
            call = self.flow.send(self.sent) if self.error is None else self.flow.throw(self.error)
        except StopIteration as stop:
            self.value: Result = stop.value
            return None
        self.sent = self.error = None
        return call


def error_from(answer: Answer, request: str) -> TempInboxError:
    """The package's error for a failed ``answer`` to ``request`` (``GET http://...``)."""
    try:
        problem = answer.json()
        code, detail = problem["code"], problem["detail"]
    except (ValueError, KeyError, TypeError):
        text = answer.content[:200].decode("utf-8", "replace")
        return ServerUnavailable(f"{request} answered {answer.status}: {text}")
    # Every code the server sends is in PROBLEMS; one from a newer server is an error still.
    error = PROBLEMS[code][1](detail) if code in PROBLEMS else TempInboxError(detail)
    error.status = answer.status
    if isinstance(error, QuotaExceeded):  # which quota, its value, when it frees
        error.quota, error.limit = str(problem.get("quota", "")), int(problem.get("limit") or 0)
        retry = problem.get("retry_after")
        error.retry_after = float(retry) if isinstance(retry, (int, float)) else None
    return error


def quote(segment: str) -> str:
    """``segment`` quoted for a path of the API: an address keeps its ``@`` and ``+``."""
    return _url_quote(segment, safe="@+")


def smtp_of(info: Mapping[str, Any]) -> tuple[str, int]:
    """The SMTP host and port of an ``/api/info`` answer."""
    return str(info["smtp"]["host"]), int(info["smtp"]["port"])
