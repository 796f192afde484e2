"""The OpenAPI 3.1 document that ``GET /api/openapi.json`` serves, read from ``openapi.json``.

The document is data, written by hand in ``openapi.json`` beside this module so
that it reads like the API reference; a test checks that every route of the app
is in it and the other way round. Where a value has its one source in the code,
the file names it, ``${NAME}``, and this loader fills it in: a string that is
only a placeholder becomes the value itself (a number stays a number), one in a
text becomes the value written out (``0.6``, ``10``). The values are the limits
of :mod:`pytest_tempinbox.limits`, those of the refusal log
(:mod:`pytest_tempinbox.server.store.refusals`), the problem codes of the one table of
them, :data:`pytest_tempinbox.errors.PROBLEMS`, and the package's version.

The file keeps the path parameters and problem answers that many routes share
under ``components/parameters`` and ``components/responses``, once each; the
loader writes them out where they are referred to, so that the served document
gives every operation whole, with only ``components/schemas`` to look up.

The email providers' endpoints are listed from
:data:`~pytest_tempinbox.server.providers.ENDPOINTS`, under each of their
paths (``/providers/<name>/...``, and the origin's root for a provider in
``ROOTED``): each provider describes its operations and schemas in
``<name>.openapi.json`` beside its module (``{"paths": {path: {method:
operation}}, "schemas": {...}}``, paths as the provider writes them); an
endpoint its file does not describe is listed with an answer of any kind.

The routes import this module when the document is first asked for, and the
document is read once per version, from the file beside this module (a wheel
installs it there): ``importlib.resources`` would add more imports than the
read costs.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import INTERNAL_ERROR, PROBLEMS
from ..limits import (
    DEFAULT_MAX_STREAMS,
    DEFAULT_MAX_STREAMS_PER_INBOX,
    MAX_FAULT_DELAY,
    MAX_FAULT_MESSAGE,
    MAX_FAULT_TIMES,
    MAX_FAULTS_PER_INBOX,
    MAX_FILTER_LENGTH,
    MAX_TTL,
)
from .api.tickets import TICKET_SECONDS
from .providers import ENDPOINTS, PREFIX, ROOTED
from .store.refusals import MAX_REFUSALS, MAX_SIMILAR_TO, REFUSAL_MAX_AGE, SIMILAR

__all__ = ["DOCUMENT_FILE", "openapi_document"]

DOCUMENT_FILE = "openapi.json"
"""The data file, beside this module, with ``${NAME}`` where a value is filled in."""

_VALUES: dict[str, object] = {
    "MAX_FAULT_DELAY": MAX_FAULT_DELAY,
    "MAX_FAULT_MESSAGE": MAX_FAULT_MESSAGE,
    "MAX_FAULT_TIMES": MAX_FAULT_TIMES,
    "MAX_FAULTS_PER_INBOX": MAX_FAULTS_PER_INBOX,
    "MAX_FILTER_LENGTH": MAX_FILTER_LENGTH,
    "DEFAULT_MAX_STREAMS": DEFAULT_MAX_STREAMS,
    "DEFAULT_MAX_STREAMS_PER_INBOX": DEFAULT_MAX_STREAMS_PER_INBOX,
    "MAX_TTL": MAX_TTL,
    "MAX_REFUSALS": MAX_REFUSALS,
    "MAX_SIMILAR_TO": MAX_SIMILAR_TO,
    "REFUSAL_MAX_AGE_MINUTES": REFUSAL_MAX_AGE / 60,
    "SIMILAR": SIMILAR,
    "TICKET_SECONDS": TICKET_SECONDS,
    # A client never receives internal_error's code as a promise: it is left out.
    "PROBLEM_CODES": ", ".join(code for code in PROBLEMS if code != INTERNAL_ERROR),
}
_PLACEHOLDER = re.compile(r"\$\{(\w+)\}")
_SHARED = ("parameters", "responses")


@functools.cache
def openapi_document(version: str) -> dict[str, Any]:
    """Return the OpenAPI document of the ``/api`` routes, ``/metrics`` and the providers'.

    Read and filled in once per version: every call returns the same document,
    which the caller must not change.
    """
    document = json.loads(Path(__file__).with_name(DOCUMENT_FILE).read_text("utf-8"))
    _add_providers(document)
    _add_rate_limited(document)
    components = document["components"]
    shared = {
        f"#/components/{kind}/{name}": piece
        for kind in _SHARED
        for name, piece in components.pop(kind).items()
    }
    filled: dict[str, Any] = _fill(document, {**_VALUES, "VERSION": version}, shared)
    return filled


def _add_providers(document: dict[str, Any]) -> None:
    """List each provider endpoint of ENDPOINTS in ``document``, as its provider describes it."""
    schemas = document["components"]["schemas"]
    described: dict[str, dict[str, Any]] = {}
    for name, method, path, _ in ENDPOINTS:
        if name not in described:
            described[name] = _provider_file(name)
            for key, schema in described[name].get("schemas", {}).items():
                if key in schemas:
                    raise LookupError(f"{name}.openapi.json names the schema {key}, named already")
                schemas[key] = schema
        operation = described[name].get("paths", {}).get(path, {}).get(method.lower())
        if operation is None:
            operation = {
                "summary": f"{name}: the provider's {method} {path} (see docs/providers.md).",
                "responses": {"default": {"description": "The provider's answer."}},
            }
        for prefix in (f"{PREFIX}/{name}", *([""] if name in ROOTED else [])):
            document["paths"].setdefault(prefix + path, {})[method.lower()] = operation


def _add_rate_limited(document: dict[str, Any]) -> None:
    """Give every operation the ``429`` of the rate limits, beside a ``429`` of its own."""
    shared = document["components"]["responses"]["RateLimited"]
    for operations in document["paths"].values():
        for operation in operations.values():
            answers = operation.setdefault("responses", {})
            own = answers.get("429")
            if own is not None and "$ref" in own:  # a shared answer: a copy of it, told apart
                own = document["components"]["responses"][own["$ref"].rsplit("/", 1)[1]]
            if own is None:
                answers["429"] = {"$ref": "#/components/responses/RateLimited"}
            elif "rate_limited" not in own.get("description", ""):
                own = answers["429"] = {**own, "description": own.get("description", "")}
                own["description"] += " Or: " + shared["description"]
                own.setdefault("headers", shared["headers"])


def _provider_file(name: str) -> dict[str, Any]:
    """The provider's description of its endpoints, beside its module; empty without one."""
    path = Path(__file__).parent / "providers" / f"{name}.openapi.json"
    if not path.exists():
        return {}
    found: dict[str, Any] = json.loads(path.read_text("utf-8"))
    return found


def _fill(node: Any, values: Mapping[str, object], shared: Mapping[str, Any]) -> Any:
    """``node`` with its placeholders filled in and its shared parts written out."""
    if isinstance(node, dict):
        if node.get("$ref") in shared:
            return _fill(shared[node["$ref"]], values, shared)
        return {key: _fill(value, values, shared) for key, value in node.items()}
    if isinstance(node, list):
        return [_fill(item, values, shared) for item in node]
    if isinstance(node, str) and "${" in node:
        whole = _PLACEHOLDER.fullmatch(node)
        if whole:
            return _value(values, whole[1])
        return _PLACEHOLDER.sub(lambda match: _written(_value(values, match[1])), node)
    return node


def _value(values: Mapping[str, object], name: str) -> object:
    try:
        return values[name]
    except KeyError:
        raise LookupError(
            f"{DOCUMENT_FILE} names ${{{name}}}, which {__name__} does not fill in: "
            f"add it to _VALUES, or use one of {', '.join(values)}"
        ) from None


def _written(value: object) -> str:
    """A value as a sentence writes it: a float without a needless ``.0`` (``10``, ``0.6``)."""
    return f"{value:g}" if isinstance(value, float) else str(value)
