"""The HTTP side: the Starlette app that serves the store under ``/api``.

The only module that imports Starlette. Every answer is JSON; every error is an
RFC 9457 problem document (``application/problem+json``) with a stable ``code``,
including unknown routes (404) and wrong methods (405). A client's request
never causes a 500.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any
from urllib.parse import quote

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from . import __version__
from .errors import InvalidRequest, PayloadTooLarge, TempInboxError
from .models import format_timestamp
from .openapi import openapi_document
from .parsing import attachment_payload
from .store import Store

__all__ = ["MAX_REQUEST_BODY", "MAX_WAIT", "ApiSettings", "create_app"]

log = logging.getLogger(__name__)

MAX_REQUEST_BODY = 64 * 1024
MAX_WAIT = 60.0
_GENERATE_KEYS = frozenset({"prefix", "domain"})
_HTTP_CODES = {404: "not_found", 405: "method_not_allowed", 413: "payload_too_large"}
_COMMON_HEADERS = {"X-Content-Type-Options": "nosniff", "Cache-Control": "no-store"}


@dataclass(frozen=True)
class ApiSettings:
    """What ``GET /api/info`` reports about the server around the app."""

    smtp_host: str
    smtp_port: int
    message_size_limit: int


class JSONBytesResponse(Response):
    """A response whose body is JSON that is already encoded."""

    media_type = "application/json"


def problem(
    status: int, code: str, detail: str, headers: Mapping[str, str] | None = None
) -> Response:
    """Return an RFC 9457 problem response with our stable ``code`` token."""
    body = {
        "type": f"tag:pytest-tempinbox,2026:problem:{code}",
        "title": HTTPStatus(status).phrase,
        "status": status,
        "detail": detail,
        "code": code,
    }
    return Response(
        _encode(body),
        status_code=status,
        headers={**_COMMON_HEADERS, **(headers or {})},
        media_type="application/problem+json",
    )


def _encode(data: Any) -> bytes:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _json(data: Any, status: int = 200, headers: Mapping[str, str] | None = None) -> Response:
    return JSONBytesResponse(
        _encode(data), status_code=status, headers={**_COMMON_HEADERS, **(headers or {})}
    )


def _messages_path(address: str) -> str:
    return "/api/messages/" + quote(address, safe="@+")


def create_app(store: Store, settings: ApiSettings) -> Starlette:
    """Return the ASGI app serving ``store``; ``settings`` describe the server for ``/api/info``."""

    async def generate(request: Request) -> Response:
        options = _generate_options(await _read_body(request))
        inbox = store.generate(**options)
        path = _messages_path(inbox.address)
        return _json(
            {
                "email": inbox.address,
                "created_at": format_timestamp(inbox.created_at),
                "expires_at": format_timestamp(inbox.expires_at) if inbox.expires_at else None,
                "messages_url": str(request.base_url).rstrip("/") + path,
            },
            status=201,
            headers={"Location": path},
        )

    async def messages(request: Request) -> Response:
        wait = _wait_parameter(request.query_params.get("wait"))
        found = await store.wait(
            request.path_params["email"], after=request.query_params.get("after"), timeout=wait
        )
        body = b"[" + b",".join(message.json for message in found) + b"]"
        return JSONBytesResponse(body, headers=_COMMON_HEADERS)

    async def message(request: Request) -> Response:
        found = store.message(request.path_params["email"], request.path_params["id"])
        return JSONBytesResponse(found.json, headers=_COMMON_HEADERS)

    async def raw(request: Request) -> Response:
        found = store.message(request.path_params["email"], request.path_params["id"])
        return Response(found.raw, headers=_COMMON_HEADERS, media_type="message/rfc822")

    async def attachment(request: Request) -> Response:
        found = store.message(request.path_params["email"], request.path_params["id"])
        described, payload = attachment_payload(found.raw, request.path_params["index"])
        headers = {
            **_COMMON_HEADERS,
            "Content-Disposition": _content_disposition(described.filename, described.index),
        }
        return Response(payload, headers=headers, media_type=described.content_type)

    async def delete(request: Request) -> Response:
        address = store.get(request.path_params["email"]).address
        purged = store.delete(address)
        return _json({"email": address, "deleted": True, "purged": purged})

    async def info(request: Request) -> Response:
        return _json(
            {
                "version": __version__,
                "smtp": {"host": settings.smtp_host, "port": settings.smtp_port},
                "domains": list(store.domains),
                "limits": {
                    "message_size": settings.message_size_limit,
                    "request_body": MAX_REQUEST_BODY,
                    "wait": MAX_WAIT,
                },
            }
        )

    async def openapi(request: Request) -> Response:
        return _json(openapi_document(__version__))

    routes = [
        Route("/api/generate", generate, methods=["POST"]),
        Route("/api/messages/{email}", messages, methods=["GET"]),
        Route("/api/messages/{email}/{id}", message, methods=["GET"]),
        Route("/api/messages/{email}/{id}/raw", raw, methods=["GET"]),
        Route("/api/messages/{email}/{id}/attachments/{index:int}", attachment, methods=["GET"]),
        Route("/api/delete/{email}", delete, methods=["DELETE"]),
        Route("/api/info", info, methods=["GET"]),
        Route("/api/openapi.json", openapi, methods=["GET"]),
    ]
    app = Starlette(
        routes=routes,
        exception_handlers={
            TempInboxError: _error_answer,
            HTTPException: _http_error_answer,
            Exception: _unexpected_error_answer,
        },
    )
    # A trailing slash is another path (404), not a redirect to this one.
    app.router.redirect_slashes = False
    return app


async def _read_body(request: Request) -> bytes:
    length = request.headers.get("content-length", "")
    if length.isdigit() and int(length) > MAX_REQUEST_BODY:
        raise PayloadTooLarge(f"the request body may hold at most {MAX_REQUEST_BODY} bytes")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_REQUEST_BODY:
            raise PayloadTooLarge(f"the request body may hold at most {MAX_REQUEST_BODY} bytes")
    return bytes(body)


def _generate_options(body: bytes) -> dict[str, str]:
    if not body.strip():
        return {}
    try:
        options = json.loads(body)
    except (ValueError, RecursionError):
        raise InvalidRequest("the request body is not JSON") from None
    if not isinstance(options, dict):
        raise InvalidRequest("the request body must be a JSON object")
    unknown = sorted(set(options) - _GENERATE_KEYS)
    if unknown:
        raise InvalidRequest(f"unknown field(s): {', '.join(unknown)}; known: domain, prefix")
    for key, value in options.items():
        if not isinstance(value, str):
            raise InvalidRequest(f"{key} must be a string")
    return options


def _wait_parameter(text: str | None) -> float:
    if text is None:
        return 0.0
    try:
        wait = float(text)
    except ValueError:
        wait = math.nan
    if not 0 <= wait <= MAX_WAIT:  # also false for NaN
        raise InvalidRequest(f"wait must be a number of seconds from 0 to {MAX_WAIT:g}")
    return wait


def _content_disposition(filename: str | None, index: int) -> str:
    name = filename or f"attachment-{index}"
    # The sender chose the name: keep only its last path component, and give an
    # ASCII fallback beside the exact UTF-8 form (RFC 6266).
    name = name.replace("\\", "/").rsplit("/", 1)[-1].strip() or f"attachment-{index}"
    ascii_name = "".join(c if 32 <= ord(c) < 127 and c not in '"\\' else "_" for c in name)
    return f"attachment; filename=\"{ascii_name}\"; filename*=UTF-8''{quote(name, safe='')}"


async def _error_answer(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, TempInboxError)
    return problem(exc.status, exc.code, str(exc))


async def _http_error_answer(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    code = _HTTP_CODES.get(exc.status_code, "invalid_request")
    if exc.status_code == 404:
        detail = f"no such route: {request.url.path[:200]}"
    elif exc.status_code == 405:
        detail = f"{request.method} is not allowed here"
    else:
        detail = str(exc.detail)
    return problem(exc.status_code, code, detail, headers=exc.headers)


async def _unexpected_error_answer(request: Request, exc: Exception) -> Response:
    log.error("error while answering %s %s", request.method, request.url.path, exc_info=exc)
    return problem(500, "internal_error", "the server failed to answer; see its log")
