"""Mailgun's ``POST /v3/{domain}/messages`` and ``/v3/{domain}/messages.mime``, as Mailgun answers.

Both take a form, URL-encoded or ``multipart/form-data`` (:mod:`.forms`). A
send is answered ``200`` with ``{"id": "<...>", "message": "Queued. Thank
you."}``; the id is the stored message's ``Message-ID``. A request Mailgun
refuses gets ``400`` and ``{"message"}`` (``413`` for a message over the size
limit). ``to``, ``cc`` and ``bcc`` may repeat and hold comma-separated lists;
``attachment`` and ``inline`` are files (an inline file's name is its
``cid:``); ``h:Name`` are headers (``h:Reply-To`` the reply-to),
``v:name`` the record's ``metadata``, ``o:tag`` its ``tags``, the other
``o:`` options and the domain its ``options``; ``template`` and
``t:variables`` its template. With ``recipient-variables``, each ``to``
recipient gets a message of its own, ``%recipient.key%`` replaced by its
variables in the subject, bodies, headers and ``v:`` values, as Mailgun's batch
sending does; each message keeps the ``cc`` and ``bcc``. ``o:testmode``
checks the request and delivers nothing, as at Mailgun.
"""

from __future__ import annotations

import base64
import binascii
import json
import mimetypes
import re
import secrets
from email.parser import BytesHeaderParser
from email.policy import compat32
from email.utils import getaddresses, parseaddr
from typing import Any

from ...values import ProviderRecord
from ..api.endpoints import Reply, encode_json
from ..api.request import Request
from .delivery import TooLarge, deliver
from .forms import Field, FormError, read_form
from .send import Mailbox, Part, Send, SendError, checked_address, header_pairs

__all__ = ["credential", "error_reply", "messages", "messages_mime"]

MAX_RECIPIENTS = 1000
"""Mailgun's limit on the recipients of one request, To, Cc and Bcc together."""
QUEUED = "Queued. Thank you."
"""Mailgun's ``message`` for a send it took."""
_VARIABLE = re.compile(r"%recipient\.([^%\s]+)%")


def error_reply(status: int, message: str) -> Reply:
    """Mailgun's error answer: ``{"message": ...}`` with ``status``."""
    return Reply(status, encode_json({"message": message}))


def credential(request: Request) -> str | None:
    """The API key of the request's Basic ``Authorization`` (user ``api``), or None."""
    scheme, _, encoded = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        user, found, key = base64.b64decode(encoded.strip(), validate=True).decode().partition(":")
    except (binascii.Error, ValueError):
        return None
    return key if found and user == "api" and key else None


async def messages(request: Request) -> Reply:
    """``POST /v3/{domain}/messages``: deliver the form's message (one per recipient in a batch)."""
    return await _answer(request, mime=False)


async def messages_mime(request: Request) -> Reply:
    """``POST /v3/{domain}/messages.mime``: deliver the ``message`` file as it is to ``to``."""
    return await _answer(request, mime=True)


async def _answer(request: Request, *, mime: bool) -> Reply:
    domain = str(request.args.get("domain", ""))
    endpoint = f"/v3/{domain}/messages" + (".mime" if mime else "")
    base = f"{secrets.token_hex(8)}.{secrets.token_hex(4)}"
    try:
        fields = read_form(request.body, request.headers.get("content-type", ""))
        form = _Form(fields)
        record = _record(form, domain, endpoint)
        sends = _mime_send(form) if mime else _sends(form)
        if (form.one("o:testmode") or "").lower() in ("yes", "true"):
            return _queued(base)
        config = request.server().config
        delivered, refused = 0, list[str]()
        for n, (send, variables) in enumerate(sends):
            each = base if len(sends) == 1 else f"{base}.{n}"
            own = _substituted(record, variables) if variables is not None else record
            delivery = await deliver(request.store, config, send, own, each)
            delivered += len(delivery.stored)
            refused += delivery.refused
    except TooLarge as error:
        return error_reply(413, error.message)
    except (SendError, FormError) as error:
        return error_reply(400, str(error))
    if not delivered:
        shown = ", ".join(refused[:5]) + (", ..." if len(refused) > 5 else "")
        return error_reply(400, f"no recipient is a live inbox of this server: {shown}")
    return _queued(base)


def _queued(base: str) -> Reply:
    return Reply(200, encode_json({"id": f"<{base}@mailgun.tempinbox.invalid>", "message": QUEUED}))


class _Form:
    """A form's fields by name, in order."""

    def __init__(self, fields: list[Field]) -> None:
        self.fields = fields

    def all(self, name: str) -> list[Field]:
        return [field for field in self.fields if field.name == name]

    def one(self, name: str, default: str | None = None) -> str | None:
        found = [field.value for field in self.fields if field.name == name and not field.filename]
        return found[-1] if found else default

    def prefixed(self, prefix: str) -> dict[str, str]:
        return {
            field.name[len(prefix) :]: field.value
            for field in self.fields
            if field.name.startswith(prefix) and not field.filename
        }


def _mailboxes(form: _Form, name: str) -> tuple[Mailbox, ...]:
    """Every address of the field ``name``: repeated, comma lists, ``"Name <a@b>"``."""
    values = [field.value for field in form.all(name)]
    if any("\r" in value or "\n" in value for value in values):
        raise SendError(f"'{name}' parameter holds a line break")
    return tuple(
        (display, checked_address(address, f"'{name}' parameter"))
        for display, address in getaddresses(values)
        if display or address
    )


def _sender(form: _Form) -> Mailbox:
    sender = _mailboxes(form, "from")
    if not sender:
        raise SendError("'from' parameter is missing")
    return sender[0]


def _recipients(form: _Form) -> tuple[tuple[Mailbox, ...], ...]:
    to, cc, bcc = (_mailboxes(form, name) for name in ("to", "cc", "bcc"))
    if not to:
        raise SendError("'to' parameter is missing")
    if len(to) + len(cc) + len(bcc) > MAX_RECIPIENTS:
        raise SendError(f"Too many recipients: at most {MAX_RECIPIENTS} per request")
    return to, cc, bcc


_Each = tuple[Send, "dict[str, Any] | None"]
"""A message of a request: its send (a MIME send's raw bytes in it), its recipient's variables."""


def _sends(form: _Form) -> list[_Each]:
    """The messages of a form send: one, or one per ``to`` with ``recipient-variables``."""
    sender = _sender(form)
    to, cc, bcc = _recipients(form)
    subject, text = form.one("subject"), form.one("text")
    html, template = form.one("html"), form.one("template")
    if subject is None and template is None:  # a template may give the subject
        raise SendError("'subject' parameter is missing")
    if text is None and html is None and template is None:
        raise SendError("Need at least one of 'text', 'html' or 'template' parameters specified")
    headers = form.prefixed("h:")
    reply_to = headers.pop("Reply-To", None) or headers.pop("reply-to", None)
    send = Send(
        sender=sender,
        to=to,
        cc=cc,
        bcc=bcc,
        reply_to=tuple(getaddresses([reply_to])) if reply_to else (),
        subject=subject or "",
        text=text,
        html=html,
        attachments=_files(form),
        headers=header_pairs(headers, "h:"),
    )
    variables = _recipient_variables(form.one("recipient-variables"))
    if variables is None:
        return [(send, None)]
    return [_personal(send, mailbox, variables.get(mailbox[1].lower(), {})) for mailbox in to]


def _recipient_variables(value: str | None) -> dict[str, dict[str, Any]] | None:
    if value is None:
        return None
    try:
        variables = json.loads(value)
    except (ValueError, RecursionError):
        raise SendError("'recipient-variables' parameter is not valid JSON") from None
    if not isinstance(variables, dict) or not all(isinstance(v, dict) for v in variables.values()):
        raise SendError("'recipient-variables' must be a JSON object of recipients to objects")
    return {address.lower(): own for address, own in variables.items()}


def _personal(send: Send, mailbox: Mailbox, variables: dict[str, Any]) -> _Each:
    """The message of one recipient of a batch, its ``%recipient.key%`` replaced."""

    def swap(text: str | None) -> str | None:
        return None if text is None else _substitute(text, variables)

    own = Send(
        sender=send.sender,
        to=(mailbox,),
        cc=send.cc,
        bcc=send.bcc,
        reply_to=send.reply_to,
        subject=swap(send.subject) or "",
        text=swap(send.text),
        html=swap(send.html),
        attachments=send.attachments,
        headers=tuple((name, _substitute(value, variables)) for name, value in send.headers),
    )
    return own, variables


def _substitute(text: str, variables: dict[str, Any]) -> str:
    """``text`` with each ``%recipient.key%`` of ``variables`` replaced, the others left."""

    def value(found: re.Match[str]) -> str:
        if found[1] not in variables:
            return found[0]
        item = variables[found[1]]
        return item if isinstance(item, str) else json.dumps(item)

    return _VARIABLE.sub(value, text)


def _substituted(record: ProviderRecord, variables: dict[str, Any]) -> ProviderRecord:
    """The record of one recipient's message: its variables in the ``v:`` values and headers."""
    metadata = {
        key: _substitute(value, variables) if isinstance(value, str) else value
        for key, value in record.metadata.items()
    }
    headers = {key: _substitute(value, variables) for key, value in record.headers.items()}
    options = {**record.options, "recipient-variables": variables}
    return ProviderRecord(
        record.name,
        record.endpoint,
        record.template_id,
        record.template_data,
        record.tags,
        metadata,
        headers,
        options,
    )


def _files(form: _Form) -> tuple[Part, ...]:
    parts = []
    for field in form.fields:
        if field.name not in ("attachment", "inline"):
            continue
        if field.filename is None:
            raise SendError(f"'{field.name}' must be a file of a multipart/form-data body")
        content_type = (
            field.content_type
            or mimetypes.guess_type(field.filename)[0]
            or "application/octet-stream"
        )
        content_id = field.filename if field.name == "inline" else None
        parts.append(Part(field.filename, content_type, field.content, content_id))
    return tuple(parts)


def _record(form: _Form, domain: str, endpoint: str) -> ProviderRecord:
    options: dict[str, Any] = {"domain": domain}
    options.update({f"o:{name}": value for name, value in form.prefixed("o:").items()})
    options.pop("o:tag", None)
    variables = form.one("t:variables") or form.one("h:X-Mailgun-Variables")
    template_data: Any = None
    if variables is not None:
        try:
            template_data = json.loads(variables)
        except (ValueError, RecursionError):
            raise SendError("'t:variables' parameter is not valid JSON") from None
    for name in ("t:version", "t:text"):
        if form.one(name) is not None:
            options[name] = form.one(name)
    headers = form.prefixed("h:")
    return ProviderRecord(
        name="mailgun",
        endpoint=endpoint,
        template_id=form.one("template"),
        template_data=template_data if form.one("template") is not None else None,
        tags=tuple(field.value for field in form.all("o:tag")),
        metadata=form.prefixed("v:"),
        headers=headers,
        options=options,
    )


def _mime_send(form: _Form) -> list[_Each]:
    """The ``message`` file, to the ``to`` recipients, its From the envelope's sender."""
    to, cc, bcc = _recipients(form)
    files = [field for field in form.all("message") if field.filename is not None]
    if not files:
        raise SendError("'message' parameter is missing: the MIME message, as a file")
    raw = files[0].content
    head = BytesHeaderParser(policy=compat32).parsebytes(raw)
    _, sender = parseaddr(str(head.get("from", "")))
    send = Send(sender=("", sender), to=to, cc=cc, bcc=bcc, subject="", raw=raw)
    return [(send, None)]
