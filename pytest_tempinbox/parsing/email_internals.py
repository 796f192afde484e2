"""The email package's private names the project relies on, all in this one module.

Each is private to the standard library and may change in any Python release;
``tests/parsing/test_email_internals.py`` fails, naming the Python version, when
one of them disappears, changes its signature, or is no longer used by the
public calls that rely on it. Checked on CPython 3.10, 3.11, 3.12 and 3.13 by
those tests, and by ``tests/parsing/test_corpus_headers.py``, which holds the
parse of every mail of the corpora to one expectation on each of them.

- ``email.message.Message._get_params_preserve(self, failobj, header)``:
  :meth:`~email.message.Message.get_params`, ``get_param``, ``get_boundary``
  and the feed parser's search for a multipart's boundary all come through it.
  Its own splitting of the parameters is quadratic (minutes for a few hundred
  KB of ``;``) and raises on some RFC 2231 sections; :class:`Part` overrides it
  with a linear splitter that never raises.
- ``email._header_value_parser.get_addr_spec(value)`` and
  ``get_angle_addr(value)``: the RFC 5322 grammar for ``local@domain`` and
  ``<local@domain>``, each returning the token read and the rest of the value.
  The SMTP server reads the paths of ``MAIL FROM`` and ``RCPT TO`` with them,
  by the same rules as the headers; re-exported here so that no other module
  imports the private package. Each token has an ``addr_spec``; a malformed
  value raises :class:`email.errors.HeaderParseError`, and an empty one
  :class:`IndexError` in older releases.
- ``email._parseaddr.AddressList(text).addresslist``: the lenient reading of
  an address list, which ``email.utils.getaddresses()`` gave on every Python
  until it turned strict by default (3.13, and the security releases 3.10.15,
  3.11.10 and 3.12.6: CVE-2023-27043), and still gives with ``strict=False``.
  Strict, an ambiguous list (``a@x.test <b@x.test> c@x.test``) reads as no
  address at all; some Linux distributions patched ``getaddresses()`` to refuse
  such lists without a ``strict`` switch. :func:`address_list` calls the class
  itself, so that a header reads the same whichever ``email.utils`` is there.
  Its code is the same in CPython 3.10 to 3.13.

Standard library only and no I/O.
"""

from __future__ import annotations

from email.message import Message
from email.utils import decode_params
from importlib import import_module
from typing import TYPE_CHECKING, Any

from .decode import slow

if TYPE_CHECKING:
    from email._header_value_parser import get_addr_spec, get_angle_addr

__all__ = [
    "PARAMS_LIMIT",
    "Part",
    "address_list",
    "get_addr_spec",
    "get_angle_addr",
    "split_params",
]

_LAZY = ("get_addr_spec", "get_angle_addr")
# Already imported by email.utils; typeshed has no stubs for it.
_parseaddr: Any = import_module("email._parseaddr")


def __getattr__(name: str) -> Any:
    """``get_addr_spec`` and ``get_angle_addr``, imported when first asked for.

    Only the SMTP side's slow path reads addresses with them, and their module
    takes a few milliseconds to import: a parse of the usual message never needs it.
    """
    if name in _LAZY:
        from email import _header_value_parser

        return getattr(_header_value_parser, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def address_list(values: list[str]) -> list[tuple[str, str]]:
    """Read address headers as ``(name, address)`` pairs, the same way on every Python.

    The lenient reading, as ``getaddresses(values, strict=False)`` gives it
    where there is a ``strict``, and ``getaddresses(values)`` where there is
    not: an ambiguous list gives each address it holds, and a piece that holds
    none gives ``("", "")``. Names are returned as written (encoded words and
    all). Never raises on text.
    """
    pairs: list[tuple[str, str]] = _parseaddr.AddressList(", ".join(values)).addresslist
    return list(pairs)


#: Characters of a header searched for MIME parameters.
PARAMS_LIMIT = 16 << 10


def split_params(value: str) -> list[tuple[str, str]]:
    """Split a header into ``(name, value)`` parameters, as the email package does.

    The package's own splitter copies the rest of the header at each ``;`` and
    recounts quotes from the start at each ``;`` inside quotes: quadratic, and
    minutes for a few hundred KB of ``;``. This one gives the same pieces in
    linear time.
    """
    text = ";" + value
    params = []
    position = 0
    while position < len(text):  # text[position] == ";"
        start = position + 1
        end = text.find(";", start)
        if end > start:
            quotes = text.count('"', start, end) - text.count('\\"', start, end)
            while quotes % 2:  # that ";" is inside a quoted string
                following = text.find(";", end + 1)
                if following < 0:
                    end = -1
                    break
                quotes += text.count('"', end, following) - text.count('\\"', end, following)
                end = following
        if end < 0:
            end = len(text)
        piece = text[start:end]
        key, equals, rest = piece.partition("=")
        if equals:
            params.append((key.strip().lower(), rest.strip()))
        else:
            params.append((piece.strip(), ""))
        position = end
    return params


class Part(Message):
    """A compat32 message part whose MIME parameters read in linear time and never raise."""

    # Message.get_params(), get_param() and get_boundary() all come through here,
    # and so does the feed parser when it looks for a multipart's boundary.
    def _get_params_preserve(self, failobj: Any, header: str) -> Any:
        wanted = header.lower()
        # The raw value: a boundary holding 8-bit bytes must match the body's lines.
        value = next((str(v) for k, v in self.raw_items() if k.lower() == wanted), None)
        if value is None:
            return failobj
        params = split_params(value[:PARAMS_LIMIT])
        try:
            decoded = decode_params(params)
        except Exception:  # RFC 2231 sections that do not fit together ("name*" and "name*0")
            return params
        safe: list[tuple[str, Any]] = []
        for name, text in decoded:
            if isinstance(text, tuple) and slow(text[0]):
                # get_boundary() and get_content_charset() decode with that charset.
                text = (None, *text[1:])
            safe.append((name, text))
        return safe
