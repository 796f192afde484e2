"""A provider's endpoints behind its key: the one check for every provider route.

With ``ServerConfig.provider_keys`` naming a key for a provider, its endpoints
take only a request presenting that key, read by the provider's own
``credential``; another key, or none, gets the provider's own refusal, from
its ``error_reply``: ``401``, or the module's ``WRONG_KEY_STATUS`` for a key it
does not know (Resend's ``403``). A provider without a key takes any key, or
none. The key is a secret: compared in constant time, never logged, never in
an answer (see docs/providers.md).
"""

from __future__ import annotations

import hmac
from types import ModuleType

from ..api.endpoints import Reply
from ..api.request import Request

__all__ = ["bearer", "refusal"]

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
    reply: Reply = module.error_reply(status, message.format(name=name))
    return reply
