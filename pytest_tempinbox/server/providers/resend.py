"""Resend's ``POST /emails`` and ``POST /emails/batch``, answered as Resend does.

A send is accepted with ``200`` and ``{"id"}``; a batch (a JSON array of up
to 100 sends) with ``{"data": [{"id"}, ...]}``, the ids in the order of the
sends. A request Resend would refuse gets Resend's error body,
``{"statusCode", "name", "message"}``: ``422`` ``missing_required_field``
without ``from``, ``to`` or ``subject``, ``422`` ``invalid_attachment`` for an
attachment that is not base64 or a list of bytes (or names a ``path``: this
server fetches nothing), ``422`` ``validation_error`` otherwise, ``400``
``validation_error`` for a body that is not JSON. A batch is checked whole
before any of it is delivered. Tags are kept as the record's ``tags`` (their
names) and ``metadata`` (name to value); a ``template`` as its template id and
variables.
"""

from __future__ import annotations

import mimetypes
import uuid
from email.utils import parseaddr
from typing import Any

from ...values import ProviderRecord
from ..api.endpoints import Reply, encode_json
from ..api.request import Request
from .delivery import deliver
from .gate import bearer
from .send import (
    Mailbox,
    Part,
    Send,
    SendError,
    checked_address,
    decode_base64,
    header_pairs,
    parse_json,
)

__all__ = ["WRONG_KEY_STATUS", "credential", "emails", "emails_batch", "error_reply"]

MAX_RECIPIENTS = 50
"""Resend's limit on the recipients of one send (To, Cc and Bcc each)."""
MAX_BATCH = 100
"""Resend's limit on the sends of one batch."""
WRONG_KEY_STATUS = 403
"""Resend answers a key it does not know with 403 ``invalid_api_key`` (none at all: 401)."""
_NAMES = {
    401: "missing_api_key",
    403: "invalid_api_key",
    404: "not_found",
    405: "method_not_allowed",
    413: "validation_error",
    429: "rate_limit_exceeded",
    500: "application_error",
}


class _Refused(SendError):
    """A send Resend refuses under the error ``name``, with ``status``."""

    def __init__(self, message: str, name: str = "validation_error", status: int = 422) -> None:
        super().__init__(message)
        self.name = name
        self.status = status


async def emails(request: Request) -> Reply:
    """``POST /emails``: deliver one send; ``{"id"}``."""
    return await _answer(request, batch=False)


async def emails_batch(request: Request) -> Reply:
    """``POST /emails/batch``: deliver up to 100 sends; ``{"data": [{"id"}, ...]}`` in order."""
    return await _answer(request, batch=True)


async def _answer(request: Request, *, batch: bool) -> Reply:
    endpoint = "/emails/batch" if batch else "/emails"
    try:
        data = _json(request)
        items = _batch_items(data) if batch else [data]
        sends = [_read(item, endpoint, f"{n}." if batch else "") for n, item in enumerate(items)]
        ids: list[str] = []
        refused: list[str] = []
        delivered = 0
        config = request.server().config
        for send, record in sends:
            ids.append(str(uuid.uuid4()))
            delivery = await deliver(request.store, config, send, record, ids[-1])
            delivered += len(delivery.stored)
            refused += delivery.refused
    except _Refused as error:
        return error_reply(error.status, error.message, error.name)
    except SendError as error:
        return error_reply(422, error.message)
    if not delivered:
        shown = ", ".join(refused[:5]) + (", ..." if len(refused) > 5 else "")
        return error_reply(422, f"no recipient is a live inbox of this server: {shown}")
    if batch:
        return Reply(200, encode_json({"data": [{"id": id} for id in ids]}))
    return Reply(200, encode_json({"id": ids[0]}))


def error_reply(status: int, message: str, name: str | None = None) -> Reply:
    """Resend's error answer: ``{"statusCode", "name", "message"}``, with ``status``.

    ``name`` is Resend's error name; by default the one Resend gives that
    status (``missing_api_key`` for 401, ``invalid_api_key`` for 403,
    ``rate_limit_exceeded`` for 429, ...).
    """
    name = name or _NAMES.get(status, "application_error" if status >= 500 else "validation_error")
    return Reply(status, encode_json({"statusCode": status, "name": name, "message": message}))


def credential(request: Request) -> str | None:
    """The API key the request presents, as Resend reads it: ``Authorization: Bearer KEY``."""
    return bearer(request)


def _json(request: Request) -> object:
    content_type = request.headers.get("content-type", "")
    if content_type.split(";")[0].strip().lower() != "application/json":
        raise _Refused("the request body must be JSON, sent as application/json", status=400)
    try:
        return parse_json(request.body)
    except SendError as error:
        raise _Refused(error.message, status=400) from None


def _batch_items(data: object) -> list[object]:
    if not isinstance(data, list) or not data:
        raise _Refused("a batch is a JSON array of one to 100 emails")
    if len(data) > MAX_BATCH:
        raise _Refused(f"a batch may hold at most {MAX_BATCH} emails, not {len(data)}")
    return data


def _read(data: object, endpoint: str, at: str) -> tuple[Send, ProviderRecord]:
    """One send and its record; :class:`SendError` for what Resend would refuse."""
    if not isinstance(data, dict):
        raise _Refused(f"{at}the email must be a JSON object")
    for name in ("from", "to", "subject"):
        if data.get(name) in (None, "", []):
            raise _Refused(f"Missing `{name}` field.", "missing_required_field")
    template = data.get("template")
    template_id = template_data = None
    if template is not None:
        if not isinstance(template, dict) or not isinstance(template.get("id"), str):
            raise _Refused(f"{at}template must be an object with a string id")
        template_id, template_data = template["id"], template.get("variables")
    text, html = _text(data, "text", at), _text(data, "html", at)
    subject = _text(data, "subject", at)
    if text is None and html is None and template_id is None:
        raise _Refused("Missing `html` or `text` field.", "missing_required_field")
    if endpoint.endswith("/batch") and ("attachments" in data or "scheduled_at" in data):
        raise _Refused(f"{at}attachments and scheduled_at are not supported in a batch")
    tags = _tags(data.get("tags"), at)
    send = Send(
        sender=_mailboxes(data["from"], f"{at}from", single=True)[0],
        to=_mailboxes(data["to"], f"{at}to"),
        cc=_mailboxes(data.get("cc"), f"{at}cc"),
        bcc=_mailboxes(data.get("bcc"), f"{at}bcc"),
        reply_to=_mailboxes(data.get("reply_to"), f"{at}reply_to"),
        subject=subject or "",
        text=text,
        html=html,
        attachments=_attachments(data.get("attachments"), at),
        headers=header_pairs(data.get("headers"), f"{at}headers"),
    )
    options = {name: data[name] for name in ("scheduled_at",) if name in data}
    record = ProviderRecord(
        name="resend",
        endpoint=endpoint,
        template_id=template_id,
        template_data=template_data,
        tags=tuple(tags),
        metadata=tags,
        headers=dict(send.headers),
        options=options,
    )
    return send, record


def _text(data: dict[str, Any], name: str, at: str) -> str | None:
    value = data.get(name)
    if value is not None and not isinstance(value, str):
        raise _Refused(f"{at}{name} must be a string")
    return value


def _mailboxes(value: object, field: str, *, single: bool = False) -> tuple[Mailbox, ...]:
    """``"a@b"``, ``"Name <a@b>"`` or (but for ``from``) a list of them."""
    if value is None:
        return ()
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or (single and len(items) != 1):
        raise _Refused(f"{field} must be an email address" + ("" if single else " or a list"))
    if len(items) > MAX_RECIPIENTS:
        raise _Refused(f"{field} may hold at most {MAX_RECIPIENTS} addresses, not {len(items)}")
    found = []
    for item in items:
        if not isinstance(item, str):
            raise _Refused(f"{field} must hold strings")
        name, address = parseaddr(item)
        if not address or "\r" in item or "\n" in item:
            raise _Refused(f"Invalid `{field}` field: {item[:80]!r}")
        found.append((name, checked_address(address, field)))
    return tuple(found)


def _attachments(value: object, at: str) -> tuple[Part, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise _Refused(f"{at}attachments must be an array", "invalid_attachment")
    return tuple(_attachment(item, f"{at}attachments.{n}") for n, item in enumerate(value))


def _attachment(item: object, field: str) -> Part:
    if not isinstance(item, dict):
        raise _Refused(f"{field} must be an object", "invalid_attachment")
    if "path" in item:
        raise _Refused(
            f"{field}.path: this server fetches no remote attachment; send its content",
            "invalid_attachment",
        )
    filename = item.get("filename")
    if not isinstance(filename, str) or not filename:
        raise _Refused(f"{field}.filename is required", "invalid_attachment")
    content = item.get("content")
    if isinstance(content, list):
        if not all(isinstance(byte, int) and 0 <= byte <= 255 for byte in content):
            raise _Refused(f"{field}.content must hold bytes (0 to 255)", "invalid_attachment")
        data = bytes(content)
    else:
        try:
            data = decode_base64(content, f"{field}.content")
        except SendError as error:
            raise _Refused(error.message, "invalid_attachment") from None
    content_type = item.get("content_type") or mimetypes.guess_type(filename)[0]
    if not isinstance(content_type, str):
        content_type = "application/octet-stream"
    content_id = item.get("content_id") or item.get("inline_content_id")
    if content_id is not None and not isinstance(content_id, str):
        raise _Refused(f"{field}.content_id must be a string", "invalid_attachment")
    return Part(filename, content_type, data, content_id)


def _tags(value: object, at: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, list):
        raise _Refused(f"{at}tags must be an array of {{name, value}}")
    tags = {}
    for item in value:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            raise _Refused(f"{at}each tag must be an object with a string name")
        tag_value = item.get("value", "")
        if not isinstance(tag_value, str):
            raise _Refused(f"{at}the value of tag {item['name'][:80]!r} must be a string")
        tags[item["name"]] = tag_value
    return tags
