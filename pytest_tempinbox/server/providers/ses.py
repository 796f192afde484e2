"""Amazon SES's v2 API (JSON under ``/v2/email/``), answered as SES does; v1 in :mod:`.ses_query`.

``POST /v2/email/outbound-emails`` takes one send, its ``Content`` one of
``Simple`` (subject, text and HTML bodies, headers, attachments), ``Raw`` (a
whole MIME message, base64 in the JSON: stored as it is, to the
``Destination`` when given, else to the addresses of its headers) or
``Template`` (a template stored at SES, which cannot be rendered here: its
name and data are kept, with a short text body saying so), and answers
``{"MessageId"}``. ``POST /v2/email/outbound-bulk-emails`` sends the default
template once per entry, each entry's replacement data over the default, and
answers ``BulkEmailEntryResults`` in the order of the entries, ``SUCCESS`` or
``FAILED`` each. ``GET /v2/email/account`` answers a generous send quota, which
django-ses reads to pace itself. Every answer has the ``x-amzn-RequestId``
header, which django-ses reads; an error is SES's ``{"message"}`` with its
code in the ``x-amzn-ErrorType`` header. Requests are never signature-checked:
the access key id of the request's signature is kept in the record's options.
SES v1's query API (``Action=...`` posted to the endpoint's root) is served by
:func:`query`.
"""

from __future__ import annotations

import uuid
from typing import Any

from ...values import ProviderRecord
from ..api.endpoints import Reply, encode_json
from ..api.request import Request
from .delivery import nobody_live
from .send import Send, SendError, decode_base64, parse_json
from .ses_common import (
    SEND_QUOTA,
    Refused,
    addressed,
    attachment_parts,
    credential,
    deliver_send,
    destination_of,
    headers,
    mailbox,
    mailboxes,
    options,
    raw_send,
    record,
    tag_map,
    template_data,
    template_of,
)

__all__ = [
    "account",
    "credential",
    "error_reply",
    "outbound_bulk_emails",
    "outbound_emails",
    "query",
    "request_error_reply",
]

MAX_BULK_ENTRIES = 50
"""SES's limit on the entries of one bulk send."""

# The v2 error codes (the x-amzn-ErrorType header) by HTTP status.
_V2_CODES = {
    400: "BadRequestException",
    401: "UnrecognizedClientException",
    403: "AccessDeniedException",
    404: "NotFoundException",
    413: "MessageRejected",
    422: "MessageRejected",
    429: "TooManyRequestsException",
    500: "InternalFailure",
    503: "ServiceUnavailable",
}


def error_reply(status: int, message: str) -> Reply:
    """SES v2's error answer for ``status``: ``{"message"}``, the code in ``x-amzn-ErrorType``."""
    code = _V2_CODES.get(status, "BadRequestException" if status < 500 else "InternalFailure")
    return _error(status, code, message)


def request_error_reply(request: Request, status: int, message: str) -> Reply:
    """SES's error for ``status`` in the shape of ``request``'s API: v1's XML for a form, else v2's.

    Where the provider's answer is made apart from the endpoint (a provider
    key refused, a fault), :func:`error_reply` alone would give a v1 client
    JSON, which botocore's query parser cannot read.
    """
    content_type = request.headers.get("content-type", "")
    if content_type.split(";")[0].strip().lower() == "application/x-www-form-urlencoded":
        from .ses_query import query_error_reply

        return query_error_reply(status, message)
    return error_reply(status, message)


def _error(status: int, code: str, message: str) -> Reply:
    headers = {"x-amzn-RequestId": str(uuid.uuid4()), "x-amzn-ErrorType": code}
    return Reply(status, encode_json({"message": message}), headers=headers)


def _ok(data: dict[str, Any]) -> Reply:
    return Reply(200, encode_json(data), headers={"x-amzn-RequestId": str(uuid.uuid4())})


async def query(request: Request) -> Reply:
    """``POST /``: SES v1's query API (:mod:`.ses_query`), imported when first called."""
    from .ses_query import query as answer

    return await answer(request)


async def account(request: Request) -> Reply:
    """``GET /v2/email/account``: SES's ``GetAccount``, a production account with a high quota."""
    return _ok(
        {
            "DedicatedIpAutoWarmupEnabled": False,
            "EnforcementStatus": "HEALTHY",
            "ProductionAccessEnabled": True,
            "SendQuota": SEND_QUOTA,
            "SendingEnabled": True,
        }
    )


async def outbound_emails(request: Request) -> Reply:
    """``POST /v2/email/outbound-emails``: deliver one send; ``{"MessageId"}``."""
    endpoint = "/v2/email/outbound-emails"
    try:
        data = _json(request)
        send, record = _read(data, endpoint, options(data, request))
        message_id, delivery = await deliver_send(request, send, record)
    except Refused as error:
        return _error(error.status, error.code, error.message)
    except SendError as error:
        return _error(400, "BadRequestException", error.message)
    if not delivery.stored:
        return _error(400, "MessageRejected", nobody_live(list(delivery.refused)))
    return _ok({"MessageId": message_id})


async def outbound_bulk_emails(request: Request) -> Reply:
    """``POST /v2/email/outbound-bulk-emails``: the default template once per entry, in order."""
    endpoint = "/v2/email/outbound-bulk-emails"
    try:
        data = _json(request)
        sends = _bulk(data, endpoint, options(data, request))
        results = []
        for send, record in sends:
            try:
                message_id, delivery = await deliver_send(request, send, record)
            except SendError as error:
                results.append({"Status": "FAILED", "Error": error.message})
                continue
            if delivery.stored:
                results.append({"Status": "SUCCESS", "MessageId": message_id})
            else:
                results.append({"Status": "FAILED", "Error": nobody_live(list(delivery.refused))})
    except Refused as error:
        return _error(error.status, error.code, error.message)
    except SendError as error:
        return _error(400, "BadRequestException", error.message)
    return _ok({"BulkEmailEntryResults": results})


def _json(request: Request) -> dict[str, Any]:
    data = parse_json(request.body)
    if not isinstance(data, dict):
        raise Refused("the request body must be a JSON object")
    return data


def _read(data: dict[str, Any], endpoint: str, kept: dict[str, Any]) -> tuple[Send, ProviderRecord]:
    """One v2 send and its record; :class:`SendError` for what SES would refuse."""
    content = data.get("Content")
    if not isinstance(content, dict):
        raise Refused("Content is required and must be an object")
    kinds = [kind for kind in ("Simple", "Raw", "Template") if kind in content]
    if len(kinds) != 1:
        raise Refused("Content must hold exactly one of Simple, Raw and Template")
    kind, body = kinds[0], content[kinds[0]]
    if not isinstance(body, dict):
        raise Refused(f"Content.{kind} must be an object")
    tags = tag_map(data.get("EmailTags"), "EmailTags")
    destination = destination_of(data.get("Destination"), "Destination")
    reply_to = mailboxes(data.get("ReplyToAddresses"), "ReplyToAddresses")
    source = data.get("FromEmailAddress")
    if kind == "Raw":
        send = raw_send(decode_base64(body.get("Data"), "Content.Raw.Data"), destination, source)
        return send, record(endpoint, send, tags, kept)
    sender = mailbox(source, "FromEmailAddress")
    template_id, template_data = template_of(body) if kind == "Template" else (None, None)
    subject, text, html = _simple_texts(body) if kind == "Simple" else ("", None, None)
    send = addressed(
        sender,
        destination,
        reply_to,
        subject=subject,
        text=text,
        html=html,
        attachments=attachment_parts(body.get("Attachments"), f"Content.{kind}.Attachments"),
        headers=headers(body.get("Headers"), f"Content.{kind}.Headers"),
    )
    return send, record(endpoint, send, tags, kept, template_id, template_data)


def _bulk(
    data: dict[str, Any], endpoint: str, kept: dict[str, Any]
) -> list[tuple[Send, ProviderRecord]]:
    """The sends of a bulk request, one per entry, all checked before any is delivered."""
    default = data.get("DefaultContent")
    template = default.get("Template") if isinstance(default, dict) else None
    if not isinstance(template, dict):
        raise Refused("DefaultContent.Template is required")
    template_id, default_data = template_of(template)
    sender = mailbox(data.get("FromEmailAddress"), "FromEmailAddress")
    reply_to = mailboxes(data.get("ReplyToAddresses"), "ReplyToAddresses")
    default_tags = tag_map(data.get("DefaultEmailTags"), "DefaultEmailTags")
    entries = data.get("BulkEmailEntries")
    if not isinstance(entries, list) or not 1 <= len(entries) <= MAX_BULK_ENTRIES:
        raise Refused(f"BulkEmailEntries must be a list of 1 to {MAX_BULK_ENTRIES} entries")
    sends = []
    for n, entry in enumerate(entries):
        at = f"BulkEmailEntries.{n}"
        if not isinstance(entry, dict):
            raise Refused(f"{at} must be an object")
        replacement = entry.get("ReplacementEmailContent") or {}
        replaced = replacement.get("ReplacementTemplate") if isinstance(replacement, dict) else None
        entry_data = default_data
        if isinstance(replaced, dict) and "ReplacementTemplateData" in replaced:
            entry_data = template_data(
                replaced["ReplacementTemplateData"], f"{at}.ReplacementTemplateData"
            )
        tags = {**default_tags, **tag_map(entry.get("ReplacementTags"), f"{at}.ReplacementTags")}
        send = addressed(
            sender,
            destination_of(entry.get("Destination"), f"{at}.Destination"),
            reply_to,
            subject="",
            headers=headers(entry.get("ReplacementHeaders"), f"{at}.ReplacementHeaders"),
        )
        sends.append((send, record(endpoint, send, tags, kept, template_id, entry_data)))
    return sends


def _simple_texts(simple: dict[str, Any]) -> tuple[str, str | None, str | None]:
    subject = _data(simple.get("Subject"), "Content.Simple.Subject")
    body = simple.get("Body")
    if not isinstance(body, dict) or not ({"Text", "Html"} & set(body)):
        raise Refused("Content.Simple.Body must hold Text or Html")
    text = _data(body["Text"], "Content.Simple.Body.Text") if "Text" in body else None
    html = _data(body["Html"], "Content.Simple.Body.Html") if "Html" in body else None
    return subject, text, html


def _data(value: object, field: str) -> str:
    """The ``Data`` of SES's ``{"Data", "Charset"}`` content."""
    data = value.get("Data") if isinstance(value, dict) else None
    if not isinstance(data, str):
        raise Refused(f"{field}.Data is required and must be a string")
    return data
