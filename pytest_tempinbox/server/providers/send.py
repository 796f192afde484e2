"""One send through a provider's API, apart from any provider, and the MIME message it makes.

A provider's module reads its request into a :class:`Send` (who, what, the
attachments) and a :class:`~pytest_tempinbox.values.ProviderRecord` (what the
provider keeps beside the mail); :func:`build_message` writes the message the
provider would have sent, with the standard library's :mod:`email`: text and
HTML as ``multipart/alternative``, inline ``cid:`` parts beside the HTML in
``multipart/related``, attachments in ``multipart/mixed``, with a
``Message-ID`` and a ``Date``. What a request may not say (a header with a line
break, a content type that is not one) is a :class:`SendError`, which each
provider answers in its own shape.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import secrets
import time
from collections.abc import Iterator
from dataclasses import dataclass
from email.header import Header
from email.message import EmailMessage
from email.policy import SMTP
from email.utils import formataddr, formatdate
from typing import Any

from ...values import ProviderRecord

__all__ = [
    "Mailbox",
    "Part",
    "Send",
    "SendError",
    "build_message",
    "checked_address",
    "decode_base64",
    "header_pairs",
    "object_items",
    "optional_object",
    "parse_json",
    "string_list",
]

Mailbox = tuple[str, str]
"""A display name (``""`` without one) and an address."""

# A header's name: printable ASCII but the colon (RFC 5322, section 2.2).
_HEADER_NAME = re.compile(r"[!-9;-~]+")
# What a provider accepts as an address: a local part, an @ and a domain, no space.
_ADDRESS = re.compile(r"[^@\s<>(),;:\"\[\]]+@[^@\s<>(),;:\"\[\]]+")
_CONTENT_TYPE = re.compile(r"[A-Za-z0-9][\w!#$&^.+-]*/[A-Za-z0-9][\w!#$&^.+-]*")
_BREAK = re.compile(r"[\r\n\0]")
# What quoted-printable writes as it is but for soft breaks: printable ASCII but "=", CR, LF.
_QP_AS_IS = bytes(range(0x20, 0x3D)) + bytes(range(0x3E, 0x7F)) + b"\r\n"
_QP_LINE = 75  # the characters of a soft-broken line before its "=" (binascii's)
_LINE = 78  # the longest line a text part carries as it is (the email package's limit)
# Headers the builder writes itself: a send's own header of these names is left out.
_BUILT = frozenset(
    {"from", "to", "cc", "bcc", "reply-to", "subject", "date", "content-type", "mime-version"}
    | {"content-transfer-encoding"}
)


class SendError(Exception):
    """What a request may not say: ``message`` for people, ``field`` the request's field."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field


@dataclass(frozen=True, slots=True)
class Part:
    """An attachment: its file name, content type and bytes; ``content_id`` makes it inline."""

    filename: str
    content_type: str
    content: bytes
    content_id: str | None = None


@dataclass(frozen=True, slots=True)
class Send:
    """One message as a provider's request describes it, provider apart.

    ``headers`` are the custom headers, in the request's order; ``bcc``
    recipients get the message but are not written into it. ``raw``, for a
    send of a whole MIME message (SES's raw sends), is that message, stored as
    it is; the fields then say only who sends and who receives it.
    """

    sender: Mailbox
    to: tuple[Mailbox, ...]
    subject: str
    text: str | None = None
    html: str | None = None
    cc: tuple[Mailbox, ...] = ()
    bcc: tuple[Mailbox, ...] = ()
    reply_to: tuple[Mailbox, ...] = ()
    attachments: tuple[Part, ...] = ()
    headers: tuple[tuple[str, str], ...] = ()
    raw: bytes | None = None

    @property
    def recipients(self) -> tuple[str, ...]:
        """Every recipient's address, To, Cc and Bcc, in that order."""
        mailboxes = self.to + self.cc + self.bcc if self.cc or self.bcc else self.to
        return tuple([address for _, address in mailboxes])


def parse_json(body: bytes) -> object:
    """The request body's JSON; :class:`SendError` for a body that is not JSON or nests too deep.

    A body whose first byte opens an object or an array (UTF-8 without a
    byte order mark) is decoded as UTF-8 at once; any other is left to
    :func:`json.loads` to find its encoding.
    """
    try:
        if body[:1] in (b"{", b"["):
            return json.loads(body.decode("utf-8", "surrogatepass"))  # as json.loads decodes
        return json.loads(body)
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        raise SendError("the request body is not valid JSON") from None


def checked_address(value: object, field: str) -> str:
    """``value`` if it is an email address (``local@domain``); else :class:`SendError`."""
    if not isinstance(value, str) or not _ADDRESS.fullmatch(value) or len(value) > 320:
        shown = value[:80] if isinstance(value, str) else value
        raise SendError(f"{field}: not a valid email address: {shown!r}", field)
    return value


def decode_base64(value: object, field: str) -> bytes:
    """The bytes of a base64 string; :class:`SendError` for anything else."""
    if not isinstance(value, str):
        raise SendError(f"{field} must be a base64 string", field)
    try:  # line breaks allowed, as base64.encodebytes writes them; nothing else
        return base64.b64decode("".join(value.split()), validate=True)
    except (ValueError, UnicodeEncodeError):
        raise SendError(f"{field} is not base64", field) from None


def header_pairs(headers: object, field: str) -> tuple[tuple[str, str], ...]:
    """A request's custom headers (a JSON object of strings), checked; else :class:`SendError`."""
    if headers is None:
        return ()
    if not isinstance(headers, dict):
        raise SendError(f"{field} must be an object of header names to values", field)
    pairs = []
    for name, value in headers.items():
        if not isinstance(value, str):
            raise SendError(f"{field}.{name[:80]} must be a string", field)
        if not _HEADER_NAME.fullmatch(name) or "\r" in value or "\n" in value:
            raise SendError(f"{field} has an invalid header: {name[:80]!r}", field)
        pairs.append((name, value))
    return tuple(pairs)


def optional_object(value: object, field: str) -> dict[str, Any]:
    """A JSON object field, ``{}`` when absent; else :class:`SendError`."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise SendError(f"{field} must be an object", field)
    return value


def string_list(value: object, field: str) -> tuple[str, ...]:
    """An array of strings (tags, categories), ``()`` when absent; else :class:`SendError`."""
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise SendError(f"{field} must be an array of strings", field)
    return tuple(value)


def object_items(
    value: object, field: str, index: str = ".{}"
) -> Iterator[tuple[str, dict[str, Any]]]:
    """Each object of an array field, with its own field's name (``index`` after ``field``).

    An absent field has none; a field that is not an array of objects is a :class:`SendError`.
    """
    if value is None:
        return
    if not isinstance(value, list):
        raise SendError(f"{field} must be an array", field)
    for n, item in enumerate(value):
        at = field + index.format(n)
        if not isinstance(item, dict):
            raise SendError(f"{at} must be an object", at)
        yield at, item


def build_message(send: Send, record: ProviderRecord, message_id: str) -> bytes:
    """The MIME message ``send`` makes, as the provider would send it, with ``message_id``.

    A send naming a template stored at the provider, with no body of its own,
    gets a short text body naming the template and its data. CRLF line endings.
    A value the message cannot carry (a line break in the subject or a name)
    is a :class:`SendError`. A send's ``raw`` message is its message as it is.
    """
    if send.raw is not None:
        return send.raw
    try:
        return _build(send, record, message_id)
    except (ValueError, TypeError) as error:  # the email package's refusals
        raise SendError(f"the message cannot be built: {str(error)[:200]}") from None


def _build(send: Send, record: ProviderRecord, message_id: str) -> bytes:
    # The top headers are written here, as the header registry's parsing of
    # each costs about as much as the rest of the message together; so are the
    # bodies of a send without attachments, the everyday one (a third of a
    # send's cost in the email package). The email package builds the others.
    text, html = send.text, send.html
    if text is None and html is None:
        text = _template_text(record)
    if not send.attachments:
        return _head(send, message_id) + _plain_body(text, html)
    body = EmailMessage(policy=SMTP)
    if text is not None:
        body.set_content(text)
        if html is not None:
            body.add_alternative(html, subtype="html")
    elif html is not None:
        body.set_content(html, subtype="html")
    _attach(body, send.attachments)
    return _head(send, message_id) + body.as_bytes()


def _head(send: Send, message_id: str) -> bytes:
    """The top headers, UTF-8 encoded with CRLFs: the addresses, subject, date, id, custom ones."""
    lines = [f"From: {_addresses((send.sender,))}"]
    for name, mailboxes in (("To", send.to), ("Cc", send.cc), ("Reply-To", send.reply_to)):
        if mailboxes:
            lines.append(f"{name}: {_addresses(mailboxes)}")
    lines.append(f"Subject: {_encoded(send.subject)}")
    lines.append(f"Date: {_date()}")
    if all(name.lower() != "message-id" for name, _ in send.headers):
        lines.append(f"Message-ID: {message_id}")
    for name, value in send.headers:
        if name.lower() not in _BUILT:
            lines.append(f"{name}: {_encoded(value)}")
    return ("\r\n".join(lines) + "\r\n").encode("utf-8")


_last_date = (0, "")  # the second it was written in, and the Date header's value


def _date() -> str:
    """The ``Date`` header's value now: written once a second (it counts whole seconds)."""
    global _last_date
    second = int(time.time())
    if _last_date[0] != second:
        _last_date = (second, formatdate(second, usegmt=True))
    return _last_date[1]


def _plain_body(text: str | None, html: str | None) -> bytes:
    """The MIME headers and body of a text, an HTML, or both as ``multipart/alternative``."""
    if text is None or html is None:
        return b"MIME-Version: 1.0\r\n" + _text_part(
            "plain" if html is None else "html", text or html
        )
    boundary = f"==============={secrets.token_hex(12)}=="
    return (
        (
            f'MIME-Version: 1.0\r\nContent-Type: multipart/alternative; boundary="{boundary}"\r\n'
            f"\r\n--{boundary}\r\n"
        ).encode()
        + _text_part("plain", text)
        + f"\r\n--{boundary}\r\n".encode()
        + _text_part("html", html)
        + f"\r\n--{boundary}--\r\n".encode()
    )


def _text_part(subtype: str, text: str | None) -> bytes:
    """A UTF-8 text part: 7bit or 8bit when its lines are short, else quoted-printable."""
    lines = (text or "").encode("utf-8", "surrogateescape").splitlines()
    data = b"\r\n".join(lines) + b"\r\n"
    if max(map(len, lines), default=0) <= _LINE:
        encoding = "7bit" if data.isascii() else "8bit"
    else:
        encoding = "quoted-printable"
        data = _quoted_printable(lines, data)
    head = f'Content-Type: text/{subtype}; charset="utf-8"\r\nContent-Transfer-Encoding: {encoding}'
    return f"{head}\r\n\r\n".encode() + data


def _quoted_printable(lines: list[bytes], data: bytes) -> bytes:
    """``data`` (its ``lines`` joined by CRLFs) quoted-printable, as binascii.b2a_qp writes it.

    Lines of printable ASCII with no ``=`` and no space at their end, the
    usual long line of a text body, only need their soft breaks: a ``=`` after
    every 75 characters. Those are written here, about six times as fast
    (:func:`binascii.b2a_qp` looks at each byte); any other text goes to it,
    and so does a line that would end as a dot alone. A test holds the two
    equal over generated text.
    """
    if data.translate(None, _QP_AS_IS) or any(line.endswith(b" ") for line in lines):
        return binascii.b2a_qp(data, istext=True)
    out = []
    for line in lines:
        pieces = [line[at : at + _QP_LINE] for at in range(0, len(line), _QP_LINE)] or [b""]
        if pieces[-1] == b".":  # a line of a dot alone is written =2E (SMTP would end there)
            return binascii.b2a_qp(data, istext=True)
        out.append(b"=\r\n".join(pieces))
    return b"\r\n".join(out) + b"\r\n"


def _addresses(mailboxes: tuple[Mailbox, ...]) -> str:
    for name, address in mailboxes:
        if _BREAK.search(name) or _BREAK.search(address):
            raise SendError("a name or address holds a line break")
    return ",\r\n ".join(formataddr(mailbox, "utf-8") for mailbox in mailboxes)


def _encoded(value: str) -> str:
    """A header's value: as it is when short ASCII, else RFC 2047 encoded and folded."""
    if _BREAK.search(value):
        raise SendError(f"a header value holds a line break: {value[:80]!r}")
    if value.isascii() and len(value) < 900:
        return value
    return Header(value, "utf-8").encode(linesep="\r\n")


def _template_text(record: ProviderRecord) -> str:
    if record.template_id is None:
        return ""
    data = json.dumps(record.template_data, ensure_ascii=False, sort_keys=True)
    return (
        f"Sent through {record.name} with the template {record.template_id!r}, which is "
        f"stored at the provider and cannot be rendered here. Its data: {data}\n"
    )


def _attach(message: EmailMessage, parts: tuple[Part, ...]) -> None:
    """Inline parts beside the HTML body (``multipart/related``), the others in the mixed part."""
    html = message.get_body(("html",))
    for part in parts:
        maintype, subtype = _content_type(part.content_type)
        if part.content_id is not None and html is not None:
            html.add_related(
                part.content,
                maintype,
                subtype,
                cid=f"<{part.content_id.strip('<>')}>",
                filename=part.filename,
                disposition="inline",
            )
    for part in parts:
        maintype, subtype = _content_type(part.content_type)
        if part.content_id is None or html is None:
            message.add_attachment(part.content, maintype, subtype, filename=part.filename)


def _content_type(content_type: str) -> tuple[str, str]:
    # Its parameters go: django-anymail sends a text attachment's 'text/plain; charset="utf-8"'.
    bare = content_type.partition(";")[0].strip()
    if not _CONTENT_TYPE.fullmatch(bare):
        raise SendError(f"not a content type: {content_type[:80]!r}")
    maintype, subtype = bare.lower().split("/")
    if maintype == "multipart":  # the builder makes the multiparts itself
        return "application", "octet-stream"
    return maintype, subtype
