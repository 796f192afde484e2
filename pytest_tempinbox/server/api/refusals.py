"""The API's refusals: ``GET /api/refused``, the recipients refused lately (RCPT, DATA's end).

Answered at once, from any thread; a failing wait asks for them to explain
itself. No web framework is imported here.
"""

from __future__ import annotations

from ...errors import InvalidRequest
from ...models import parse_timestamp
from ..store.refusals import MAX_REFUSALS, MAX_SIMILAR_TO
from .endpoints import Reply, encode_json
from .request import Request

__all__ = ["refused"]

_DEFAULT_REFUSED = 100


def refused(request: Request, parse_limit: int | None = None) -> Reply:
    """``GET /api/refused``: the recipients refused lately, newest first.

    Those refused at ``RCPT TO`` (``stage`` ``"rcpt"``), and each recipient of
    a message refused at the end of DATA (``"data"``).

    ``since`` (RFC 3339) keeps those refused at or after it; ``similar_to`` an
    address keeps those like it, the most similar first; ``limit`` (1-1000,
    default 100) is how many at most. Answered at once, in any thread. On a
    server with tenants, only the refusals of SMTP sessions that logged in
    with the caller's tenant's credentials (``docs/tenants.md``).
    """
    query = request.query
    since, similar_to, limit = query.get("since"), query.get("similar_to"), query.get("limit")
    store = request.store
    moment = None
    if since is not None:
        try:
            moment = parse_timestamp(since)
        except ValueError:
            raise InvalidRequest("since must be an RFC 3339 timestamp") from None
    if similar_to is not None and len(similar_to) > MAX_SIMILAR_TO:
        raise InvalidRequest(f"similar_to may hold at most {MAX_SIMILAR_TO} characters")
    most = _limit_parameter(limit)
    found = store.refusals.find(
        since=moment, similar_to=similar_to or None, limit=most, tenant=request.tenant
    )
    return Reply(200, encode_json([refusal.to_json() for refusal in found]))


def _limit_parameter(text: str | None) -> int:
    if text is None:
        return _DEFAULT_REFUSED
    if not text.isascii() or not text.isdigit() or not 1 <= int(text) <= MAX_REFUSALS:
        raise InvalidRequest(f"limit must be a whole number from 1 to {MAX_REFUSALS}")
    return int(text)
