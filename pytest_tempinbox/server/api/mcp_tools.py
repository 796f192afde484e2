"""The MCP endpoint's tools: what an agent may call, each answered by the API's own endpoints.

The HTTP app serves these tools at ``/mcp`` with the MCP SDK
(:mod:`pytest_tempinbox.server.http.mcp_endpoint`, the ``mcp`` extra);
this module knows nothing of MCP's wire: it lists the tools (:data:`TOOLS`,
each a name, a description and a JSON Schema of its arguments) and runs one
(:meth:`Tools.call`) by making the :class:`~.request.Request` of the API route
that does the same and awaiting that route's endpoint, guarded as the HTTP app
guards it (with tenants, the caller's token and its own inboxes only). So a
tool validates, waits and fails exactly as the API does: a problem document's
``detail`` becomes the tool's error (:class:`ToolError`) word for word. The
messages a tool returns are read with the parser's pickers, as
:meth:`~pytest_tempinbox.models.Message.link` and
:meth:`~pytest_tempinbox.models.Message.code` read them. No web framework is
imported here.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ...errors import MailAssertionError, TempInboxError
from ...limits import MAX_FILTER_LENGTH, MAX_WAIT
from ...models import Message
from ...tenants import Tenants
from ...values import Link
from ..store.protocol import InboxStore
from .endpoints import Reply, error_reply
from .request import Request
from .routes import ROUTES, Endpoint
from .settings import ApiSettings
from .tenancy import guarded

__all__ = ["DEFAULT_WAIT", "TOOLS", "ToolError", "Tools"]

DEFAULT_WAIT = 30.0
"""Seconds ``wait_for_message`` waits when not told (the long-poll's most is ``MAX_WAIT``)."""

_EMAIL = {"type": "string", "description": "The inbox's address, as generate_inbox gave it."}
_FILTER = {"type": "string", "maxLength": MAX_FILTER_LENGTH}


def _schema(properties: Mapping[str, Mapping[str, Any]], *required: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": dict(properties),
        "required": list(required),
        "additionalProperties": False,
    }


TOOLS: dict[str, tuple[str, dict[str, Any]]] = {
    "generate_inbox": (
        "Create a new disposable inbox and return its address (email). Mail sent to that "
        "address over SMTP lands in it.",
        _schema(
            {
                "prefix": {"type": "string", "description": "The address's local part starts so."},
                "domain": {"type": "string", "description": "One of the server's domains."},
                "ttl": {
                    "type": "number",
                    "description": "Seconds the inbox lives (default: the server's inbox TTL).",
                },
            }
        ),
    ),
    "wait_for_message": (
        "Wait until a message arrives in an inbox (or one is there already) that passes every "
        "filter given, and return it read: subject, sender, text, links with their texts, the "
        "one-time code. Give after (a message id) to wait for a message newer than that one.",
        _schema(
            {
                "email": _EMAIL,
                "timeout": {
                    "type": "number",
                    "minimum": 0,
                    "maximum": MAX_WAIT,
                    "default": DEFAULT_WAIT,
                    "description": "Seconds to wait at most.",
                },
                "subject": {
                    **_FILTER,
                    "description": "The subject contains this (case-sensitive).",
                },
                "from": {**_FILTER, "description": "The From address contains this."},
                "text": {
                    **_FILTER,
                    "description": "The text or the HTML's visible text contains this.",
                },
                "subaddress": {**_FILTER, "description": "The message came to name+subaddress@."},
                "after": {"type": "string", "description": "Only messages newer than this id."},
            },
            "email",
        ),
    ),
    "read_message": (
        "Read one message of an inbox: subject, sender, recipients, text, its links with their "
        "texts, its one-time code. With link_text, also the one link whose text that is.",
        _schema(
            {
                "email": _EMAIL,
                "id": {"type": "string", "description": "The message's id."},
                "link_text": {"type": "string", "description": "Pick the link with this text."},
            },
            "email",
            "id",
        ),
    ),
    "list_messages": (
        "List the messages of an inbox, oldest first: id, subject, sender, when received.",
        _schema({"email": _EMAIL}, "email"),
    ),
    "delete_inbox": (
        "Delete an inbox and every message in it.",
        _schema({"email": _EMAIL}, "email"),
    ),
}
"""Each tool's description and JSON Schema of its arguments, by name."""


class ToolError(Exception):
    """A tool's failure, worded for the agent: a problem's ``detail``, or what went wrong."""


class Tools:
    """The tools of one server: its store, its settings, the routes' endpoints they call."""

    def __init__(self, store: InboxStore, settings: ApiSettings) -> None:
        self.store = store
        self.settings = settings
        tenants: Tenants | None = settings.config.tenants
        self._endpoints: dict[str, Mapping[str, Endpoint]] = {
            route.name: (
                route.endpoints
                if tenants is None
                else guarded(route.name, route.endpoints, tenants)
            )
            for route in ROUTES
            if route.name in {"generate", "messages", "message", "delete"}
        }

    async def call(
        self,
        name: str,
        arguments: Mapping[str, Any] | None,
        headers: Mapping[str, str],
        base_url: str,
    ) -> Any:
        """Run tool ``name`` for a caller whose HTTP request had ``headers``; its JSON result.

        Raises :class:`ToolError` for an unknown tool, bad arguments, or an API problem.
        """
        if name not in TOOLS:
            raise ToolError(f"no such tool: {name[:100]!r}; known: {', '.join(TOOLS)}")
        given = _checked(name, dict(arguments or {}))
        asked = _Call(self, headers, base_url)
        if name == "generate_inbox":
            return await asked.json("generate", "POST", {}, body=json.dumps(given).encode())
        if name == "delete_inbox":
            return await asked.json("delete", "DELETE", {"email": given["email"]})
        if name == "list_messages":
            listed = await asked.json("messages", "GET", {"email": given["email"]})
            return {"messages": [_summary(item) for item in listed]}
        if name == "read_message":
            found = await asked.json("message", "GET", {"email": given["email"], "id": given["id"]})
            return read(found, given.get("link_text"))
        seconds = given.get("timeout", DEFAULT_WAIT)
        query = {key: str(value) for key, value in given.items() if key not in {"email", "timeout"}}
        query["wait"] = str(seconds)
        listed = await asked.json("messages", "GET", {"email": given["email"]}, query)
        if not listed:
            raise ToolError(_nothing_arrived(given, seconds))
        return read(listed[0])


class _Call:
    """The requests of one tool call, each to a route's endpoint, as the HTTP app makes them."""

    def __init__(self, tools: Tools, headers: Mapping[str, str], base_url: str) -> None:
        self.tools, self.headers, self.base_url = tools, headers, base_url

    async def json(
        self,
        route: str,
        method: str,
        args: Mapping[str, str],
        query: Mapping[str, str] | None = None,
        body: bytes = b"",
    ) -> Any:
        tools = self.tools
        asked = Request(
            tools.store, args, query or {}, body, self.base_url, tools.settings, self.headers
        )
        try:
            reply: Reply = await tools._endpoints[route][method](asked)
        except TempInboxError as exc:
            reply = error_reply(exc)
        answer = json.loads(reply.body)
        if reply.status >= 400:
            raise ToolError(answer["detail"])
        return answer


def read(data: Mapping[str, Any], link_text: str | None = None) -> dict[str, Any]:
    """A message's JSON (as the API serves it) read for an agent.

    Its summary, text and HTML, the links with their texts (an HTML anchor's
    visible text; None for a URL in plain text), the one-time code as
    :meth:`~pytest_tempinbox.models.Message.code` picks it (None when it finds
    none or cannot tell, with ``code_problem`` saying why) and the candidates
    (``codes``). With ``link_text``, ``link`` is the one URL
    :meth:`~pytest_tempinbox.models.Message.link` picks for that text, or
    :class:`ToolError` with its failure message.
    """
    message = Message.from_json(data)
    links = message.link_details or tuple(Link(url, None, "text") for url in message.links)
    read = {
        **_summary(data),
        "cc": data["cc"],
        "text": message.text,
        "html": message.html,
        "links": _distinct(links),
        "codes": list(message.codes),
        "attachments": [
            {"filename": item.filename, "content_type": item.content_type, "size": item.size}
            for item in message.attachments
        ],
    }
    try:
        read["code"], read["code_problem"] = message.code(), None
    except MailAssertionError as exc:
        read["code"], read["code_problem"] = None, str(exc)
    if link_text is not None:
        try:
            read["link"] = message.link(link_text)
        except MailAssertionError as exc:
            raise ToolError(str(exc)) from None
    return read


def _distinct(links: tuple[Link, ...]) -> list[dict[str, str | None]]:
    """The links' distinct URLs in order, each with its first anchor text (as ``link()`` counts)."""
    texts: dict[str, str | None] = {}
    for link in links:
        if texts.get(link.url) is None:
            texts[link.url] = link.text
    return [{"url": url, "text": text} for url, text in texts.items()]


def _summary(data: Mapping[str, Any]) -> dict[str, Any]:
    # The sender and recipients as the API gives them: {"name", "email"} each.
    return {key: data[key] for key in ("id", "inbox", "subject", "from", "to", "received_at")}


def _nothing_arrived(given: Mapping[str, Any], seconds: float) -> str:
    wanted = [
        f"{key}={given[key]!r}" for key in ("subject", "from", "text", "subaddress") if key in given
    ]
    newer = f" newer than {given['after']}" if "after" in given else ""
    which = f"no message{newer}" + (f" with {', '.join(wanted)}" if wanted else "")
    return f"{which} arrived in {given['email']} within {seconds:g} s"


_TYPES = {"string": (str,), "number": (int, float)}


def _checked(name: str, given: dict[str, Any]) -> dict[str, Any]:
    """The arguments of tool ``name`` if they fit its schema; else :class:`ToolError`.

    Only the types: the values are the API's to judge, in its own words.
    """
    schema = TOOLS[name][1]
    known: dict[str, Any] = schema["properties"]
    unknown = sorted(set(given) - set(known))
    if unknown:
        named = ", ".join(repr(key)[:40] for key in unknown[:5])
        raise ToolError(f"unknown argument(s): {named}; known: {', '.join(known) or 'none'}")
    for key in schema["required"]:
        if key not in given:
            raise ToolError(f"{key} is required")
    for key, value in given.items():
        kind = known[key]["type"]
        if isinstance(value, bool) or not isinstance(value, _TYPES[kind]):
            raise ToolError(f"{key} must be a {kind}")
    return given
