"""Postmark's ``POST /email``, ``/email/batch``, ``/email/withTemplate`` and its batch.

A send is answered ``200`` with ``{"To", "SubmittedAt", "MessageID",
"ErrorCode": 0, "Message": "OK"}``; a batch with a JSON array of those, one per
message in order, each with its own ``ErrorCode`` (a message Postmark would
refuse is answered in its place, the others delivered). A request Postmark
refuses gets ``422`` and ``{"ErrorCode", "Message"}``: ``300`` for an invalid
email request, ``402`` for a body that is not JSON, ``406`` when no recipient
is a live inbox (named as Postmark names inactive recipients, which
django-anymail reads), ``410`` for a batch of more than 500. Recipients that are
not live beside live ones are named in the ``Message`` as Postmark names
inactive addresses. A template send keeps ``TemplateId`` or ``TemplateAlias``
and ``TemplateModel`` in the record; ``Tag``, ``Metadata``, ``MessageStream``
and the tracking options too.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timezone
from email.utils import getaddresses
from typing import Any

from ...values import ProviderRecord
from ..api.endpoints import Reply, encode_json
from ..api.request import Request
from .delivery import TooLarge, deliver
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

__all__ = [
    "credential",
    "email",
    "email_batch",
    "email_batch_with_templates",
    "email_with_template",
    "error_reply",
]

MAX_BATCH = 500
"""Postmark's limit on the messages of one batch."""
MAX_RECIPIENTS = 50
"""Postmark's limit on the addresses of each of To, Cc and Bcc."""
_OPTIONS = ("TrackOpens", "TrackLinks", "MessageStream", "InlineCss")
# Postmark's error codes for the HTTP statuses it gives one; the others carry the status.
_CODES = {400: 300, 401: 10, 403: 10, 413: 300, 415: 409, 422: 300}


class _Refused(SendError):
    """A message Postmark refuses with its error ``code``."""

    def __init__(self, message: str, code: int = 300) -> None:
        super().__init__(message)
        self.code = code


def error_reply(status: int, message: str) -> Reply:
    """Postmark's error answer for ``status``: ``{"ErrorCode", "Message"}``.

    ``ErrorCode`` is Postmark's for that status (``10`` a bad token for 401 and
    403, ``300`` an invalid request for 400, 413 and 422, ``409`` for 415), the
    status itself where Postmark gives none (429, 500, 503).
    """
    return Reply(status, encode_json({"ErrorCode": _CODES.get(status, status), "Message": message}))


def credential(request: Request) -> str | None:
    """The server token the request presents in ``X-Postmark-Server-Token``, or None."""
    return request.headers.get("x-postmark-server-token") or None


async def email(request: Request) -> Reply:
    """``POST /email``: deliver one message; ``{"To", "SubmittedAt", "MessageID", ...}``."""
    return await _answer(request, "/email", batch=False)


async def email_batch(request: Request) -> Reply:
    """``POST /email/batch``: a JSON array of up to 500 messages, answered in order."""
    return await _answer(request, "/email/batch", batch=True)


async def email_with_template(request: Request) -> Reply:
    """``POST /email/withTemplate``: one message naming a template stored at Postmark."""
    return await _answer(request, "/email/withTemplate", batch=False)


async def email_batch_with_templates(request: Request) -> Reply:
    """``POST /email/batchWithTemplates``: ``{"Messages": [...]}``, answered in order."""
    return await _answer(request, "/email/batchWithTemplates", batch=True)


async def _answer(request: Request, endpoint: str, *, batch: bool) -> Reply:
    content_type = request.headers.get("content-type", "")
    if content_type.split(";")[0].strip().lower() != "application/json":
        return _error(415, 409, "The request should be JSON, sent as application/json.")
    try:
        data = parse_json(request.body)
    except SendError:
        return _error(422, 402, "The request body is not valid JSON.")
    try:
        items = _items(data, endpoint) if batch else [data]
    except _Refused as error:
        return _error(422, error.code, error.message)
    answers = []
    for item in items:
        try:
            answers.append(await _send(request, item, endpoint))
        except TooLarge as error:
            if not batch:
                return _error(413, 300, error.message)
            answers.append({"ErrorCode": 300, "Message": error.message})
        except _Refused as error:
            if not batch:
                return _error(422, error.code, error.message)
            answers.append({"ErrorCode": error.code, "Message": error.message})
        except SendError as error:
            if not batch:
                return _error(422, 300, error.message)
            answers.append({"ErrorCode": 300, "Message": error.message})
    return Reply(200, encode_json(answers if batch else answers[0]))


def _error(status: int, code: int, message: str) -> Reply:
    return Reply(status, encode_json({"ErrorCode": code, "Message": message}))


def _items(data: object, endpoint: str) -> list[object]:
    """The messages of a batch: a JSON array, or ``{"Messages": [...]}`` with templates."""
    if endpoint.endswith("WithTemplates"):
        data = data.get("Messages") if isinstance(data, dict) else None
        if not isinstance(data, list):
            raise _Refused("The request must be an object whose Messages is an array.")
    elif not isinstance(data, list):
        raise _Refused("The request must be a JSON array of messages.")
    if len(data) > MAX_BATCH:
        raise _Refused(
            f"Too many batch messages: {len(data)}; at most {MAX_BATCH} per request.", 410
        )
    return data


async def _send(request: Request, data: object, endpoint: str) -> dict[str, Any]:
    """Deliver one message; its answer, or :class:`SendError` for what Postmark refuses."""
    send, record = _read(data, endpoint)
    message_id = str(uuid.uuid4())
    delivery = await deliver(request.store, request.server().config, send, record, message_id)
    if not delivery.stored:
        raise _Refused(
            "You tried to send to recipient(s) that have been marked as inactive.\n"
            f"Found inactive addresses: {', '.join(delivery.refused)}.\n"
            "Inactive recipients are ones that have generated a hard bounce or a spam "
            "complaint. (Here: no live inbox of this server.)",
            406,
        )
    message = "OK"
    if delivery.refused:
        message = (
            "Message OK, but will not deliver to these inactive addresses: "
            f"{', '.join(delivery.refused)}. Inactive recipients are ones that have "
            "generated a hard bounce or a spam complaint."
        )
    answer: dict[str, Any] = {
        "To": ", ".join(address for _, address in send.to),
        "SubmittedAt": datetime.now(timezone.utc).isoformat(),
        "MessageID": message_id,
        "ErrorCode": 0,
        "Message": message,
    }
    if not send.to:  # Postmark leaves To out of a Cc- or Bcc-only send's answer
        del answer["To"]
    return answer


def _read(data: object, endpoint: str) -> tuple[Send, ProviderRecord]:
    """One message and its record; :class:`_Refused` for what Postmark refuses."""
    if not isinstance(data, dict):
        raise _Refused("Each message must be a JSON object.")
    templated = "Template" in endpoint
    sender = _addresses(data, "From")
    if len(sender) != 1:
        raise _Refused("Invalid 'From' address: the message needs one sender.")
    to, cc, bcc = _addresses(data, "To"), _addresses(data, "Cc"), _addresses(data, "Bcc")
    if not (to or cc or bcc):
        raise _Refused("Zero recipients specified")
    template_id = template_data = None
    if templated:
        template = data.get("TemplateId") or data.get("TemplateAlias")
        if not isinstance(template, (str, int)) or isinstance(template, bool):
            raise _Refused("A template send needs a TemplateId or a TemplateAlias.", 1101)
        template_id, template_data = str(template), data.get("TemplateModel")
        if not isinstance(template_data, dict):
            raise _Refused("The TemplateModel must be a JSON object.", 1105)
    text, html = _text(data, "TextBody"), _text(data, "HtmlBody")
    if not templated and text is None and html is None:
        raise _Refused("Provide either email TextBody or HtmlBody or both.")
    headers = _headers(data.get("Headers"))
    tag = _text(data, "Tag")
    metadata = data.get("Metadata") or {}
    if not isinstance(metadata, dict):
        raise _Refused("Invalid metadata content: Metadata must be an object.")
    send = Send(
        sender=sender[0],
        to=to,
        cc=cc,
        bcc=bcc,
        reply_to=_addresses(data, "ReplyTo"),
        subject=_text(data, "Subject") or "",
        text=text,
        html=html,
        attachments=_attachments(data.get("Attachments")),
        headers=headers,
    )
    record = ProviderRecord(
        name="postmark",
        endpoint=endpoint,
        template_id=template_id,
        template_data=template_data,
        tags=(tag,) if tag else (),
        metadata=metadata,
        headers=dict(headers),
        options={name: data[name] for name in _OPTIONS if data.get(name) is not None},
    )
    return send, record


def _text(data: dict[str, Any], name: str) -> str | None:
    value = data.get(name)
    if value is not None and not isinstance(value, str):
        raise _Refused(f"Invalid '{name}': it must be a string.")
    return value or None


def _addresses(data: dict[str, Any], name: str) -> tuple[Mailbox, ...]:
    """A field of comma-separated addresses (``"Name <a@b>, c@d"``), each checked."""
    value = _text(data, name)
    if value is None:
        return ()
    if "\r" in value or "\n" in value:
        raise _Refused(f"Invalid '{name}' address: it holds a line break.")
    found = []
    for display, address in getaddresses([value]):
        try:
            found.append((display, checked_address(address, name)))
        except SendError:
            raise _Refused(f"Invalid '{name}' address: '{address[:80]}'.") from None
    if not found:
        raise _Refused(f"Invalid '{name}' address: '{value[:80]}'.")
    if len(found) > MAX_RECIPIENTS and name != "From":
        raise _Refused(f"Too many '{name}' addresses: {len(found)}, at most {MAX_RECIPIENTS}.")
    return tuple(found)


def _headers(value: object) -> tuple[tuple[str, str], ...]:
    """``[{"Name", "Value"}, ...]``, checked."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise _Refused("Headers must be an array of {Name, Value} objects.")
    pairs = []
    for item in value:
        if not isinstance(item, dict):
            raise _Refused("Headers must be an array of {Name, Value} objects.")
        name, text = item.get("Name"), item.get("Value")
        if not isinstance(name, str) or not isinstance(text, str):
            raise _Refused("Each header needs a string Name and a string Value.")
        pairs.append((name, text))
    try:
        return header_pairs(dict(pairs), "Headers") if pairs else ()
    except SendError as error:
        raise _Refused(error.message) from None


def _attachments(value: object) -> tuple[Part, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise _Refused("Attachments must be an array.")
    parts = []
    for n, item in enumerate(value):
        if not isinstance(item, dict):
            raise _Refused(f"Attachment {n} must be an object.")
        name = item.get("Name")
        if not isinstance(name, str) or not name:
            raise _Refused(f"Attachment {n} needs a Name.")
        try:
            content = decode_base64(item.get("Content"), f"Attachment {name[:80]!r} Content")
        except SendError as error:
            raise _Refused(str(error)) from None
        content_type = item.get("ContentType") or "application/octet-stream"
        if not isinstance(content_type, str):
            raise _Refused(f"Attachment {name[:80]!r}: ContentType must be a string.")
        content_id = item.get("ContentID")
        if content_id is not None and not isinstance(content_id, str):
            raise _Refused(f"Attachment {name[:80]!r}: ContentID must be a string.")
        if content_id:
            content_id = content_id.removeprefix("cid:").strip("<>") or None
        parts.append(Part(name, content_type, content, content_id or None))
    return tuple(parts)
