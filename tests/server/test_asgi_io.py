"""A route's body read and its reply sent in plain ASGI messages, as Starlette's objects would."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest
from starlette.requests import ClientDisconnect

from pytest_tempinbox.errors import PayloadTooLarge
from pytest_tempinbox.server.api.endpoints import Reply
from pytest_tempinbox.server.http.app import respond
from pytest_tempinbox.server.http.asgi_io import raw_headers, read_body, send_reply

REPLIES = [
    Reply(200, b"[]"),
    Reply(202, b"", "text/plain", {"X-Message-Id": "abc"}),
    Reply(204, b""),
    Reply(304, b"", "text/plain"),
    Reply(201, b'{"id": 1}', "application/json", {"Location": "/x"}),
    Reply(200, b"<p>", "text/html; charset=latin-1"),
    Reply(200, b"<p>", "text/html"),
    Reply(200, b"x", "text/plain", {"Content-Type": "text/csv", "Content-Length": "1"}),
    Reply(429, b"{}", "application/problem+json", {"Retry-After": "1"}),
    Reply(200, b"data", "application/octet-stream", {"Cache-Control": "private"}),
]


@pytest.mark.parametrize("reply", REPLIES, ids=repr)
def test_a_reply_has_the_headers_starlette_s_response_gives_it(reply: Reply) -> None:
    assert raw_headers(reply) == respond(reply).raw_headers


def test_a_reply_is_sent_as_a_start_and_one_body() -> None:
    sent: list[dict[str, object]] = []

    async def send(message: dict[str, object]) -> None:
        sent.append(message)

    reply = Reply(202, b"ok", "text/plain", {"X-Message-Id": "abc"})
    asyncio.run(send_reply(reply, send))  # type: ignore[arg-type]
    assert sent == [
        {"type": "http.response.start", "status": 202, "headers": respond(reply).raw_headers},
        {"type": "http.response.body", "body": b"ok"},
    ]


def _receiving(*messages: dict[str, object]) -> Callable[[], Awaitable[dict[str, object]]]:
    queue = list(messages)

    async def receive() -> dict[str, object]:
        return queue.pop(0)

    return receive


def _scope(length: str | None = None) -> dict[str, object]:
    headers = [] if length is None else [(b"content-length", length.encode())]
    return {"type": "http", "headers": headers}


def _read(scope: dict[str, object], receive: object, limit: int = 10) -> bytes:
    return asyncio.run(read_body(scope, receive, limit))  # type: ignore[arg-type]


def test_a_body_is_read_in_one_piece_or_in_several() -> None:
    whole = _receiving({"type": "http.request", "body": b"abc"})
    assert _read(_scope("3"), whole) == b"abc"
    pieces = _receiving(
        {"type": "http.request", "body": b"ab", "more_body": True},
        {"type": "http.request", "more_body": True},
        {"type": "http.request", "body": b"c"},
    )
    assert _read(_scope(), pieces) == b"abc"
    assert _read(_scope(), _receiving({"type": "http.request"})) == b""


def test_a_body_over_the_limit_is_refused_declared_or_read() -> None:
    with pytest.raises(PayloadTooLarge, match="at most 10 bytes"):
        _read(_scope("11"), _receiving())  # nothing read
    with pytest.raises(PayloadTooLarge):
        _read(_scope(), _receiving({"type": "http.request", "body": b"x" * 11}))
    with pytest.raises(PayloadTooLarge):
        _read(
            _scope(),
            _receiving(
                {"type": "http.request", "body": b"x" * 6, "more_body": True},
                {"type": "http.request", "body": b"x" * 6, "more_body": True},
            ),
        )


def test_a_client_that_leaves_mid_body_is_a_client_disconnect() -> None:
    with pytest.raises(ClientDisconnect):
        _read(_scope(), _receiving({"type": "http.disconnect"}))
    with pytest.raises(ClientDisconnect):
        _read(
            _scope(),
            _receiving(
                {"type": "http.request", "body": b"ab", "more_body": True},
                {"type": "http.disconnect"},
            ),
        )
