"""What SES's two APIs share: a request's fields read as SES reads them, the record, the delivery.

Addresses (``a@b`` or ``Name <a@b>``, at most 50 recipients a message),
custom headers and message tags (lists of ``{"Name", "Value"}``), attachments,
a template's name and its data (a JSON string), a raw message's sender and
recipients, the record's options (the configuration set, and the access key
id and region of the request's SigV4 signature, which is never checked).
What SES would refuse is a :class:`Refused`, with v2's error code; the v1 API
(:mod:`.ses_query`) says the same errors in its own shape.
"""

from __future__ import annotations

import json
import mimetypes
import re
from email.parser import BytesHeaderParser
from email.policy import compat32
from email.utils import getaddresses, parseaddr
from typing import Any

from ...values import ProviderRecord
from ..api.request import Request
from .delivery import Delivery, TooLarge, deliver, new_id
from .send import Mailbox, Part, Send, SendError, checked_address, decode_base64, header_pairs

__all__ = [
    "MAX_RECIPIENTS",
    "SEND_QUOTA",
    "Refused",
    "addressed",
    "attachment_parts",
    "credential",
    "deliver_send",
    "destination_of",
    "headers",
    "mailbox",
    "mailboxes",
    "options",
    "raw_send",
    "record",
    "tag_map",
    "template_data",
    "template_of",
]

MAX_RECIPIENTS = 50
"""SES's limit on the recipients of one message, To, Cc and Bcc together."""
SEND_QUOTA = {"Max24HourSend": 1000000.0, "MaxSendRate": 1000.0, "SentLast24Hours": 0.0}
"""The quota this server reports (v2's GetAccount, v1's GetSendQuota): too high to pace anyone."""
# The access key id in a SigV4 Authorization header: Credential=AKID/date/region/service/...
_CREDENTIAL = re.compile(r"Credential=([^/,\s]+)/[^/,\s]*/([^/,\s]*)/")


class Refused(SendError):
    """A request SES refuses with ``status`` and the error ``code`` (v2's names)."""

    def __init__(self, message: str, code: str = "BadRequestException", status: int = 400) -> None:
        super().__init__(message)
        self.code = code
        self.status = status


def credential(request: Request) -> str | None:
    """The access key id of the request's SigV4 signature (``Credential=AKID/...``), or None."""
    found = _CREDENTIAL.search(request.headers.get("authorization", ""))
    return found[1] if found else None


async def deliver_send(
    request: Request, send: Send, record: ProviderRecord
) -> tuple[str, Delivery]:
    """Deliver ``send`` under a new SES message id; SES's recipient limit checked first."""
    if len(send.recipients) > MAX_RECIPIENTS:
        raise Refused(
            f"Recipient count exceeds {MAX_RECIPIENTS}: {len(send.recipients)}", "MessageRejected"
        )
    message_id = f"0100{new_id()}-000000"
    try:
        return message_id, await deliver(
            request.store, request.server().config, send, record, message_id
        )
    except TooLarge as error:
        raise Refused(error.message, "MessageRejected") from None


def options(data: object, request: Request) -> dict[str, Any]:
    """What the record keeps of a request's settings: configuration set, key id, region."""
    found: dict[str, Any] = {}
    if isinstance(data, dict):
        found = {
            name: data[name]
            for name in (
                "ConfigurationSetName",
                "FeedbackForwardingEmailAddress",
                "ListManagementOptions",
            )
            if name in data
        }
    signed = _CREDENTIAL.search(request.headers.get("authorization", ""))
    if signed:
        found["access_key_id"], found["region"] = signed[1], signed[2]
    return found


def record(
    endpoint: str,
    send: Send,
    tags: dict[str, str],
    kept: dict[str, Any],
    template_id: str | None = None,
    data: object = None,
) -> ProviderRecord:
    """The record of an SES send: its tags (names, and names to values), template, options."""
    return ProviderRecord(
        name="ses",
        endpoint=endpoint,
        template_id=template_id,
        template_data=data if template_id is not None else None,
        tags=tuple(tags),
        metadata=tags,
        headers=dict(send.headers),
        options=kept,
    )


def raw_send(
    message: bytes, destination: tuple[tuple[Mailbox, ...], ...] | None, source: object
) -> Send:
    """A raw send: to ``destination`` (To, Cc, Bcc) when given, else to its headers' addresses.

    The sender is ``source`` when given, else the message's ``From``.
    """
    head = BytesHeaderParser(policy=compat32).parsebytes(message)
    if destination is None:
        found = getaddresses(
            [str(value) for name in ("To", "Cc", "Bcc") for value in head.get_all(name, [])]
        )
        recipients = tuple(
            ("", checked_address(address, "RawMessage")) for _, address in found if address
        )
    else:
        recipients = tuple(mailbox for group in destination for mailbox in group)
    if not recipients:
        raise Refused(
            "the message has no recipient: give the destinations or To, Cc or Bcc headers",
            "MessageRejected",
        )
    if source is None:
        source = str(head.get("From", "")) or None
        if source is None:
            raise Refused("Missing required header 'From'.", "MessageRejected")
    return Send(sender=mailbox(source, "From"), to=recipients, subject="", raw=message)


def addressed(
    sender: Mailbox,
    destination: tuple[tuple[Mailbox, ...], ...] | None,
    reply_to: tuple[Mailbox, ...],
    **content: Any,
) -> Send:
    """A send from ``sender`` to ``destination``'s To, Cc and Bcc; ``content``: Send's fields."""
    to, cc, bcc = destination or ((), (), ())
    return Send(sender=sender, to=to, cc=cc, bcc=bcc, reply_to=reply_to, **content)


def mailbox(value: object, field: str) -> Mailbox:
    """An address as SES takes it, ``a@b`` or ``Name <a@b>``; :class:`Refused` else."""
    if not isinstance(value, str) or not value:
        raise Refused(f"{field} is required and must be an email address")
    name, address = parseaddr(value)
    if not address or "\r" in value or "\n" in value:
        raise Refused(f"{field}: not a valid email address: {value[:80]!r}")
    return name, checked_address(address, field)


def mailboxes(value: object, field: str) -> tuple[Mailbox, ...]:
    """A list of addresses (None: none); :class:`Refused` for anything else."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise Refused(f"{field} must be a list of email addresses")
    if len(value) > MAX_RECIPIENTS:
        raise Refused(f"Recipient count exceeds {MAX_RECIPIENTS}: {len(value)}", "MessageRejected")
    return tuple(mailbox(item, field) for item in value)


def destination_of(value: object, field: str) -> tuple[tuple[Mailbox, ...], ...] | None:
    """A ``Destination``'s To, Cc and Bcc lists (None without one)."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise Refused(f"{field} must be an object")
    return tuple(
        mailboxes(value.get(f"{kind}Addresses"), f"{field}.{kind}Addresses")
        for kind in ("To", "Cc", "Bcc")
    )


def template_of(template: dict[str, Any]) -> tuple[str, object]:
    """A template's name (or ARN) and its data; :class:`Refused` without a name."""
    name = template.get("TemplateName") or template.get("TemplateArn")
    if not isinstance(name, str):
        raise Refused("the template needs a TemplateName or a TemplateArn")
    return name, template_data(template.get("TemplateData"), "TemplateData")


def template_data(value: object, field: str) -> object:
    """A template's data: SES's JSON string, parsed (None without one)."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise Refused(f"{field} must be a string of JSON")
    try:
        return json.loads(value)
    except (ValueError, RecursionError):
        raise Refused(f"{field} is not valid JSON") from None


def headers(value: object, field: str) -> tuple[tuple[str, str], ...]:
    """Custom headers as SES takes them, a list of ``{"Name", "Value"}``."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise Refused(f"{field} must be a list of {{Name, Value}}")
    pairs: list[tuple[str, str]] = []
    for item in value:
        if not isinstance(item, dict) or not isinstance(item.get("Name"), str):
            raise Refused(f"{field}: each header must have a string Name")
        pairs += header_pairs({item["Name"]: item.get("Value", "")}, field)
    return tuple(pairs)


def tag_map(value: object, field: str) -> dict[str, str]:
    """Message tags, ``[{"Name", "Value"}]``, as names to values."""
    return dict(headers(value, field))


def attachment_parts(value: object, field: str) -> tuple[Part, ...]:
    """v2's ``Attachments``: ``RawContent`` in base64, ``INLINE`` ones with a ``ContentId``."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise Refused(f"{field} must be a list")
    parts = []
    for n, item in enumerate(value):
        at = f"{field}.{n}"
        if not isinstance(item, dict) or not isinstance(item.get("FileName"), str):
            raise Refused(f"{at}.FileName is required")
        content = decode_base64(item.get("RawContent"), f"{at}.RawContent")
        guessed = mimetypes.guess_type(item["FileName"])[0]
        content_type = item.get("ContentType") or guessed or "application/octet-stream"
        content_id = item.get("ContentId") if item.get("ContentDisposition") == "INLINE" else None
        if not isinstance(content_type, str) or not isinstance(content_id, str | None):
            raise Refused(f"{at}: ContentType and ContentId must be strings")
        parts.append(Part(item["FileName"], content_type, content, content_id))
    return tuple(parts)
