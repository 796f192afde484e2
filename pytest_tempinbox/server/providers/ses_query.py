"""Amazon SES's v1 query API: ``Action=...`` form-posted to the endpoint's root, answered in XML.

``SendEmail`` (``Source``, ``Destination.ToAddresses.member.N`` and the Cc and
Bcc lists, ``Message.Subject.Data``, ``Message.Body.Text.Data`` and
``Message.Body.Html.Data``, ``ReplyToAddresses``, ``Tags``,
``ConfigurationSetName``), ``SendRawEmail`` (``RawMessage.Data`` in base64,
stored as it is, to ``Destinations.member.N`` when given, else to the
addresses of its headers), ``SendTemplatedEmail`` (the template's name and data
kept, as v2's are) and ``GetSendQuota``. Each answer is SES's XML in its
namespace, with ``ResponseMetadata/RequestId`` (django-ses reads it); an error
is SES's ``ErrorResponse`` (``Type``, ``Code``, ``Message``, ``RequestId``), and
an unknown action ``InvalidAction``. The v2 API is in :mod:`.ses`, what both
share in :mod:`.ses_common`.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qsl
from xml.sax.saxutils import escape

from ..api.endpoints import Reply
from ..api.request import Request
from . import ses_common
from .delivery import nobody_live
from .send import Mailbox, Send, SendError, decode_base64

__all__ = ["NAMESPACE", "query", "query_error_reply"]

NAMESPACE = "http://ses.amazonaws.com/doc/2010-12-01/"
"""The XML namespace of SES v1's answers."""
XML_TYPE = "text/xml"
MAX_FIELDS = 20_000
"""The most form fields a request may have: SES's limits are far below (50 recipients)."""
# The v1 error codes by HTTP status, and the v2 codes said as v1 says them.
_V1_CODES = {
    400: "InvalidParameterValue",
    401: "InvalidClientTokenId",
    403: "AccessDenied",
    404: "NotFound",
    413: "MessageRejected",
    422: "MessageRejected",
    429: "Throttling",
    500: "InternalFailure",
    503: "ServiceUnavailable",
}
_FROM_V2 = {"BadRequestException": "InvalidParameterValue"}

Form = dict[str, str]


def query_error_reply(status: int, message: str) -> Reply:
    """SES v1's ``ErrorResponse`` for ``status``: ``Sender`` under 500, ``Receiver`` from 500."""
    code = _V1_CODES.get(status, "InvalidParameterValue" if status < 500 else "InternalFailure")
    return _error(status, code, message)


def _error(status: int, code: str, message: str) -> Reply:
    kind = "Sender" if status < 500 else "Receiver"
    body = (
        f'<ErrorResponse xmlns="{NAMESPACE}"><Error><Type>{kind}</Type><Code>{code}</Code>'
        f"<Message>{escape(message)}</Message></Error>"
        f"<RequestId>{uuid.uuid4()}</RequestId></ErrorResponse>"
    )
    return Reply(status, body.encode("utf-8"), XML_TYPE)


def _ok(action: str, result: str) -> Reply:
    body = (
        f'<{action}Response xmlns="{NAMESPACE}"><{action}Result>{result}</{action}Result>'
        f"<ResponseMetadata><RequestId>{uuid.uuid4()}</RequestId></ResponseMetadata>"
        f"</{action}Response>"
    )
    return Reply(200, body.encode("utf-8"), XML_TYPE)


async def query(request: Request) -> Reply:
    """``POST /``: the form's ``Action``, answered in SES v1's XML."""
    try:
        text = request.body.decode("utf-8")
        form = dict(parse_qsl(text, keep_blank_values=True, max_num_fields=MAX_FIELDS))
    except ValueError:
        return _error(
            400, "MalformedQueryString", "the body is not a form of at most 20,000 fields"
        )
    action = form.get("Action", "")
    answer = _ACTIONS.get(action)
    if answer is None:
        if not action:
            return _error(400, "MissingAction", "the request names no Action")
        return _error(
            400, "InvalidAction", f"The action {action[:80]} is not valid for this web service."
        )
    try:
        return await answer(request, form)
    except ses_common.Refused as error:
        return _error(error.status, _FROM_V2.get(error.code, error.code), error.message)
    except SendError as error:
        return _error(400, "InvalidParameterValue", error.message)


async def _send_quota(request: Request, form: Form) -> Reply:
    quota = "".join(f"<{name}>{value}</{name}>" for name, value in ses_common.SEND_QUOTA.items())
    return _ok("GetSendQuota", quota)


async def _send_email(request: Request, form: Form) -> Reply:
    send = _addressed(
        form,
        subject=_required(form, "Message.Subject.Data"),
        text=form.get("Message.Body.Text.Data"),
        html=form.get("Message.Body.Html.Data"),
    )
    if send.text is None and send.html is None:
        raise ses_common.Refused("Message.Body needs Text or Html", "InvalidParameterValue")
    return await _deliver("SendEmail", request, form, send)


async def _send_raw_email(request: Request, form: Form) -> Reply:
    message = decode_base64(form.get("RawMessage.Data"), "RawMessage.Data")
    destinations = _addresses(form, "Destinations")
    send = ses_common.raw_send(
        message, (destinations,) if destinations else None, form.get("Source")
    )
    return await _deliver("SendRawEmail", request, form, send)


async def _send_templated_email(request: Request, form: Form) -> Reply:
    template = form.get("Template") or form.get("TemplateArn")
    if not template:
        raise ses_common.Refused("Template is required", "InvalidParameterValue")
    send = _addressed(form, subject="")
    data = ses_common.template_data(form.get("TemplateData"), "TemplateData")
    return await _deliver("SendTemplatedEmail", request, form, send, template, data)


async def _deliver(
    action: str,
    request: Request,
    form: Form,
    send: Send,
    template_id: str | None = None,
    data: object = None,
) -> Reply:
    kept: dict[str, Any] = ses_common.options(
        {name: form[name] for name in ("ConfigurationSetName",) if name in form}, request
    )
    tags = _tags(form)
    record = ses_common.record(f"/?Action={action}", send, tags, kept, template_id, data)
    message_id, delivery = await ses_common.deliver_send(request, send, record)
    if not delivery.stored:
        return _error(400, "MessageRejected", nobody_live(list(delivery.refused)))
    return _ok(action, f"<MessageId>{message_id}</MessageId>")


def _addressed(form: Form, **content: Any) -> Send:
    """A send from ``Source`` to ``Destination``'s lists, with ``content`` (Send's fields)."""
    destination = tuple(
        _addresses(form, f"Destination.{kind}Addresses") for kind in ("To", "Cc", "Bcc")
    )
    sender = ses_common.mailbox(form.get("Source"), "Source")
    return ses_common.addressed(
        sender, destination, _addresses(form, "ReplyToAddresses"), **content
    )


def _members(form: Form, prefix: str) -> list[str]:
    """The values of ``prefix.member.1``, ``.2``, ... in order, up to the first missing one."""
    found: list[str] = []
    while (value := form.get(f"{prefix}.member.{len(found) + 1}")) is not None:
        found.append(value)
    return found


def _addresses(form: Form, prefix: str) -> tuple[Mailbox, ...]:
    return ses_common.mailboxes(_members(form, prefix) or None, prefix)


def _tags(form: Form) -> dict[str, str]:
    tags = {}
    n = 1
    while (name := form.get(f"Tags.member.{n}.Name")) is not None:
        tags[name] = form.get(f"Tags.member.{n}.Value", "")
        n += 1
    return tags


def _required(form: Form, name: str) -> str:
    value = form.get(name)
    if value is None:
        raise ses_common.Refused(f"{name} is required", "InvalidParameterValue")
    return value


_ACTIONS: dict[str, Callable[[Request, Form], Awaitable[Reply]]] = {
    "GetSendQuota": _send_quota,
    "SendEmail": _send_email,
    "SendRawEmail": _send_raw_email,
    "SendTemplatedEmail": _send_templated_email,
}
