"""The OpenAPI 3.1 document that ``GET /api/openapi.json`` serves.

Written by hand, next to nothing else, so that it reads like the API reference;
a test checks that every route of the app is in it and the other way round.
The module is long because it is a data document: a few hundred lines of
schemas and descriptions of each route, which no code could derive from the
route table (:mod:`pytest_tempinbox.server.api.routes`). The problem codes come from
the one table of them, :data:`pytest_tempinbox.errors.PROBLEMS`.
"""

from __future__ import annotations

from typing import Any

from ..errors import INTERNAL_ERROR, PROBLEMS
from ..limits import (
    MAX_FAULT_DELAY,
    MAX_FAULT_MESSAGE,
    MAX_FAULT_TIMES,
    MAX_FAULTS_PER_INBOX,
    MAX_FILTER_LENGTH,
    MAX_STREAMS,
    MAX_STREAMS_PER_INBOX,
    MAX_TTL,
)
from .store.refusals import MAX_REFUSALS, MAX_SIMILAR_TO, REFUSAL_MAX_AGE, SIMILAR

__all__ = ["openapi_document"]

_NULLABLE_STRING = {"type": ["string", "null"]}
_TIMESTAMP = {"type": "string", "format": "date-time"}


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _problem(description: str) -> dict[str, Any]:
    return {
        "description": description,
        "content": {"application/problem+json": {"schema": _ref("Problem")}},
    }


def _json(description: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


_EMAIL = {
    "name": "email",
    "in": "path",
    "required": True,
    "description": "An inbox's address (matched case-insensitively; UTF-8 percent-encoded, an "
    "IDN domain in either form). A sub-address `name+detail@domain` names no inbox (404): "
    "read `name@domain` with `subaddress=detail`.",
    "schema": {"type": "string", "maxLength": 254},
}
_ID = {
    "name": "id",
    "in": "path",
    "required": True,
    "description": "A message id, as in the message's `id`.",
    "schema": {"type": "string"},
}
_MESSAGE_ID = {"type": "string", "pattern": "^[0-9a-f]{20,40}$"}
# OpenAPI 3.1 has the schema of an event stream describe each event, as an SSE
# client reads it: its type, its id, and its data, here a line of JSON.
_EVENT = {
    "type": "object",
    "required": ["event", "data"],
    "properties": {
        "event": {"enum": ["message", "deleted"]},
        "id": {"type": "string"},
        "data": {"type": "string"},
    },
    "oneOf": [
        {
            "required": ["id"],
            "properties": {
                "event": {"const": "message"},
                "data": {
                    "contentMediaType": "application/json",
                    "contentSchema": _ref("MessageSummary"),
                },
            },
        },
        {
            "properties": {
                "event": {"const": "deleted"},
                "data": {
                    "contentMediaType": "application/json",
                    "contentSchema": {
                        "type": "object",
                        "required": ["email"],
                        "properties": {"email": {"type": "string"}},
                    },
                },
            },
        },
    ],
}
# RFC 5322 atext, less "/" and "+", and RFC 6532's UTF-8: a chosen address's local part.
_ATOM = "(?:[A-Za-z0-9!#$%&'*=?^_`{|}~-]|[^\\x00-\\x7f])+"
_SUBADDRESS_FILTER_TEXT = (
    "Only messages that came through this sub-address: sent to `name+subaddress@domain` "
    "(RFC 5233), which the inbox `name@domain` receives; compared in any case (ASCII)."
)


def _filter(name: str, description: str) -> dict[str, Any]:
    return {
        "name": name,
        "in": "query",
        "required": False,
        "description": f"{description} With `wait`, the request is held until a message "
        "passing every filter arrives. An empty value is no filter.",
        "schema": {"type": "string", "maxLength": MAX_FILTER_LENGTH},
    }


_BAD_ADDRESS = _problem("The path segment is not an email address (`invalid_address`).")
_NO_INBOX = _problem("No live inbox at this address (`inbox_not_found`).")
_NO_MESSAGE = _problem(
    "No live inbox (`inbox_not_found`) or no such message (`message_not_found`)."
)

_SCHEMAS: dict[str, Any] = {
    "Refusal": {
        "type": "object",
        "description": "A recipient refused at RCPT TO.",
        "required": ["at", "address", "reply", "client_ip", "helo"],
        "properties": {
            "at": _TIMESTAMP,
            "address": {"type": "string", "description": "The recipient, as the client wrote it."},
            "reply": {"type": "string", "description": "The reply's text, after `550 5.1.1`."},
            "client_ip": _NULLABLE_STRING,
            "helo": {
                "type": ["string", "null"],
                "description": "The name the client gave in EHLO or HELO.",
            },
            "similarity": {
                "type": "number",
                "minimum": 0,
                "maximum": 1,
                "description": "With `similar_to`: how alike the two addresses are.",
            },
        },
    },
    "Problem": {
        "type": "object",
        "description": "An RFC 9457 problem document.",
        "required": ["type", "title", "status", "detail", "code"],
        "properties": {
            "type": {"type": "string"},
            "title": {"type": "string"},
            "status": {"type": "integer"},
            "detail": {"type": "string"},
            "code": {
                "type": "string",
                "description": "A stable token: "
                + ", ".join(code for code in PROBLEMS if code != INTERNAL_ERROR)
                + ".",
            },
        },
    },
    "Address": {
        "type": "object",
        "required": ["name", "email"],
        "properties": {"name": _NULLABLE_STRING, "email": {"type": "string"}},
    },
    "Link": {
        "type": "object",
        "required": ["url", "text", "source"],
        "properties": {
            "url": {"type": "string"},
            "text": {
                "type": ["string", "null"],
                "description": "The anchor's visible text, white space collapsed (else the alt "
                "text of its image); null for a URL written in the text body.",
            },
            "source": {"enum": ["html", "text"]},
        },
    },
    "Attachment": {
        "type": "object",
        "required": ["index", "filename", "content_type", "size", "content_id", "inline"],
        "properties": {
            "index": {"type": "integer", "minimum": 0},
            "filename": _NULLABLE_STRING,
            "content_type": {"type": "string"},
            "size": {"type": "integer", "minimum": 0},
            "content_id": _NULLABLE_STRING,
            "inline": {"type": "boolean"},
        },
    },
    "Message": {
        "type": "object",
        "required": [
            "id",
            "inbox",
            "subaddress",
            "envelope",
            "message_id",
            "from",
            "to",
            "cc",
            "reply_to",
            "subject",
            "date",
            "received_at",
            "text",
            "html",
            "headers",
            "attachments",
            "links",
            "link_details",
            "codes",
            "size",
            "defects",
            "unsubscribe",
            "dkim",
        ],
        "properties": {
            "id": {"type": "string", "description": "Unique, URL-safe, sorts by arrival."},
            "inbox": {"type": "string", "description": "The address this copy was routed to."},
            "subaddress": {
                "type": ["string", "null"],
                "description": "The `detail` of the recipient `name+detail@domain` this copy "
                "came through (the first such recipient of the inbox's, in RCPT order); null "
                "when it came to the inbox's address itself.",
            },
            "envelope": {
                "type": "object",
                "required": ["mail_from", "rcpt_to"],
                "properties": {
                    "mail_from": {"type": "string", "description": '"" for the null sender.'},
                    "rcpt_to": {"type": "array", "items": {"type": "string"}},
                },
            },
            "message_id": _NULLABLE_STRING,
            "from": {"oneOf": [_ref("Address"), {"type": "null"}]},
            "to": {"type": "array", "items": _ref("Address")},
            "cc": {"type": "array", "items": _ref("Address")},
            "reply_to": {"type": "array", "items": _ref("Address")},
            "subject": {"type": "string"},
            "date": {"type": ["string", "null"], "format": "date-time"},
            "received_at": _TIMESTAMP,
            "text": _NULLABLE_STRING,
            "html": _NULLABLE_STRING,
            "headers": {
                "type": "object",
                "additionalProperties": {"type": "array", "items": {"type": "string"}},
            },
            "attachments": {"type": "array", "items": _ref("Attachment")},
            "links": {"type": "array", "items": {"type": "string"}},
            "link_details": {
                "type": "array",
                "items": _ref("Link"),
                "description": "Every link in order of appearance, duplicates kept, with its text.",
            },
            "codes": {"type": "array", "items": {"type": "string"}},
            "size": {"type": "integer", "minimum": 0},
            "defects": {
                "type": "array",
                "items": {"type": "string"},
                "description": "Notes on what was malformed or left unread in the message.",
            },
            "unsubscribe": {"oneOf": [_ref("Unsubscribe"), {"type": "null"}]},
            "dkim": _ref("Dkim"),
        },
    },
    "Unsubscribe": {
        "type": "object",
        "description": "The List-Unsubscribe (RFC 2369) and List-Unsubscribe-Post (RFC 8058) "
        "headers read; null in a message without them.",
        "required": ["http", "mailto", "one_click", "post", "dkim_covers", "problems"],
        "properties": {
            "http": {"type": "array", "items": {"type": "string"}},
            "mailto": {"type": "array", "items": {"type": "string"}},
            "one_click": {
                "type": "boolean",
                "description": "An https link, List-Unsubscribe-Post: List-Unsubscribe=One-Click "
                "and, for a signed message, a DKIM signature covering both headers.",
            },
            "post": _NULLABLE_STRING,
            "dkim_covers": {"type": ["boolean", "null"]},
            "problems": {"type": "array", "items": {"type": "string"}},
        },
    },
    "Dkim": {
        "type": "object",
        "description": "The DKIM signature verified with the server's keys (never real DNS).",
        "required": ["result", "domain", "selector", "reason"],
        "properties": {
            "result": {"enum": ["pass", "fail", "none"]},
            "domain": _NULLABLE_STRING,
            "selector": _NULLABLE_STRING,
            "reason": _NULLABLE_STRING,
        },
    },
    "HtmlCompatibility": {
        "type": "object",
        "required": [
            "score",
            "partial",
            "unsupported",
            "features",
            "used",
            "nodes",
            "clients",
            "source",
        ],
        "properties": {
            "score": {"type": "number", "description": "Percent supported."},
            "partial": {"type": "number"},
            "unsupported": {"type": "number"},
            "features": {"type": "array", "items": _ref("HtmlFeature")},
            "used": {"type": "object", "additionalProperties": {"type": "integer"}},
            "nodes": {"type": "integer"},
            "clients": {"type": "array", "items": {"type": "string"}},
            "source": {"type": "string"},
        },
    },
    "HtmlFeature": {
        "type": "object",
        "required": [
            "slug",
            "title",
            "url",
            "kind",
            "score",
            "loss",
            "tested",
            "unsupported",
            "partial",
            "found",
        ],
        "properties": {
            "slug": {"type": "string"},
            "title": {"type": "string"},
            "url": {"type": "string"},
            "kind": {"type": "string"},
            "score": {"type": "number"},
            "loss": {"type": "number"},
            "tested": {"type": "integer"},
            "unsupported": {"type": "array", "items": {"type": "string"}},
            "partial": {"type": "array", "items": {"type": "string"}},
            "found": {"type": "integer"},
        },
    },
    "LinkReport": {
        "type": "object",
        "required": ["ok", "results", "skipped", "ignored"],
        "properties": {
            "ok": {"type": "boolean"},
            "results": {"type": "array", "items": _ref("LinkResult")},
            "skipped": {"type": "array", "items": {"type": "string"}},
            "ignored": {"type": "array", "items": {"type": "string"}},
        },
    },
    "LinkResult": {
        "type": "object",
        "required": ["url", "ok", "status", "method", "redirects", "error", "elapsed"],
        "properties": {
            "url": {"type": "string"},
            "ok": {"type": "boolean"},
            "status": {"type": ["integer", "null"]},
            "method": {"enum": ["HEAD", "GET", None]},
            "redirects": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["status", "location"],
                    "properties": {
                        "status": {"type": "integer"},
                        "location": {"type": "string"},
                    },
                },
            },
            "error": _NULLABLE_STRING,
            "elapsed": {"type": "number"},
        },
    },
    "SpamReport": {
        "type": "object",
        "required": ["score", "threshold", "rules", "version"],
        "properties": {
            "score": {"type": "number"},
            "threshold": {"type": "number"},
            "rules": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["name", "score", "description"],
                    "properties": {
                        "name": {"type": "string"},
                        "score": {"type": "number"},
                        "description": {"type": "string"},
                    },
                },
            },
            "version": _NULLABLE_STRING,
        },
    },
    "Fault": {
        "type": "object",
        "description": "A pending fault; also a body that adds it again.",
        "required": ["stage", "times"],
        "properties": {
            "stage": {"enum": ["rcpt", "data"]},
            "code": {"type": "integer"},
            "message": {"type": "string"},
            "delay": {"type": "number"},
            "disconnect": {"const": True},
            "times": {"type": "integer", "minimum": 1},
        },
    },
    "MessageSummary": {
        "type": "object",
        "description": "The data of a `message` event of `GET /api/events/{email}`.",
        "required": ["id", "from", "subject", "subaddress", "received_at"],
        "properties": {
            "id": {"type": "string"},
            "from": {"oneOf": [_ref("Address"), {"type": "null"}]},
            "subject": {"type": "string"},
            "subaddress": _NULLABLE_STRING,
            "received_at": _TIMESTAMP,
        },
    },
    "GeneratedInbox": {
        "type": "object",
        "required": ["email", "created_at", "expires_at", "messages_url"],
        "properties": {
            "email": {"type": "string"},
            "created_at": _TIMESTAMP,
            "expires_at": {"type": ["string", "null"], "format": "date-time"},
            "messages_url": {"type": "string"},
        },
    },
}

_PATHS: dict[str, Any] = {
    "/api/generate": {
        "post": {
            "summary": "Create a brand new temporary address.",
            "requestBody": {
                "required": False,
                "content": {
                    "application/json": {
                        "schema": {
                            "type": "object",
                            "additionalProperties": False,
                            "properties": {
                                "prefix": {
                                    "type": "string",
                                    "pattern": "^(?!.*\\.\\.)(?:[a-z0-9_-]|[^\\x00-\\x7f])"
                                    "(?:[a-z0-9._-]|[^\\x00-\\x7f]){0,31}$",
                                    "description": "Starts the local part; no '..', no '+'. "
                                    "Letters and digits beyond ASCII make an address that "
                                    "needs SMTPUTF8.",
                                },
                                "domain": {
                                    "type": "string",
                                    "description": "One of the server's domains.",
                                },
                                "ttl": {
                                    "type": "number",
                                    "exclusiveMinimum": 0,
                                    "maximum": MAX_TTL,
                                    "description": "Seconds the inbox lives (default: the"
                                    " server's inbox TTL); then it is gone as if deleted.",
                                },
                                "address": {
                                    "type": "string",
                                    "maxLength": 254,
                                    "pattern": f"^{_ATOM}(\\.{_ATOM})*@[^@\\s]+$",
                                    "description": "Create exactly this inbox (lowercased) "
                                    "instead of a brand new address: a local part of at most "
                                    "64 octets of dot-atom characters or UTF-8 (no quoted local "
                                    "part, no '/', no '+': that makes a sub-address), "
                                    "at one of the server's domains. Not with `prefix` or "
                                    "`domain`.",
                                },
                            },
                        }
                    }
                },
            },
            "responses": {
                "201": _json("The new inbox.", _ref("GeneratedInbox")),
                "400": _problem(
                    "The body is not a valid request (`invalid_request`), or its `address` "
                    "is not one that can be chosen (`invalid_address`)."
                ),
                "409": _problem("A live inbox has the chosen `address` (`address_taken`)."),
                "413": _problem("The body is over 64 KiB (`payload_too_large`)."),
            },
        }
    },
    "/api/messages/{email}": {
        "get": {
            "summary": "Every message the inbox received, oldest first.",
            "parameters": [
                _EMAIL,
                {
                    "name": "wait",
                    "in": "query",
                    "required": False,
                    "description": "Long-poll: hold the request up to this many seconds "
                    "until a message (after the cursor) is there.",
                    "schema": {"type": "number", "minimum": 0, "maximum": 60},
                },
                {
                    "name": "after",
                    "in": "query",
                    "required": False,
                    "description": "Only messages received after the message with this id.",
                    "schema": {"type": "string"},
                },
                _filter(
                    "subject",
                    "Only messages whose subject contains this text, case-sensitively.",
                ),
                _filter(
                    "from",
                    "Only messages whose From address (not its display name) contains this "
                    "text, case-insensitively.",
                ),
                _filter(
                    "text",
                    "Only messages whose text body, or HTML body's visible text (tags "
                    "dropped, entities decoded), contains this text, case-sensitively, every "
                    "run of white space on either side read as one space.",
                ),
                _filter("subaddress", _SUBADDRESS_FILTER_TEXT),
            ],
            "responses": {
                "200": _json("The messages.", {"type": "array", "items": _ref("Message")}),
                "400": _problem("Bad address, `wait`, `after` or filter."),
                "404": _NO_INBOX,
                "414": _problem("Path and query over 16 KiB (`uri_too_long`)."),
            },
        }
    },
    "/api/messages/{email}/{id}": {
        "get": {
            "summary": "One message.",
            "parameters": [_EMAIL, _ID],
            "responses": {
                "200": _json("The message.", _ref("Message")),
                "400": _BAD_ADDRESS,
                "404": _NO_MESSAGE,
            },
        }
    },
    "/api/messages/{email}/{id}/raw": {
        "get": {
            "summary": "The message exactly as received in DATA.",
            "parameters": [_EMAIL, _ID],
            "responses": {
                "200": {
                    "description": "The raw message.",
                    "content": {"message/rfc822": {"schema": {"type": "string"}}},
                },
                "400": _BAD_ADDRESS,
                "404": _NO_MESSAGE,
            },
        }
    },
    "/api/messages/{email}/{id}/attachments/{index}": {
        "get": {
            "summary": "The decoded bytes of one attachment.",
            "parameters": [
                _EMAIL,
                _ID,
                {
                    "name": "index",
                    "in": "path",
                    "required": True,
                    "description": "0-based, as listed in the message's `attachments`.",
                    "schema": {"type": "integer", "minimum": 0},
                },
            ],
            "responses": {
                "200": {
                    "description": "The attachment, with its content type and a "
                    "Content-Disposition naming the file.",
                    "content": {"*/*": {"schema": {"type": "string", "format": "binary"}}},
                },
                "400": _BAD_ADDRESS,
                "404": _problem("No such inbox, message or attachment."),
            },
        }
    },
    "/api/messages/{email}/{id}/html-check": {
        "get": {
            "summary": "How well email clients support the message's HTML (caniemail.com's data).",
            "description": "Each feature the HTML uses that some client does not fully support, "
            "worst first, and an overall percentage weighted as Mailpit weighs it.",
            "parameters": [
                _EMAIL,
                _ID,
                {
                    "name": "clients",
                    "in": "query",
                    "description": "Weigh only these clients, comma-separated: a family "
                    "(`gmail`), a platform (`outlook.windows`) or a glob (`*.ios`).",
                    "schema": {"type": "string"},
                },
            ],
            "responses": {
                "200": _json("The report.", _ref("HtmlCompatibility")),
                "400": _problem("Bad address, or `clients` names no known client."),
                "404": _problem("No such inbox or message, or the message has no HTML body."),
            },
        }
    },
    "/api/messages/{email}/{id}/link-check": {
        "get": {
            "summary": "Request every http(s) link and image of the message; report each.",
            "description": "HEAD, or GET where HEAD is refused; redirects followed and "
            "reported; at most 8 at a time. The server makes the requests.",
            "parameters": [
                _EMAIL,
                _ID,
                {
                    "name": "timeout",
                    "in": "query",
                    "description": "Seconds each request may take (default 5, at most 30).",
                    "schema": {"type": "number", "exclusiveMinimum": 0, "maximum": 30},
                },
                {
                    "name": "ignore",
                    "in": "query",
                    "description": "Parts of URLs to leave out, comma-separated.",
                    "schema": {"type": "string"},
                },
            ],
            "responses": {
                "200": _json("The report.", _ref("LinkReport")),
                "400": _problem("Bad address or `timeout`."),
                "403": _problem("Link checks are off on this server (`link_checks_off`)."),
                "404": _NO_MESSAGE,
            },
        }
    },
    "/api/messages/{email}/{id}/spam-check": {
        "get": {
            "summary": "SpamAssassin's score of the message and the rules that fired.",
            "description": "Run on the server with SpamAssassin's shipped rules and no "
            "network tests; about a second.",
            "parameters": [_EMAIL, _ID],
            "responses": {
                "200": _json("The report.", _ref("SpamReport")),
                "400": _BAD_ADDRESS,
                "404": _NO_MESSAGE,
                "501": _problem("SpamAssassin is not installed (`spamassassin_missing`)."),
                "503": _problem("SpamAssassin failed or timed out (`spam_check_failed`)."),
            },
        }
    },
    "/api/delete/{email}": {
        "delete": {
            "summary": "Destroy the address's routing session and purge its mail.",
            "parameters": [_EMAIL],
            "responses": {
                "200": _json(
                    "The inbox is gone.",
                    {
                        "type": "object",
                        "required": ["email", "deleted", "purged"],
                        "properties": {
                            "email": {"type": "string"},
                            "deleted": {"const": True},
                            "purged": {"type": "integer", "minimum": 0},
                        },
                    },
                ),
                "400": _BAD_ADDRESS,
                "404": _NO_INBOX,
            },
        }
    },
    "/api/faults/{email}": {
        "post": {
            "summary": "Inject a fault into the next deliveries to this address.",
            "parameters": [_EMAIL],
            "requestBody": {
                "required": True,
                "content": {
                    "application/json": {
                        "schema": {
                            "type": "object",
                            "additionalProperties": False,
                            "required": ["stage"],
                            "dependentRequired": {"message": ["code"]},
                            "oneOf": [
                                {"required": ["code"]},
                                {"required": ["delay"]},
                                {"required": ["disconnect"]},
                            ],
                            "properties": {
                                "stage": {
                                    "enum": ["rcpt", "data"],
                                    "description": "At this address's RCPT TO, or at the end "
                                    "of DATA (the one reply for every recipient).",
                                },
                                "code": {
                                    "type": "integer",
                                    "anyOf": [
                                        {"minimum": 400, "maximum": 459},
                                        {"minimum": 500, "maximum": 559},
                                    ],
                                    "description": "An SMTP error reply code, 4yz or 5yz.",
                                },
                                "message": {
                                    "type": "string",
                                    "pattern": "^[ -~]+$",
                                    "maxLength": MAX_FAULT_MESSAGE,
                                    "description": "The reply's text (only with `code`).",
                                },
                                "delay": {
                                    "type": "number",
                                    "exclusiveMinimum": 0,
                                    "maximum": MAX_FAULT_DELAY,
                                    "description": "Seconds to hold the answer.",
                                },
                                "disconnect": {
                                    "const": True,
                                    "description": "Close the connection without an answer.",
                                },
                                "times": {
                                    "type": "integer",
                                    "minimum": 1,
                                    "maximum": MAX_FAULT_TIMES,
                                    "default": 1,
                                    "description": "How many deliveries it applies to.",
                                },
                            },
                        }
                    }
                },
            },
            "responses": {
                "201": _json("The fault, as queued.", _ref("Fault")),
                "400": _problem("Bad address (`invalid_address`) or body (`invalid_request`)."),
                "404": _NO_INBOX,
                "409": _problem(
                    f"The inbox holds {MAX_FAULTS_PER_INBOX} pending faults (`too_many_faults`)."
                ),
                "413": _problem("The body is over 64 KiB (`payload_too_large`)."),
            },
        },
        "get": {
            "summary": "The pending faults, first to apply first.",
            "parameters": [_EMAIL],
            "responses": {
                "200": _json("The faults.", {"type": "array", "items": _ref("Fault")}),
                "400": _BAD_ADDRESS,
                "404": _NO_INBOX,
            },
        },
        "delete": {
            "summary": "Drop the pending faults.",
            "parameters": [_EMAIL],
            "responses": {
                "200": _json(
                    "The faults are gone.",
                    {
                        "type": "object",
                        "required": ["email", "cleared"],
                        "properties": {
                            "email": {"type": "string"},
                            "cleared": {"type": "integer", "minimum": 0},
                        },
                    },
                ),
                "400": _BAD_ADDRESS,
                "404": _NO_INBOX,
            },
        },
    },
    "/api/events/{email}": {
        "get": {
            "summary": "Server-Sent Events: the inbox's deliveries as they come.",
            "description": "A `message` event per delivery (data: a MessageSummary, `id:` the "
            "message id), a `deleted` event when the inbox is deleted or expires (then the "
            "stream ends), and a `: heartbeat` comment line after each 15 s of silence.",
            "parameters": [
                _EMAIL,
                {
                    "name": "after",
                    "in": "query",
                    "required": False,
                    "description": "Resume: first the messages received after the message "
                    "with this id. Without it, only new deliveries.",
                    "schema": _MESSAGE_ID,
                },
                {
                    "name": "Last-Event-ID",
                    "in": "header",
                    "required": False,
                    "description": "As `after`, and first: what a reconnecting EventSource sends.",
                    "schema": _MESSAGE_ID,
                },
                {
                    "name": "subaddress",
                    "in": "query",
                    "required": False,
                    "description": f"{_SUBADDRESS_FILTER_TEXT} An empty value is no filter.",
                    "schema": {"type": "string", "maxLength": MAX_FILTER_LENGTH},
                },
            ],
            "responses": {
                "200": {
                    "description": "The event stream, open until the inbox goes or the server "
                    "stops.",
                    "content": {"text/event-stream": {"schema": _EVENT}},
                },
                "400": _problem("Bad address, `after` or `Last-Event-ID`."),
                "404": _NO_INBOX,
                "429": _problem(
                    f"{MAX_STREAMS_PER_INBOX} streams of this inbox, or {MAX_STREAMS} in all, "
                    "are open (`too_many_streams`)."
                ),
            },
        }
    },
    "/api/info": {
        "get": {
            "summary": "The server's version, SMTP listener, domains and limits.",
            "responses": {
                "200": _json(
                    "What a client needs to know.",
                    {
                        "type": "object",
                        "required": ["version", "smtp", "domains", "limits", "stats"],
                        "properties": {
                            "version": {"type": "string"},
                            "smtp": {
                                "type": "object",
                                "required": ["host", "port", "tls", "auth"],
                                "properties": {
                                    "host": {"type": "string"},
                                    "port": {"type": "integer"},
                                    "tls": {
                                        "enum": ["off", "starttls", "required", "implicit"],
                                        "description": "The TLS mode of the SMTP port.",
                                    },
                                    "auth": {
                                        "enum": ["any", "none", "password"],
                                        "description": "The AUTH mode: any credentials, "
                                        "AUTH not offered, or one user name and password "
                                        "(never reported).",
                                    },
                                },
                            },
                            "domains": {"type": "array", "items": {"type": "string"}},
                            "limits": {
                                "type": "object",
                                "additionalProperties": {"type": ["number", "null"]},
                            },
                            "stats": {
                                "type": "object",
                                "required": [
                                    "inboxes",
                                    "messages",
                                    "stored_bytes",
                                    "evictions",
                                    "streams",
                                ],
                                "additionalProperties": {"type": "integer"},
                            },
                        },
                    },
                )
            },
        }
    },
    "/api/refused": {
        "get": {
            "summary": "The recipients the SMTP server refused lately, newest first.",
            "description": "Mail to an address that is no live inbox is refused at RCPT TO "
            f"with 550 5.1.1. The server remembers its last {MAX_REFUSALS} refusals, for "
            f"{REFUSAL_MAX_AGE / 60:g} minutes: ask for those like the address a test waits "
            "on, to see mail sent to a misspelt, deleted or expired address.",
            "parameters": [
                {
                    "name": "since",
                    "in": "query",
                    "required": False,
                    "description": "Only the refusals at or after this time (RFC 3339), "
                    "such as the `created_at` of an inbox.",
                    "schema": _TIMESTAMP,
                },
                {
                    "name": "similar_to",
                    "in": "query",
                    "required": False,
                    "description": "Only the refusals of addresses like this one, the most "
                    f"similar first (a `similarity` of {SIMILAR:g} or more: the likeness of "
                    "the local parts weighs three times that of the domains). An empty value "
                    "is no filter.",
                    "schema": {"type": "string", "maxLength": MAX_SIMILAR_TO},
                },
                {
                    "name": "limit",
                    "in": "query",
                    "required": False,
                    "description": "At most this many (default 100).",
                    "schema": {"type": "integer", "minimum": 1, "maximum": MAX_REFUSALS},
                },
            ],
            "responses": {
                "200": _json(
                    "The refusals.",
                    {"type": "array", "items": _ref("Refusal")},
                ),
                "400": _problem("Bad `since`, `similar_to` or `limit` (`invalid_request`)."),
            },
        }
    },
    "/api/ca.pem": {
        "get": {
            "summary": "The certificate of the CA that issued the SMTP listener's certificate.",
            "description": "A throwaway CA made when the server started; trust it to verify "
            "STARTTLS or implicit TLS.",
            "responses": {
                "200": {
                    "description": "The CA certificate, PEM-encoded.",
                    "content": {"application/x-pem-file": {"schema": {"type": "string"}}},
                },
                "404": _problem("TLS is off on this server (`tls_off`)."),
            },
        }
    },
    "/api/openapi.json": {
        "get": {
            "summary": "This document.",
            "responses": {"200": _json("The OpenAPI document.", {"type": "object"})},
        }
    },
    "/api/health": {
        "get": {
            "summary": "Whether the server's process answers (liveness).",
            "description": "The store is not asked: a store that is down does not make the "
            "process unhealthy.",
            "responses": {
                "200": _json(
                    "The process answers.",
                    {
                        "type": "object",
                        "required": ["status"],
                        "properties": {"status": {"const": "ok"}},
                    },
                )
            },
        }
    },
    "/api/ready": {
        "get": {
            "summary": "Whether the server takes mail and answers the API (readiness).",
            "description": "Ready when both listeners accept connections and the store answers.",
            "responses": {
                "200": _json(
                    "Ready.",
                    {
                        "type": "object",
                        "required": ["status"],
                        "properties": {"status": {"const": "ready"}},
                    },
                ),
                "503": _problem(
                    "The store does not answer (`store_unavailable`), or the SMTP listener "
                    "no longer accepts connections: the server is stopping (`shutting_down`)."
                ),
            },
        }
    },
    "/metrics": {
        "get": {
            "summary": "The server's metrics, in Prometheus's text format.",
            "description": "Outside `/api`, where Prometheus looks. Needs the `metrics` extra "
            "(prometheus_client): `pip install 'pytest-tempinbox[metrics]'`.",
            "responses": {
                "200": {
                    "description": "The metrics (text format 0.0.4).",
                    "content": {"text/plain": {"schema": {"type": "string"}}},
                },
                "404": _problem("prometheus_client is not installed (`not_found`)."),
            },
        }
    },
}


def openapi_document(version: str) -> dict[str, Any]:
    """Return the OpenAPI document of the ``/api`` routes and ``/metrics``, of ``version``."""
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "pytest-tempinbox",
            "version": version,
            "description": "Disposable email inboxes for automated email testing.",
        },
        "paths": _PATHS,
        "components": {"schemas": _SCHEMAS},
    }
