"""ENVELOPE, BODY and BODYSTRUCTURE of a message as RFC 3501 (7.4.2) writes them.

Header values are given as written in the message (encoded words left
encoded, as IMAP servers do); sizes count the part's raw body octets, lines its
line ends.
"""

from __future__ import annotations

from email.utils import getaddresses

from .mime import Part
from .tokens import nstring, quoted

__all__ = ["body_structure", "envelope"]

_ENVELOPE_ADDRESSES = ("from", "sender", "reply-to", "to", "cc", "bcc")


def envelope(part: Part) -> bytes:
    """The ENVELOPE of the message whose top part is ``part``."""
    fields = [nstring(part.text_of("date")), nstring(part.text_of("subject"))]
    sender_default = part.text_of("from")
    for name in _ENVELOPE_ADDRESSES:
        value = part.text_of(name)
        if value is None and name in ("sender", "reply-to"):
            value = sender_default
        fields.append(_addresses(value))
    fields.append(nstring(part.text_of("in-reply-to")))
    fields.append(nstring(part.text_of("message-id")))
    return b"(" + b" ".join(fields) + b")"


def _addresses(value: str | None) -> bytes:
    if value is None or not value.strip():
        return b"NIL"
    items = []
    for name, address in getaddresses([value]):
        if not address and not name:
            continue
        mailbox, at, host = address.rpartition("@")
        if not at:
            mailbox, host = address, ""
        items.append(
            b"("
            + b" ".join(
                [nstring(name or None), b"NIL", nstring(mailbox or None), nstring(host or None)]
            )
            + b")"
        )
    return b"(" + b"".join(items) + b")" if items else b"NIL"


def body_structure(part: Part, *, extended: bool) -> bytes:
    """The part's BODYSTRUCTURE (``extended``) or BODY."""
    if part.type == "multipart":
        children = b"".join(body_structure(child, extended=extended) for child in part.children)
        if not children:  # a multipart without parts: show it as an empty text part
            children = b'("TEXT" "PLAIN" NIL NIL NIL "7BIT" 0 0)'
        fields = [children, quoted(part.subtype.upper().encode())]
        if extended:
            fields += [_params(part), _disposition(part), _language(part), _location(part)]
        return b"(" + b" ".join(fields) + b")"
    fields = [
        quoted(part.type.upper().encode()),
        quoted(part.subtype.upper().encode()),
        _params(part),
        nstring(part.text_of("content-id")),
        nstring(part.text_of("content-description")),
        quoted((part.text_of("content-transfer-encoding") or "7BIT").strip().upper().encode()),
        str(len(part.body)).encode(),
    ]
    if part.type == "message" and part.subtype == "rfc822" and part.children:
        inner = part.children[0]
        fields += [envelope(inner), body_structure(inner, extended=extended), _lines(part.body)]
    elif part.type == "text":
        fields.append(_lines(part.body))
    if extended:
        md5 = nstring(part.text_of("content-md5"))
        fields += [md5, _disposition(part), _language(part), _location(part)]
    return b"(" + b" ".join(fields) + b")"


def _lines(body: bytes) -> bytes:
    count = body.count(b"\n")
    if body and not body.endswith(b"\n"):
        count += 1
    return str(count).encode()


def _params(part: Part) -> bytes:
    params = part.message.get_params() if "content-type" in part.message else None
    if not params:
        if part.type == "text" and "content-type" not in part.message:
            return b'("CHARSET" "us-ascii")'
        return b"NIL"
    return _param_list(params[1:])


def _param_list(params: list[tuple[str, str]]) -> bytes:
    items = []
    for name, value in params:
        if isinstance(value, tuple):  # RFC 2231: (charset, language, text)
            value = value[2]
        items.append(quoted(name.upper().encode()) + b" " + nstring(str(value)))
    return b"(" + b" ".join(items) + b")" if items else b"NIL"


def _disposition(part: Part) -> bytes:
    if "content-disposition" not in part.message:
        return b"NIL"
    params = part.message.get_params(header="content-disposition") or []
    if not params:
        return b"NIL"
    kind = params[0][0]
    return b"(" + quoted(kind.upper().encode()) + b" " + _param_list(params[1:]) + b")"


def _language(part: Part) -> bytes:
    return nstring(part.text_of("content-language"))


def _location(part: Part) -> bytes:
    return nstring(part.text_of("content-location"))
