"""Short-lived tickets: the viewer's message frames on a server with tenants.

A frame loads its document by URL and cannot send an ``Authorization``
header; the viewer asks ``GET /api/ticket/{email}`` (with its token) for a
ticket and puts it in the frame's URL (``?ticket=``) instead of the token. A
ticket names its tenant, one inbox and the moment it expires
(:data:`TICKET_SECONDS` after it was made), signed with a key drawn from the
tenants' token hashes, so every server that reads the same tenants file
accepts it and nobody without them can make one. It opens only the viewer's
HTML view of that inbox's messages (:data:`TICKET_ROUTES`): a URL that a log
keeps is of no use a minute later, and never the token. No web framework is
imported here.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import time
from datetime import datetime, timezone

from ...models import format_timestamp
from ...tenants import Tenants
from ..store.addresses import recipient_inbox
from .endpoints import Reply, encode_json, problem_reply
from .request import Request

__all__ = ["TICKET_ROUTES", "TICKET_SECONDS", "make_ticket", "ticket", "ticket_tenant"]

TICKET_SECONDS = 60
"""How long a ticket opens its inbox's frames."""
TICKET_ROUTES = frozenset({"viewer_html"})
"""The routes a ticket opens, in place of a token."""
_SEPARATOR = "~"  # no tenant's name holds it, and URLs carry it as it is


@functools.lru_cache(maxsize=4)
def _key(tenants: Tenants) -> bytes:
    lines = "\n".join(sorted(tenants.by_hash)).encode("ascii")
    return hashlib.sha256(b"pytest-tempinbox viewer ticket\n" + lines).digest()


def _signature(tenants: Tenants, tenant: str, address: str, expires: int) -> str:
    text = f"{tenant}\n{expires}\n{recipient_inbox(address)[0]}".encode("utf-8", "surrogateescape")
    return hmac.new(_key(tenants), text, hashlib.sha256).hexdigest()[:32]


def make_ticket(tenants: Tenants, tenant: str, address: str, now: float) -> tuple[str, int]:
    """A ticket of ``tenant`` for the inbox at ``address`` (any form), and when it expires."""
    expires = int(now) + TICKET_SECONDS
    signature = _signature(tenants, tenant, address, expires)
    return _SEPARATOR.join((str(expires), tenant, signature)), expires


def ticket_tenant(tenants: Tenants, text: str | None, address: str, now: float) -> str | None:
    """The tenant of a valid, unexpired ticket for ``address``; None for any other text."""
    if not text or len(text) > 200:
        return None
    expires, _, rest = text.partition(_SEPARATOR)
    tenant, _, signature = rest.rpartition(_SEPARATOR)
    if not expires.isascii() or not expires.isdigit() or not tenant or int(expires) < now:
        return None
    expected = _signature(tenants, tenant, address, int(expires))
    if not hmac.compare_digest(signature.encode("ascii", "replace"), expected.encode("ascii")):
        return None
    return tenant


async def ticket(request: Request) -> Reply:
    """``GET /api/ticket/{email}``: a ticket for the caller's inbox's message frames.

    The guard has checked the token and that the inbox is the caller's. Without
    tenants there is no ticket to give: ``404 not_found``.
    """
    tenants = request.server().config.tenants
    if request.tenant is None or tenants is None:
        return problem_reply(
            404,
            "not_found",
            "GET /api/ticket/{email} is for a server with tenants: this one has none",
        )
    made, expires = make_ticket(tenants, request.tenant, request.args["email"], time.time())
    at = format_timestamp(datetime.fromtimestamp(expires, timezone.utc), milliseconds=True)
    return Reply(200, encode_json({"ticket": made, "expires_at": at}))
