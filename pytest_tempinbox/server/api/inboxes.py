"""The API's inboxes: ``POST /api/generate`` and ``DELETE /api/delete/{email}``.

Both are answered at once, from any thread: the in-process transport runs them
in the caller's thread (see :mod:`.routes`). No web framework is imported here.
"""

from __future__ import annotations

from urllib.parse import quote

from ...errors import InvalidRequest, PayloadTooLarge
from ...models import format_timestamp
from ..readers.passwords import passwords_of
from .endpoints import MAX_REQUEST_BODY, Reply, encode_json, json_body
from .request import Request

__all__ = ["delete", "generate", "messages_path"]

_GENERATE_KEYS = ("address", "domain", "prefix", "ttl")


def messages_path(address: str) -> str:
    """The path of an inbox's message list."""
    return "/api/messages/" + quote(address, safe="@+")


def generate(request: Request, parse_limit: int | None = None) -> Reply:
    """``POST /api/generate``: the request body's options; ``messages_url`` from the base URL.

    Answered at once, in any thread (``parse_limit`` is not needed).
    """
    store, body = request.store, request.body
    if len(body) > MAX_REQUEST_BODY:
        raise PayloadTooLarge(f"the request body may hold at most {MAX_REQUEST_BODY} bytes")
    prefix, domain, ttl, address = _generate_options(body)
    owner = request.tenant
    inbox = store.generate(prefix=prefix, domain=domain, ttl=ttl, address=address, owner=owner)
    path = messages_path(inbox.address)
    created = {
        "email": inbox.address,
        # Milliseconds: a failed wait asks for the refusals from this moment on.
        "created_at": format_timestamp(inbox.created_at, milliseconds=True),
        "expires_at": (
            format_timestamp(inbox.expires_at, milliseconds=True) if inbox.expires_at else None
        ),
        "messages_url": request.base_url.rstrip("/") + path,
        "password": passwords_of(store).password_for(inbox.address, owner),
    }
    return Reply(201, encode_json(created), headers={"Location": path})


def delete(request: Request, parse_limit: int | None = None) -> Reply:
    """``DELETE /api/delete/{email}``: answered at once, in any thread."""
    store = request.store
    address = store.get(request.args["email"]).address
    purged = store.delete(address)
    return Reply(200, encode_json({"email": address, "deleted": True, "purged": purged}))


def _generate_options(
    body: bytes,
) -> tuple[str | None, str | None, float | None, str | None]:
    options = json_body(body)
    if options is None:
        return None, None, None, None
    unknown = sorted(set(options) - set(_GENERATE_KEYS))
    if unknown:
        known = ", ".join(_GENERATE_KEYS)
        named = ", ".join(repr(key)[:40] for key in unknown[:5])
        raise InvalidRequest(f"unknown field(s): {named}; known: {known}")
    prefix, domain, ttl = options.get("prefix"), options.get("domain"), options.get("ttl")
    for key in ("prefix", "domain", "address"):
        if key in options and not isinstance(options[key], str):
            raise InvalidRequest(f"{key} must be a string")
    if "ttl" in options and (isinstance(ttl, bool) or not isinstance(ttl, int | float)):
        raise InvalidRequest("ttl must be a number of seconds")
    return prefix, domain, None if ttl is None else float(ttl), options.get("address")
