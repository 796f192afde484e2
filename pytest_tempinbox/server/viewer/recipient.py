"""A message's HTML as its recipient's mail program shows it: inline ``cid:`` images resolved.

A mail's HTML names its own inline parts by ``cid:`` URLs (``<img
src="cid:logo@shop">``, also in ``background`` attributes and CSS ``url()``).
:func:`resolve_cid_images` writes each one the message holds as a ``data:``
URL of that part's bytes, so the page needs no request to show them, and
leaves the others (and every remote URL) as they are: the viewer's policy
blocks remote content unless asked for. Parts over :data:`MAX_INLINE_BYTES`
stay ``cid:`` (a broken image, as in a mail program that will not load it).
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import unquote

from ...errors import AttachmentNotFound
from ...parsing.message import attachment_payload

__all__ = ["MAX_INLINE_BYTES", "resolve_cid_images"]

MAX_INLINE_BYTES = 5 * 1024 * 1024
"""The largest part written into the page as a ``data:`` URL."""

# A cid: URL in an attribute or a CSS url(): up to a quote, a space, ")" or ">".
_CID = re.compile(r"""cid:([^\s"'()<>]+)""", re.IGNORECASE)


def _content_id(value: str) -> str:
    """A Content-ID as a ``cid:`` URL names it: no angle brackets, URL-decoded, any case."""
    return unquote(value.strip().strip("<>")).lower()


def resolve_cid_images(html: str, raw: bytes, attachments: Iterable[Mapping[str, Any]]) -> str:
    """``html`` with each ``cid:`` URL of a part of the message (``raw``) as a ``data:`` URL.

    ``attachments`` are the message's attachments in their JSON form (index,
    content_type, size, content_id). Each part is decoded once, however many
    times it is named.
    """
    by_id = {
        _content_id(item["content_id"]): item
        for item in attachments
        if item.get("content_id") and item.get("size", 0) <= MAX_INLINE_BYTES
    }
    if not by_id or "cid:" not in html.lower():
        return html
    made: dict[str, str | None] = {}

    def data_url(match: re.Match[str]) -> str:
        wanted = _content_id(match.group(1))
        if wanted not in made:
            made[wanted] = _data_url(raw, by_id[wanted]) if wanted in by_id else None
        return made[wanted] or match.group(0)

    return _CID.sub(data_url, html)


def _data_url(raw: bytes, item: Mapping[str, Any]) -> str | None:
    try:
        _, payload = attachment_payload(raw, int(item["index"]))
    except AttachmentNotFound:
        return None
    media_type = str(item.get("content_type") or "application/octet-stream").split(";")[0]
    return f"data:{media_type};base64,{base64.b64encode(payload).decode('ascii')}"
