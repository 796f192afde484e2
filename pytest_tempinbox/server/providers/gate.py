"""What every provider route does around its endpoint: the key checked, a struck fault answered.

:func:`answer` runs a provider's endpoint for every provider route (the
route table calls it), so that each provider gets both without a line of its
own.

With ``ServerConfig.provider_keys`` naming a key for a provider, its endpoints
take only a request presenting that key, read by the provider's own
``credential``; another key, or none, gets the provider's own refusal, from
its ``error_reply``: ``401``, or the module's ``WRONG_KEY_STATUS`` for a key it
does not know (Resend's ``403``). A provider without a key takes any key, or
none. The key is a secret: compared in constant time, never logged, never in
an answer (see docs/providers.md).

A recipient's fault that strikes the send (:class:`~.delivery.Struck`) is
answered with the provider's ``error_reply`` for its status, with
``Retry-After`` for a ``429``, or, for a disconnect, with :data:`DROP`: the
HTTP adapter closes the connection without an answer.
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable
from types import ModuleType

from ..api.endpoints import DROP, Reply
from ..api.request import Request
from .delivery import Struck

__all__ = ["RETRY_AFTER", "answer", "bearer", "refusal"]

RETRY_AFTER = "1"
"""The ``Retry-After`` of a fault's ``429``: one second, so that a retrying SDK retries soon."""

WRONG_KEY = (
    "The provided authorization grant is invalid, expired, or revoked: the key is not the one "
    "this server takes for {name} (its --provider-key)"
)
NO_KEY = "No API key was given: this server takes {name}'s key only (its --provider-key)"


def bearer(request: Request) -> str | None:
    """The key of an ``Authorization: Bearer KEY`` header, or None without one."""
    scheme, _, key = request.headers.get("authorization", "").strip().partition(" ")
    key = key.strip()
    return key if scheme.lower() == "bearer" and key else None


def refusal(name: str, module: ModuleType, request: Request) -> Reply | None:
    """The provider's refusal of ``request`` for want of its key, or None to go on."""
    wanted = dict(request.server().config.provider_keys).get(name)
    if wanted is None:
        return None
    presented = module.credential(request)
    if presented is None:
        status, message = 401, NO_KEY
    elif hmac.compare_digest(presented.encode("utf-8"), wanted.encode("utf-8")):
        return None
    else:
        status, message = getattr(module, "WRONG_KEY_STATUS", 401), WRONG_KEY
    return _error(module, request, status, message.format(name=name))


async def answer(
    name: str,
    module: ModuleType,
    endpoint: Callable[[Request], Awaitable[Reply]],
    request: Request,
) -> Reply:
    """The provider ``name``'s answer to ``request``: its key checked, then ``endpoint``'s.

    A fault that struck the send is answered here, in the provider's shape.
    """
    refused = refusal(name, module, request)
    if refused is not None:
        return refused
    try:
        return await endpoint(request)
    except Struck as struck:
        if struck.status is None:
            return DROP
        reply = _error(module, request, struck.status, struck.message)
        if struck.status == 429:
            reply = Reply(
                reply.status,
                reply.body,
                reply.content_type,
                {**reply.headers, "Retry-After": RETRY_AFTER},
            )
        return reply


def _error(module: ModuleType, request: Request, status: int, message: str) -> Reply:
    """The provider's error answer; a module whose errors depend on the request says so.

    SES answers its v1 query API's requests in XML and v2's in JSON: its
    ``request_error_reply`` picks by the request.
    """
    by_request = getattr(module, "request_error_reply", None)
    reply: Reply = (
        by_request(request, status, message)
        if by_request is not None
        else module.error_reply(status, message)
    )
    return reply
