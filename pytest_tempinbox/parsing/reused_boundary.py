"""Regroup the parts of a nested multipart that reuses its parent's boundary.

Some bulk mailers and webmails write a ``multipart/alternative`` inside a
``multipart/mixed`` with the same boundary::

    --B                                   (the mixed's first part:)
    Content-Type: multipart/alternative; boundary="B"
    --B   text/plain ...
    --B   text/html ...
    --B--                                 (meant to close the alternative)
    --B   application/zip ...             (the mixed's second part)
    --B--

The email package reads each boundary line as the outer multipart's: the
alternative stays empty (``StartBoundaryNotFoundDefect``), the text and HTML
become the outer's own parts, the first closing line closes the outer, and
every part after it, the zip here, is left in the outer's epilogue, unread.
Mail clients read it as it was meant: GMime (and so Evolution) looks for the
innermost boundary first, so the alternative takes the text and HTML and
closes at the first ``--B--``, and the zip is the outer's next part;
mail-parser recovers the part from the epilogue. :func:`regroup` gives the
same structure: the parts after the empty multipart go back into it, and the
parts written in the outer's epilogue become the outer's own again. Every
part is kept; the defect stays noted. Standard library only and no I/O.
"""

from __future__ import annotations

from email.errors import StartBoundaryNotFoundDefect
from email.message import Message

from .budget import ParseRun

__all__ = ["regroup"]

#: Regroupings done at most in one message: each re-reads an epilogue.
_MAX_REGROUPS = 8


def regroup(message: Message, run: ParseRun) -> None:
    """Regroup, in place, every multipart whose empty child reused its boundary."""
    done = 0
    stack = [message]
    while stack and done < _MAX_REGROUPS:
        part = stack.pop()
        children = _multipart_children(part)
        if children is None:
            continue
        empty = _empty_reuser(part, children)
        if empty is not None and run.clock() <= run.feed_deadline:
            done += 1
            _regroup_one(part, children, empty)
            children = _multipart_children(part) or []
        stack.extend(reversed(children))


def _multipart_children(part: Message) -> list[Message] | None:
    if part.get_content_maintype() != "multipart" or not part.is_multipart():
        return None
    payload = part.get_payload()
    return [child for child in payload if isinstance(child, Message)]


def _empty_reuser(parent: Message, children: list[Message]) -> int | None:
    """The index of the child that reused the parent's boundary and was left empty."""
    boundary = parent.get_boundary()
    if boundary is None:
        return None
    for index, child in enumerate(children):
        if (
            child.get_content_maintype() == "multipart"
            and not child.is_multipart()
            and child.get_boundary() == boundary
            and any(isinstance(defect, StartBoundaryNotFoundDefect) for defect in child.defects)
            and not str(child.get_payload() or "").strip()
        ):
            return index
    return None


def _regroup_one(parent: Message, children: list[Message], index: int) -> None:
    rest = _epilogue_parts(parent)  # first: it may raise, and nothing is changed yet
    inner = children[index]
    moved: list[Message | str] = [*children[index + 1 :]]
    inner.set_payload(moved)
    inner.epilogue = None
    parent.set_payload([*children[: index + 1], *rest.parts])
    parent.epilogue = rest.epilogue


class _Rest:
    __slots__ = ("epilogue", "parts")

    def __init__(self, parts: list[Message], epilogue: str | None) -> None:
        self.parts = parts
        self.epilogue = epilogue


def _epilogue_parts(parent: Message) -> _Rest:
    """The parts written in the parent's epilogue, read under the parent's boundary."""
    epilogue = parent.epilogue or ""
    boundary = parent.get_boundary() or ""
    if f"--{boundary}" not in epilogue:
        return _Rest([], parent.epilogue)
    # Imported here, as in .parts: only malformed mail needs them.
    from email.feedparser import BytesFeedParser

    from .email_internals import Part

    parser = BytesFeedParser(_factory=Part)
    quoted = boundary.replace("\\", "\\\\").replace('"', '\\"')
    parser.feed(f'Content-Type: multipart/mixed; boundary="{quoted}"\n\n'.encode())
    # compat32 keeps 8-bit bytes as surrogate escapes in the epilogue's text.
    parser.feed(epilogue.encode("ascii", "surrogateescape"))
    recovered = parser.close()
    payload = recovered.get_payload() if recovered.is_multipart() else None
    if not isinstance(payload, list) or not payload:
        return _Rest([], parent.epilogue)
    return _Rest([part for part in payload if isinstance(part, Message)], recovered.epilogue)
