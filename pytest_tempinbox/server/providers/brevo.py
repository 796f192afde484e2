"""Brevo's ``POST /v3/smtp/email``: a send, or one message per message version, as Brevo answers.

A send is accepted with ``201`` and ``{"messageId": "<...>"}``, the id that
is the message's ``Message-ID``; a send with ``messageVersions`` makes one
message per version (its recipients, and its ``params``, ``subject``,
``headers``, bodies over the send's) and answers ``{"messageIds": [...]}`` in
version order. ``params`` fill in ``{{ params.name }}`` (dots for nested
values) in the subject and bodies, as Brevo's templating does: a parameter
not given is left empty. A ``templateId`` names a template stored at Brevo,
which this server cannot render: the record keeps it and its ``params``. An
attachment given by ``url`` is refused: this server fetches nothing. A
request Brevo would refuse gets ``400`` and Brevo's error body,
``{"code": "invalid_parameter" | "missing_parameter", "message"}``; a
refused key ``401`` ``unauthorized``. The ``X-Mailin-custom`` header (where
django-anymail puts the metadata), when it is a JSON object, is the
record's ``metadata``.
"""

from __future__ import annotations

import json
import mimetypes
import re
from typing import Any

from ...values import ProviderRecord
from ..api.endpoints import Reply, encode_json
from ..api.request import Request
from .delivery import TooLarge, deliver, new_id, nobody_live
from .send import (
    Mailbox,
    Part,
    Send,
    SendError,
    checked_address,
    decode_base64,
    header_pairs,
    object_items,
    optional_object,
    string_list,
)
from .send import parse_json as parse_body

__all__ = ["credential", "error_reply", "smtp_email"]

ENDPOINT = "/v3/smtp/email"
TEMPLATE_SENDER: Mailbox = ("", "template-sender@brevo.tempinbox.invalid")
"""The sender of a template send that names none: the template's own, unknown here."""
MAX_VERSION_RECIPIENTS = 99
"""Brevo's limit on the recipients of one message version."""
MAX_RECIPIENTS = 2000
"""Brevo's limit on the recipients of one request, in all its versions."""
_CODES = {
    401: "unauthorized",
    403: "permission_denied",
    404: "document_not_found",
    405: "method_not_allowed",
    429: "too_many_requests",
}
_PARAM = re.compile(r"\{\{\s*params\.([A-Za-z0-9_]+(?:\.[A-Za-z0-9_]+)*)\s*\}\}")
_OPTIONS = ("scheduledAt", "batchId")
_VERSION_FIELDS = (
    "to",
    "cc",
    "bcc",
    "replyTo",
    "subject",
    "params",
    "headers",
    "htmlContent",
    "textContent",
    "templateId",
)


class _Missing(SendError):
    """A required parameter is not there: Brevo's ``missing_parameter``."""


async def smtp_email(request: Request) -> Reply:
    """``POST /v3/smtp/email``: deliver the send or each message version; 201 with the ids."""
    try:
        data = parse_body(request.body)
        sends = _read(data)
        config = request.server().config
        ids: list[str] = []
        refused: list[str] = []
        delivered = 0
        for send, record in sends:
            each = new_id()
            ids.append(f"<{each}@brevo.tempinbox.invalid>")
            delivery = await deliver(request.store, config, send, record, each)
            refused += delivery.refused
            delivered += len(delivery.stored)
    except _Missing as error:
        return error_reply(400, error.message, "missing_parameter")
    except TooLarge as error:
        return error_reply(413, error.message)
    except SendError as error:
        return error_reply(400, error.message)
    if not delivered:
        return error_reply(400, nobody_live(refused))
    if isinstance(data, dict) and "messageVersions" in data:
        return Reply(201, encode_json({"messageIds": ids}))
    return Reply(201, encode_json({"messageId": ids[0]}))


def error_reply(status: int, message: str, code: str | None = None) -> Reply:
    """Brevo's error answer: ``{"code", "message"}``, with ``status``.

    ``code`` is Brevo's error code; by default the one Brevo gives that status
    (``invalid_parameter`` for 400 and 422, ``unauthorized`` for 401, ...).
    """
    code = code or _CODES.get(status, "internal_error" if status >= 500 else "invalid_parameter")
    return Reply(status, encode_json({"code": code, "message": message}))


def credential(request: Request) -> str | None:
    """The API key the request presents, as Brevo reads it: the ``api-key`` header."""
    return request.headers.get("api-key") or None


def _read(data: object) -> list[tuple[Send, ProviderRecord]]:
    """The sends of a request, one per message version, with their records."""
    if not isinstance(data, dict):
        raise SendError("the request body must be a JSON object", None)
    versions = data.get("messageVersions")
    if versions is None:
        return [_send(data, data.get("params"))]
    if versions == []:
        raise SendError("messageVersions must be a non-empty array", "messageVersions")
    total = 0
    sends = []
    for at, version in object_items(versions, "messageVersions", "[{}]"):
        if "to" not in version:
            raise _Missing(f"to is missing in {at}", f"{at}.to")
        unknown = sorted(set(version) - set(_VERSION_FIELDS))
        if unknown:
            raise SendError(f"{at}: unknown parameter {unknown[0][:40]!r}", at)
        send, record = _send({**data, **version}, _merged(data, version, at), at)
        count = len(send.recipients)
        if count > MAX_VERSION_RECIPIENTS:
            raise SendError(
                f"{at} has {count} recipients: at most {MAX_VERSION_RECIPIENTS} a version", at
            )
        total += count
        sends.append((send, record))
    if total > MAX_RECIPIENTS:
        raise SendError(f"the request has {total} recipients: at most {MAX_RECIPIENTS}", None)
    return sends


def _merged(data: dict[str, Any], version: dict[str, Any], at: str) -> object:
    """A version's params over the send's."""
    params, own = data.get("params"), version.get("params")
    if own is None:
        return params
    return {**optional_object(params, "params"), **optional_object(own, f"{at}.params")}


def _send(data: dict[str, Any], params: object, at: str = "") -> tuple[Send, ProviderRecord]:
    """One message of the request: ``data`` is the send, a version's fields over it."""
    template_id = data.get("templateId")
    if template_id is not None and (
        isinstance(template_id, bool) or not isinstance(template_id, int)
    ):
        raise SendError("templateId must be an integer", "templateId")
    swaps = optional_object(params, "params")
    if "sender" not in data and template_id is None:
        raise _Missing("sender is missing", "sender")
    # A template's sender is the template's, at Brevo: a stand-in names it.
    sender = _mailbox(data["sender"], "sender") if "sender" in data else TEMPLATE_SENDER
    to = _mailboxes(data.get("to"), f"{at}.to" if at else "to")
    if not to:
        raise _Missing("to is missing", "to")
    subject, text, html = (_text(data, name) for name in ("subject", "textContent", "htmlContent"))
    if template_id is None:
        if subject is None:
            raise _Missing("subject is missing", "subject")
        if text is None and html is None:
            raise _Missing("htmlContent or textContent is missing", "htmlContent")
    headers = header_pairs(_header_texts(data.get("headers")), "headers")
    send = Send(
        sender=sender,
        to=to,
        cc=_mailboxes(data.get("cc"), "cc"),
        bcc=_mailboxes(data.get("bcc"), "bcc"),
        reply_to=(_mailbox(data["replyTo"], "replyTo"),) if data.get("replyTo") else (),
        subject=_fill(subject or "", swaps),
        text=None if text is None else _fill(text, swaps),
        html=None if html is None else _fill(html, swaps),
        attachments=_attachments(data.get("attachment")),
        headers=headers,
    )
    record = ProviderRecord(
        name="brevo",
        endpoint=ENDPOINT,
        template_id=None if template_id is None else str(template_id),
        template_data=swaps if template_id is not None else None,
        tags=string_list(data.get("tags"), "tags"),
        metadata=_metadata(dict(headers)),
        headers=dict(headers),
        options={name: data[name] for name in _OPTIONS if name in data},
    )
    return send, record


def _mailbox(value: object, field: str) -> Mailbox:
    if not isinstance(value, dict):
        raise SendError(f"{field} must be an object with an email", field)
    name = value.get("name") or ""
    if not isinstance(name, str):
        raise SendError(f"{field}.name must be a string", f"{field}.name")
    if "email" not in value:
        raise _Missing(f"email is missing in {field}", f"{field}.email")
    try:
        return name, checked_address(value.get("email"), f"{field}.email")
    except SendError:
        raise SendError(f"email is not valid in {field}", f"{field}.email") from None


def _mailboxes(value: object, field: str) -> tuple[Mailbox, ...]:
    return tuple(_mailbox(item, at) for at, item in object_items(value, field, "[{}]"))


def _text(data: dict[str, Any], name: str) -> str | None:
    value = data.get(name)
    if value is not None and not isinstance(value, str):
        raise SendError(f"{name} must be a string", name)
    return value


def _header_texts(value: object) -> object:
    """Brevo's header values as texts: a number or a boolean is written out."""
    if not isinstance(value, dict):
        return value
    return {
        name: json.dumps(item) if isinstance(item, bool | int | float) else item
        for name, item in value.items()
    }


def _fill(text: str, params: dict[str, Any]) -> str:
    """``text`` with each ``{{ params.name }}`` filled in; a name not given is left empty."""

    def value(found: re.Match[str]) -> str:
        item: Any = params
        for key in found[1].split("."):
            item = item.get(key) if isinstance(item, dict) else None
        return "" if item is None else str(item)

    return _PARAM.sub(value, text)


def _attachments(value: object) -> tuple[Part, ...]:
    parts = []
    for field, item in object_items(value, "attachment", "[{}]"):
        if "url" in item:
            raise SendError(
                f"{field}.url: this server fetches no remote attachment; send its content",
                f"{field}.url",
            )
        name = item.get("name")
        if not isinstance(name, str) or not name:
            raise _Missing(f"name is missing in {field}", f"{field}.name")
        content = decode_base64(item.get("content"), f"{field}.content")
        content_type = mimetypes.guess_type(name)[0] or "application/octet-stream"
        parts.append(Part(name, content_type, content))
    return tuple(parts)


def _metadata(headers: dict[str, str]) -> dict[str, Any]:
    """The ``X-Mailin-custom`` header's JSON object, the send's metadata; else none."""
    custom = next((v for k, v in headers.items() if k.lower() == "x-mailin-custom"), None)
    try:
        found = json.loads(custom) if custom else None
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}
