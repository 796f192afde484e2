"""HTML form bodies read with the standard library: URL-encoded and ``multipart/form-data``.

For the providers whose APIs take forms (Mailgun): :func:`read_form` turns a
request's body and content type into its fields, in order, each a
:class:`Field` (a value, or a file's name, type and bytes). A form that is
malformed or over the limits (:data:`MAX_FIELDS` fields, a part's headers of
more than :data:`MAX_PART_HEADER` bytes) is a :class:`FormError`, which the
provider answers in its own shape; the body's size is bounded before it gets
here (:func:`~..api.endpoints.send_body_limit`). A multipart body is split on
its boundary by hand, its parts' headers read with :mod:`email.parser`: no
part is parsed as MIME, so a nested multipart is a file's bytes, not a tree.
"""

from __future__ import annotations

from dataclasses import dataclass
from email.message import Message
from email.parser import HeaderParser
from email.utils import collapse_rfc2231_value
from urllib.parse import parse_qsl

__all__ = ["MAX_FIELDS", "MAX_PART_HEADER", "Field", "FormError", "read_form"]

MAX_FIELDS = 2000
"""The most fields a form may have: a batch of 1,000 recipients, one field each, and more."""
MAX_PART_HEADER = 16 * 1024
"""The most bytes of headers a part of a multipart form may have."""


class FormError(ValueError):
    """A body that is not the form its content type says, or is over the limits."""


@dataclass(frozen=True, slots=True)
class Field:
    """One field of a form: ``value``; a file's also its ``filename``, type and ``content``."""

    name: str
    value: str
    filename: str | None = None
    content_type: str | None = None
    content: bytes = b""


def read_form(body: bytes, content_type: str) -> list[Field]:
    """The fields of ``body``, in order, by its ``content_type``; :class:`FormError` else."""
    kind = content_type.split(";")[0].strip().lower()
    if kind == "application/x-www-form-urlencoded":
        return _urlencoded(body)
    if kind == "multipart/form-data":
        return _multipart(body, content_type)
    raise FormError(
        "the body must be a form: application/x-www-form-urlencoded or multipart/form-data"
    )


def _urlencoded(body: bytes) -> list[Field]:
    try:
        text = body.decode("ascii")
        pairs = parse_qsl(
            text,
            keep_blank_values=True,
            max_num_fields=MAX_FIELDS,
            encoding="utf-8",
            errors="replace",
        )
    except UnicodeDecodeError:
        raise FormError("a URL-encoded form is ASCII, other bytes percent-encoded") from None
    except ValueError:  # parse_qsl's "Max number of fields exceeded"
        raise FormError(f"the form has more than {MAX_FIELDS} fields") from None
    return [Field(name, value) for name, value in pairs]


def _boundary(content_type: str) -> bytes:
    header = Message()
    header["Content-Type"] = content_type
    boundary = header.get_param("boundary")
    if not isinstance(boundary, str) or not 0 < len(boundary) <= 200 or not boundary.isascii():
        raise FormError("a multipart/form-data body needs a boundary in its Content-Type")
    return boundary.encode("ascii")


def _multipart(body: bytes, content_type: str) -> list[Field]:
    # Each delimiter is a CRLF, two dashes and the boundary (RFC 2046, section 5.1.1):
    # the boundary's text elsewhere in a line is a file's bytes.
    delimiter = b"\r\n--" + _boundary(content_type)
    body = b"\r\n" + body
    if body.count(delimiter) - 1 > MAX_FIELDS:  # counted before a hostile body is split
        raise FormError(f"the form has more than {MAX_FIELDS} fields")
    chunks = body.split(delimiter)
    # chunks[0] is the preamble; the last chunk starts "--" (the close delimiter).
    if len(chunks) < 2 or not chunks[-1].startswith(b"--"):
        raise FormError("the multipart form is not closed by its boundary")
    fields = []
    for chunk in chunks[1:-1]:
        if not chunk.startswith(b"\r\n"):
            raise FormError("a boundary of the multipart form is not followed by a CRLF")
        fields.append(_part(chunk[2:]))
    return fields


def _part(part: bytes) -> Field:
    head, found, content = part.partition(b"\r\n\r\n")
    if not found:
        raise FormError("a part of the multipart form has no blank line after its headers")
    if len(head) > MAX_PART_HEADER:
        raise FormError(f"a part's headers are over {MAX_PART_HEADER} bytes")
    headers = HeaderParser().parsestr(head.decode("utf-8", "replace"))
    if headers.get_content_disposition() != "form-data":
        raise FormError("each part of the form needs Content-Disposition: form-data")
    name = headers.get_param("name", header="content-disposition")
    if isinstance(name, tuple):  # an RFC 2231 encoded name
        name = collapse_rfc2231_value(name)
    if not isinstance(name, str) or not name:
        raise FormError("each part of the form needs a name")
    filename = headers.get_filename()
    if filename is None:
        return Field(name, content.decode("utf-8", "replace"))
    content_type = headers.get_content_type() if headers["content-type"] else None
    return Field(name, filename, filename, content_type, content)
