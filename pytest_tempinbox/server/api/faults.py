"""The API's faults: ``GET``, ``POST`` and ``DELETE /api/faults/{email}``.

A test queues the faults an inbox's next deliveries meet (see
:mod:`pytest_tempinbox.server.store.faults`), reads them and clears them. No web
framework is imported here.
"""

from __future__ import annotations

from ...errors import InvalidRequest
from ..store.faults import read_fault
from .endpoints import Reply, encode_json, json_body
from .request import Request

__all__ = ["add_fault", "clear_faults", "faults"]


async def add_fault(request: Request) -> Reply:
    """``POST /api/faults/{email}``: queue the fault the body describes; answer it as queued."""
    store, email = request.store, request.args["email"]
    store.get(email)  # an unknown inbox is a 404 before a bad body is a 400
    options = json_body(request.body)
    if options is None:
        raise InvalidRequest("the request body must be a JSON object describing the fault")
    fault = read_fault(options)
    store.add_fault(email, fault)
    return Reply(201, encode_json(fault.to_json()))


async def faults(request: Request) -> Reply:
    """``GET /api/faults/{email}``: the pending faults, first to apply first."""
    pending = request.store.pending_faults(request.args["email"])
    return Reply(200, encode_json([fault.to_json() for fault in pending]))


async def clear_faults(request: Request) -> Reply:
    """``DELETE /api/faults/{email}``: drop the pending faults."""
    store = request.store
    address = store.get(request.args["email"]).address
    cleared = store.clear_faults(address)
    return Reply(200, encode_json({"email": address, "cleared": cleared}))
