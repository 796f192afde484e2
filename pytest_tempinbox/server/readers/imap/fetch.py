"""FETCH: which items a client asks for, and each message's answer (RFC 3501 6.4.5, 7.4.2).

:func:`parse_items` reads the items once per command into :class:`Item` values;
:func:`render` writes one message's ``* n FETCH (...)`` line from them. Message
text is always the raw bytes as received, sent as literals with exact octet
counts; the MIME tree (:mod:`.mime`) is read only for items that need it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ...store.protocol import StoredMessage
from .mailbox import Mailbox, internal_date
from .mime import Part, header_fields, parse_part
from .structure import body_structure, envelope
from .tokens import BadSyntax, Value, tokenize

__all__ = ["Item", "parse_items", "render"]

_MACROS = {
    "ALL": ["FLAGS", "INTERNALDATE", "RFC822.SIZE", "ENVELOPE"],
    "FAST": ["FLAGS", "INTERNALDATE", "RFC822.SIZE"],
    "FULL": ["FLAGS", "INTERNALDATE", "RFC822.SIZE", "ENVELOPE", "BODY"],
}
_SIMPLE = {
    "FLAGS",
    "UID",
    "INTERNALDATE",
    "RFC822.SIZE",
    "ENVELOPE",
    "BODY",
    "BODYSTRUCTURE",
    "RFC822",
    "RFC822.HEADER",
    "RFC822.TEXT",
}
_SECTION = re.compile(
    r"(?P<name>BODY|BODY\.PEEK)\[(?P<section>[^\]]*)\](?:<(?P<start>\d{1,10})(?:\.(?P<length>\d{1,10}))?>)?\Z",
    re.IGNORECASE,
)
_SECTION_TEXT = re.compile(
    r"(?P<path>\d{1,5}(?:\.\d{1,5})*)?\.?(?P<kind>HEADER\.FIELDS\.NOT|HEADER\.FIELDS|HEADER|TEXT|MIME)?"
    r"(?P<rest>.*)\Z",
    re.IGNORECASE | re.DOTALL,
)


@dataclass(frozen=True)
class Item:
    """One FETCH item: a plain one (``FLAGS``) or a body section with its part and range."""

    name: str
    path: tuple[int, ...] = ()
    kind: str = ""  # "", HEADER, HEADER.FIELDS, HEADER.FIELDS.NOT, TEXT, MIME
    fields: tuple[str, ...] = ()
    start: int | None = None
    length: int | None = None
    peek: bool = False
    label: str = ""  # how the answer names it

    @property
    def sends_text(self) -> bool:
        """Tell whether the answer holds message text (a header or a body), for the counters."""
        return self.name.startswith(("RFC822", "BODY[")) and self.name != "RFC822.SIZE"

    @property
    def sets_seen(self) -> bool:
        """Tell whether fetching it sets the seen flag (a non-peek body read)."""
        return self.name in ("RFC822", "RFC822.TEXT") or (self.name == "BODY[]" and not self.peek)


def parse_items(value: Value, *, by_uid: bool) -> list[Item]:
    """The items of a FETCH: an atom, a macro or a list (UID first for UID FETCH)."""
    raw = value if isinstance(value, list) else [value]
    if not raw:
        raise BadSyntax("FETCH needs at least one item")
    names: list[str] = []
    for entry in raw:
        if not isinstance(entry, str):
            raise BadSyntax("FETCH items are atoms, such as FLAGS or BODY.PEEK[]")
        if entry.upper() in _MACROS and not isinstance(value, list):
            names += _MACROS[entry.upper()]
        else:
            names.append(entry)
    items = [_item(name) for name in names]
    if by_uid and not any(item.name == "UID" for item in items):
        items.insert(0, Item("UID", label="UID"))
    return items


def _item(text: str) -> Item:
    upper = text.upper()
    if upper in _SIMPLE:
        return Item(upper, label=upper)
    match = _SECTION.match(text)
    if match is None:
        raise BadSyntax(f"unknown FETCH item {text[:40]!r}")
    section = _SECTION_TEXT.match(match.group("section"))
    assert section is not None  # the pattern matches any text
    kind = (section.group("kind") or "").upper()
    path = tuple(int(n) for n in section.group("path").split(".")) if section.group("path") else ()
    if any(number == 0 for number in path):
        raise BadSyntax("section part numbers start at 1")
    if kind == "MIME" and not path:
        raise BadSyntax("MIME needs a part number")
    fields: tuple[str, ...] = ()
    rest = section.group("rest").strip()
    if kind.startswith("HEADER.FIELDS"):
        names = tokenize(rest.encode("utf-8", "replace"))
        if len(names) != 1 or not isinstance(names[0], list) or not names[0]:
            raise BadSyntax(f"{kind} needs a parenthesized list of field names")
        fields = tuple(
            name.decode("utf-8", "replace") if isinstance(name, bytes) else str(name)
            for name in names[0]
        )
        rest = ""
    if rest:
        raise BadSyntax(f"unknown section {match.group('section')[:40]!r}")
    start = match.group("start")
    length = match.group("length")
    section_label = ".".join(map(str, path))
    if kind:
        section_label += ("." if path else "") + kind
    if fields:
        section_label += " (" + " ".join(fields) + ")"
    label = f"BODY[{section_label}]" + (f"<{int(start)}>" if start is not None else "")
    return Item(
        "BODY[]",
        path=path,
        kind=kind,
        fields=fields,
        start=None if start is None else int(start),
        length=None if length is None else int(length),
        peek=match.group("name").upper() == "BODY.PEEK",
        label=label,
    )


def render(number: int, message: StoredMessage, items: list[Item], mailbox: Mailbox) -> bytes:
    """The ``* n FETCH (...)`` answer for one message, CRLF included."""
    flags = mailbox.flags(message)
    answered_flags = False
    if not mailbox.read_only and "\\Seen" not in flags and any(i.sets_seen for i in items):
        flags.add("\\Seen")
        if not any(item.name == "FLAGS" for item in items):
            items = [*items, Item("FLAGS", label="FLAGS")]
    tree: Part | None = None
    raw = b""  # read once, when an item needs it: a read message's bytes are kept compressed
    out = [b"* %d FETCH (" % number]
    for index, item in enumerate(items):
        if index:
            out.append(b" ")
        name = item.name
        if name == "FLAGS":
            if answered_flags:
                out.pop()
                continue
            answered_flags = True
            out.append(b"FLAGS (" + " ".join(sorted(flags)).encode() + b")")
        elif name == "UID":
            out.append(b"UID %d" % message.uid)
        elif name == "INTERNALDATE":
            out.append(b"INTERNALDATE " + internal_date(message.received_at))
        elif name == "RFC822.SIZE":
            out.append(b"RFC822.SIZE %d" % message.size)
        elif name == "RFC822":
            raw = raw or message.raw
            out.append(b"RFC822 " + _literal(raw))
        elif name == "BODY[]" and not item.path and not item.kind:  # the whole message: no parse
            raw = raw or message.raw
            out.append(item.label.encode() + b" " + _ranged(raw, item))
        else:
            raw = raw or message.raw
            tree = tree or parse_part(raw)
            if name == "ENVELOPE":
                out.append(b"ENVELOPE " + envelope(tree))
            elif name in ("BODY", "BODYSTRUCTURE"):
                out.append(
                    name.encode() + b" " + body_structure(tree, extended=name == "BODYSTRUCTURE")
                )
            elif name == "RFC822.HEADER":
                out.append(b"RFC822.HEADER " + _literal(tree.header))
            elif name == "RFC822.TEXT":
                out.append(b"RFC822.TEXT " + _literal(tree.body))
            else:
                out.append(item.label.encode() + b" " + _section(raw, tree, item))
    out.append(b")\r\n")
    return b"".join(out)


def _section(raw: bytes, tree: Part, item: Item) -> bytes:
    return _ranged(_section_bytes(raw, tree, item), item)


def _ranged(data: bytes, item: Item) -> bytes:
    """``data`` as a literal, cut to the item's ``<start.length>`` when it has one."""
    if item.start is not None:
        data = data[item.start :]
        if item.length is not None:
            data = data[: item.length]
    return _literal(data)


def _section_bytes(raw: bytes, tree: Part, item: Item) -> bytes:
    if not item.path and not item.kind:
        return raw
    part = tree.find(list(item.path)) if item.path else tree
    if part is None:
        return b""
    if item.kind == "MIME":
        return part.header
    if item.path and item.kind in ("HEADER", "HEADER.FIELDS", "HEADER.FIELDS.NOT", "TEXT"):
        # 1.HEADER and 1.TEXT are those of the message attached as part 1
        if not (part.type == "message" and part.subtype == "rfc822" and part.children):
            return b""
        part = part.children[0]
    if not item.kind:
        return part.body
    if item.kind == "HEADER":
        return part.header
    if item.kind == "TEXT":
        return part.body
    names = {name.lower() for name in item.fields}
    return header_fields(part.header, names, keep=item.kind == "HEADER.FIELDS")


def _literal(data: bytes) -> bytes:
    return b"{%d}\r\n%s" % (len(data), data)
