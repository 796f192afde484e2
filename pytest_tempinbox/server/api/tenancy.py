"""The API with tenants: a token for every route, and each tenant's inboxes its own.

On a server started with tenants (``--tenants``, ``docs/tenants.md``), the
HTTP app wraps each route's endpoints with :func:`guarded`: the caller's
``Authorization: Bearer`` token names its tenant (else ``401`` with
``WWW-Authenticate: Bearer``), and a route that names an inbox (``{email}``)
answers for another tenant's inbox exactly as for one that does not exist,
before its endpoint runs, so that no answer tells the two apart. Without
tenants nothing here runs. ``GET /api/inboxes`` (:func:`inboxes`) lists the
caller's live inboxes. No web framework is imported here.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping

from ...errors import InboxNotFound
from ...models import format_timestamp
from ...tenants import Tenants
from ..store.addresses import not_found
from .endpoints import Reply, encode_json, problem_reply
from .request import Request
from .tickets import TICKET_ROUTES, ticket_tenant

__all__ = ["OPEN_ROUTES", "UNAUTHORIZED", "caller", "guarded", "inboxes", "unauthorized"]

Endpoint = Callable[[Request], Awaitable[Reply]]

OPEN_ROUTES = frozenset({"health", "ready", "openapi", "metrics", "viewer", "viewer_asset"})
"""The routes that answer without a token: the probes, the API's description, the viewer's page.

The metrics hold counts only; the viewer's page and assets hold no mail (the
mail it shows comes through the API, with a token).
"""

UNAUTHORIZED = "unauthorized"
_CHALLENGE = {"WWW-Authenticate": 'Bearer realm="pytest-tempinbox"'}


def guarded(name: str, endpoints: Mapping[str, Endpoint], tenants: Tenants) -> dict[str, Endpoint]:
    """The endpoints of route ``name``, each asking for a token of one of ``tenants`` first.

    A route of :data:`~.tickets.TICKET_ROUTES` takes a ticket (``?ticket=``) instead.
    """
    if name in OPEN_ROUTES:
        return dict(endpoints)
    ticketed = name in TICKET_ROUTES
    return {method: _guard(endpoint, tenants, ticketed) for method, endpoint in endpoints.items()}


def _guard(endpoint: Endpoint, tenants: Tenants, ticketed: bool = False) -> Endpoint:
    async def answer(request: Request) -> Reply:
        tenant = caller(request.headers.get("authorization"), tenants)
        if tenant is None and ticketed:
            address = request.args["email"]
            tenant = ticket_tenant(tenants, request.query.get("ticket"), address, time.time())
        if tenant is None:
            return unauthorized()
        request.tenant = tenant
        address = request.args.get("email")
        if address is not None and request.store.owner(address) != tenant:
            # Worded as the store words an inbox that does not exist, for that same string.
            raise InboxNotFound(not_found(address))
        return await endpoint(request)

    answer.__qualname__ = answer.__name__ = getattr(endpoint, "__name__", "endpoint")
    return answer


def unauthorized() -> Reply:
    """The answer to a request without a tenant's token: ``401`` with ``WWW-Authenticate``."""
    return problem_reply(
        401,
        UNAUTHORIZED,
        "this server has tenants: send Authorization: Bearer <your token>",
        _CHALLENGE,
    )


def caller(authorization: str | None, tenants: Tenants) -> str | None:
    """The tenant whose token the ``Authorization`` header carries; None for none or unknown."""
    if authorization is None:
        return None
    scheme, _, token = authorization.strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return tenants.tenant_of(token.strip())


async def inboxes(request: Request) -> Reply:
    """``GET /api/inboxes``: the caller's live inboxes, each with its number of messages.

    Without tenants there is no caller to list for: ``404 not_found``, as for a
    path the server does not answer (``docs/tenants.md``).
    """
    if request.tenant is None:
        return problem_reply(
            404,
            "not_found",
            "GET /api/inboxes lists a tenant's inboxes: this server has no tenants (see --tenants)",
        )
    listed = [
        {
            "email": inbox.address,
            "messages": count,
            "created_at": format_timestamp(inbox.created_at, milliseconds=True),
            "expires_at": (
                format_timestamp(inbox.expires_at, milliseconds=True) if inbox.expires_at else None
            ),
        }
        for inbox, count in request.store.owned(request.tenant)
    ]
    return Reply(200, encode_json({"inboxes": listed}))
