"""SendGrid's ``POST /v3/mail/send``: one message per personalization, answered as SendGrid does.

A send is accepted with ``202``, an empty body and an ``X-Message-Id``
header; a request SendGrid would refuse gets ``400`` (``415`` for a body that
is not JSON by its type, ``413`` for a message over the size limit) and
SendGrid's error body, ``{"errors": [{"message", "field", "help"}]}``. Each
personalization becomes one message to its own To, Cc and Bcc, with its
subject, headers and custom arguments over the send's, its ``substitutions``
applied to the subject and bodies as SendGrid applies them, and its
``dynamic_template_data`` kept as the template's data. With
``mail_settings.sandbox_mode.enable``, SendGrid checks the request and
delivers nothing, answering ``200``: so does this endpoint.
"""

from __future__ import annotations

from typing import Any

from ...values import ProviderRecord
from ..api.endpoints import Reply, encode_json
from ..api.request import Request
from .delivery import TooLarge, deliver, new_id, nobody_live
from .gate import bearer
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
    parse_json,
    string_list,
)

__all__ = ["credential", "error_reply", "mail_send"]

ENDPOINT = "/v3/mail/send"
# What the record keeps of the send's other settings, as the request gave them.
MAX_RECIPIENTS = 1000
"""SendGrid's limit on personalizations per request, and on recipients in all."""
_OPTIONS = ("send_at", "batch_id", "asm", "ip_pool_name", "mail_settings", "tracking_settings")


async def mail_send(request: Request) -> Reply:
    """``POST /v3/mail/send``: deliver each personalization; 202 with ``X-Message-Id``."""
    content_type = request.headers.get("content-type", "")
    if content_type.split(";")[0].strip().lower() != "application/json":
        return error_reply(415, "Content-Type should be application/json.", None)
    try:
        data = parse_json(request.body)
        sends = _read(data)
        if _sandbox(data):  # a JSON object, _read found
            return Reply(200, b"", "text/plain")
        message_id = new_id()
        config = request.server().config
        refused: list[str] = []
        delivered = 0
        for n, (send, record) in enumerate(sends):
            each_id = f"{message_id}.{n}"  # the Message-ID of each personalization's message
            delivery = await deliver(request.store, config, send, record, each_id)
            refused += delivery.refused
            delivered += len(delivery.stored)
    except TooLarge as error:
        return error_reply(413, error.message, error.field)
    except SendError as error:
        return error_reply(400, error.message, error.field)
    if not delivered:
        return error_reply(400, nobody_live(refused), "personalizations")
    return Reply(202, b"", "text/plain", {"X-Message-Id": message_id})


def error_reply(status: int, message: str, field: str | None = None) -> Reply:
    """SendGrid's error answer: ``{"errors": [{"message", "field", "help"}]}``, with ``status``.

    SendGrid answers every error so, a refused key's ``401`` included
    (``"The provided authorization grant is invalid, expired, or revoked"``).
    """
    return Reply(
        status, encode_json({"errors": [{"message": message, "field": field, "help": None}]})
    )


def credential(request: Request) -> str | None:
    """The API key the request presents, as SendGrid reads it: ``Authorization: Bearer KEY``."""
    return bearer(request)


def _sandbox(data: object) -> bool:
    """Whether the send asks for SendGrid's sandbox mode: checked, never delivered."""
    settings = data.get("mail_settings") if isinstance(data, dict) else None
    sandbox = settings.get("sandbox_mode") if isinstance(settings, dict) else None
    return isinstance(sandbox, dict) and sandbox.get("enable") is True


def _read(data: object) -> list[tuple[Send, ProviderRecord]]:
    """The sends of a request, one per personalization, with their records.

    Anything SendGrid would refuse is a :class:`SendError`.
    """
    if not isinstance(data, dict):
        raise SendError("the request body must be a JSON object", None)
    _check_sizes(data.get("personalizations"))
    if "from" not in data:
        raise SendError(
            "The from object must be provided for every email send. It is an object that "
            "requires the email parameter, but may also contain a name parameter.",
            "from",
        )
    sender = _mailbox(data["from"], "from")
    personalizations = data.get("personalizations")
    if not isinstance(personalizations, list) or not personalizations:
        raise SendError(
            "The personalizations field is required and must have at least one personalization.",
            "personalizations",
        )
    template_id = _optional_text(data, "template_id")
    text, html = _content(data.get("content"), template_id)
    attachments = _attachments(data.get("attachments"))
    headers = header_pairs(data.get("headers"), "headers")
    reply_to = _reply_to(data)
    tags = string_list(data.get("categories"), "categories")
    custom_args = optional_object(data.get("custom_args"), "custom_args")
    options = {name: data[name] for name in _OPTIONS if name in data}
    sends = []
    for n, item in enumerate(personalizations):
        field = f"personalizations.{n}"
        if not isinstance(item, dict):
            raise SendError(f"{field} must be an object", field)
        to = _mailboxes(item.get("to"), f"{field}.to")
        if not to:
            raise SendError(
                "The to array is required for all personalization objects, and must have at "
                "least one email object with a valid email address.",
                f"{field}.to",
            )
        subject = _optional_text(item, "subject", field) or _optional_text(data, "subject")
        if subject is None and template_id is None:
            raise SendError(
                "The subject is required. You can get around this requirement if you use a "
                "template with a subject defined or if every personalization has a subject "
                "defined.",
                "subject",
            )
        swaps = optional_object(item.get("substitutions"), f"{field}.substitutions")
        own_headers = header_pairs(item.get("headers"), f"{field}.headers")
        all_headers = (
            tuple({**dict(headers), **dict(own_headers)}.items()) if own_headers else headers
        )
        send = Send(
            sender=sender,
            to=to,
            cc=_mailboxes(item.get("cc"), f"{field}.cc"),
            bcc=_mailboxes(item.get("bcc"), f"{field}.bcc"),
            reply_to=reply_to,
            subject=_substitute(subject or "", swaps),
            text=None if text is None else _substitute(text, swaps),
            html=None if html is None else _substitute(html, swaps),
            attachments=attachments,
            headers=all_headers,
        )
        data_of_template = item.get("dynamic_template_data")
        record = ProviderRecord(
            name="sendgrid",
            endpoint=ENDPOINT,
            template_id=template_id,
            template_data=data_of_template if template_id is not None else None,
            tags=tags,
            metadata={
                **custom_args,
                **optional_object(item.get("custom_args"), f"{field}.custom_args"),
            },
            headers=dict(all_headers),
            options={**options, **({"send_at": item["send_at"]} if "send_at" in item else {})},
        )
        sends.append((send, record))
    return sends


def _check_sizes(personalizations: object) -> None:
    """SendGrid's limits: 1,000 personalizations, and 1,000 recipients in all."""
    if not isinstance(personalizations, list):
        return
    if len(personalizations) > MAX_RECIPIENTS:
        raise SendError(
            f"The personalizations field is limited to {MAX_RECIPIENTS} objects per request.",
            "personalizations",
        )
    total = 0
    for item in personalizations:
        if isinstance(item, dict):
            for kind in ("to", "cc", "bcc"):
                recipients = item.get(kind)
                if isinstance(recipients, list):
                    total += len(recipients)
    if total > MAX_RECIPIENTS:
        raise SendError(
            f"The request has {total} recipients: the total in all personalizations must be "
            f"at most {MAX_RECIPIENTS}.",
            "personalizations",
        )


def _mailbox(value: object, field: str) -> Mailbox:
    if not isinstance(value, dict):
        raise SendError(f"{field} must be an object with an email", field)
    name = value.get("name") or ""
    if not isinstance(name, str):
        raise SendError(f"{field}.name must be a string", f"{field}.name")
    return name, checked_address(value.get("email"), f"{field}.email")


def _mailboxes(value: object, field: str) -> tuple[Mailbox, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise SendError(f"{field} must be an array of email objects", field)
    return tuple(_mailbox(item, f"{field}.{n}") for n, item in enumerate(value))


def _reply_to(data: dict[str, Any]) -> tuple[Mailbox, ...]:
    if data.get("reply_to") is not None:
        return (_mailbox(data["reply_to"], "reply_to"),)
    return _mailboxes(data.get("reply_to_list"), "reply_to_list")


def _content(value: object, template_id: str | None) -> tuple[str | None, str | None]:
    """The text and HTML bodies of ``content``; required without a template."""
    if value is None or value == []:
        if template_id is None:
            raise SendError(
                "Unless a valid template_id is provided, the content parameter is required. "
                "There must be at least one defined content block. We typically suggest both "
                "text/plain and text/html blocks are included, but only one block is required.",
                "content",
            )
        return None, None
    if not isinstance(value, list):
        raise SendError("content must be an array of content blocks", "content")
    bodies: dict[str, str] = {}
    for n, block in enumerate(value):
        field = f"content.{n}"
        if not isinstance(block, dict):
            raise SendError(f"{field} must be an object with a type and a value", field)
        kind, text = block.get("type"), block.get("value")
        if not isinstance(kind, str) or not isinstance(text, str):
            raise SendError(f"{field} must have a string type and a string value", field)
        if kind.lower() in bodies:
            raise SendError(f"{field}: a content type may be given once", f"{field}.type")
        bodies[kind.lower()] = text
    return bodies.get("text/plain"), bodies.get("text/html")


def _attachments(value: object) -> tuple[Part, ...]:
    parts = []
    for field, item in object_items(value, "attachments"):
        filename = item.get("filename")
        if not isinstance(filename, str) or not filename:
            raise SendError("The attachment filename parameter is required.", f"{field}.filename")
        content = decode_base64(item.get("content"), f"{field}.content")
        content_type = item.get("type") or "application/octet-stream"
        if not isinstance(content_type, str):
            raise SendError(f"{field}.type must be a string", f"{field}.type")
        inline = item.get("disposition") == "inline"
        content_id = item.get("content_id") if inline else None
        if inline and (not isinstance(content_id, str) or not content_id):
            raise SendError(
                "The content_id parameter is required if the disposition is set to inline.",
                f"{field}.content_id",
            )
        parts.append(Part(filename, content_type, content, content_id))
    return tuple(parts)


def _optional_text(data: dict[str, Any], name: str, within: str = "") -> str | None:
    value = data.get(name)
    if value is not None and not isinstance(value, str):
        field = f"{within}.{name}" if within else name
        raise SendError(f"{field} must be a string", field)
    return value


def _substitute(text: str, swaps: dict[str, Any]) -> str:
    """``text`` with each substitution's key replaced by its value, as SendGrid does."""
    for key, value in swaps.items():
        text = text.replace(key, str(value))
    return text
