"""The SMTP conversation of a session, kept cheaply as it happens and written out when asked.

A session's :class:`Transcript` holds a plain list of what was said, each
float in it the time (``perf_counter``) of the entries since the float before:
the fast lane appends to it inline, with no function call per line, the
bytes of each command line it serves and of each batch of replies it writes,
and the time once per batch written; aiosmtpd's side feeds
:meth:`Transcript.client` and :meth:`Transcript.server`, a time per entry.
What an entry is tells whose it is: bytes opening with a digit are the
server's (every SMTP reply does), other bytes and a ``str`` the client's, an
``int`` DATA's octets (counted, not kept: ``<N octets of message data>``).
AUTH's payloads are masked as they are read (``AUTH PLAIN ****``, and every
line answering a ``334`` challenge as ``****``), so no secret is ever held.
Both sides record a command line before serving it, so that a refusal's
transcript ends with it. Each ``MAIL`` empties the list in place but for its
own line (the fast lane keeps appending to it): what came before the first
one is the session's opening (greeting, EHLO, STARTTLS, AUTH), kept once as
a tuple. The fast lane bounds the list as it writes replies, not as it
reads each line (:data:`SLOTS`). A message keeps its transcript as one
tuple of plain values (:meth:`Transcript.kept`: the session's start,
opening, TLS and AUTH as one tuple its messages share, the client facts,
then the transaction's entries), which the garbage collector stops tracking
after its first collections, so keeping many costs no collection time: on
the message itself when the store keeps in memory the messages it delivers,
else in a :class:`TranscriptBook` of the newest by id. The lines, their
times and the JSON of ``GET /api/messages/{email}/{id}/transcript`` are made
only when read (:class:`Written`).
Standard library only; see ``docs/transcripts.md``.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Iterable
from datetime import datetime, timezone
from time import perf_counter
from typing import Any

__all__ = [
    "MAX_LINE",
    "MAX_LINES",
    "MAX_TRANSCRIPTS",
    "REFUSAL_LINES",
    "SLOTS",
    "Transcript",
    "TranscriptBook",
]

_FIXED = 7
"""Fields of a kept transcript before the transaction's entries (:meth:`Transcript.kept`)."""
MAX_LINES = 500
"""Lines kept of one transaction; the lines after are counted (``... N lines cut``)."""
MAX_LINE = 512
"""Characters kept of one line."""
MAX_TRANSCRIPTS = 10_000
"""Transcripts a server keeps, the newest messages'."""
REFUSAL_LINES = 20
"""Lines a refusal keeps of its session's transcript: the last ones, ending with the refusal."""
SLOTS = 2 * (MAX_LINES + 2)
"""Slots of a transaction's list (two per entry); entries after are counted as cut."""

_MASK = b"****"


class Transcript:
    """One SMTP session's conversation as both sides sent it; see the module's docstring."""

    __slots__ = (
        "_data_tail",
        "_partial",
        "auth",
        "cut",
        "head",
        "in_data",
        "lines",
        "masking",
        "octets",
        "opening",
        "started",
        "started_at",
        "tls",
    )

    def __init__(self) -> None:
        self.started_at = datetime.now(timezone.utc)
        self.started = perf_counter()
        self.lines: list[Any] = []
        """The current transaction's entries, each float the time of those before it (see above)."""
        self.cut = 0
        """Entries of the current transaction counted, not kept."""
        self.opening: tuple[Any, ...] | None = None  # what came before the first MAIL, once one did
        self.auth: str | None = None
        self.tls: tuple[str | None, str | None] | None = None
        self.head: tuple[Any, ...] | None = None  # what every message of the session keeps alike
        self.in_data = False
        self.masking = False  # answering AUTH's 334 challenges
        self.octets = 0
        self._partial = b""
        self._data_tail = b""

    def mail(self, recorded: bool = False) -> None:
        """Start a transaction (its ``MAIL`` line comes next): empty :attr:`lines` in place.

        With ``recorded``, the ``MAIL`` line is the list's last entry already
        (the fast lane records a line before serving it), and stays, as the
        new transaction's first. The first time, what the list held before is
        kept as the session's opening, closed by the time now (replies to its
        last lines may still be on their way).
        """
        lines = self.lines
        if self.opening is None:
            self.opening = (*(lines[:-1] if recorded else lines), perf_counter())
            self.head = None
        del lines[: -1 if recorded else None]
        self.cut = 0

    def secure(self, transport: Any) -> None:
        """Note the TLS version and cipher of ``transport``, if it runs TLS."""
        ssl_object = transport.get_extra_info("ssl_object")
        if ssl_object is not None:
            self.tls = (ssl_object.version(), (ssl_object.cipher() or (None,))[0])
            self.head = None

    def kept(self, session: Any, final: str) -> tuple[Any, ...]:
        """What the transaction just ended with the reply ``final`` keeps: plain values only.

        Of ``session`` (aiosmtpd's, or the fast lane's) it keeps the client's
        socket address, its EHLO name and the login (``auth_data``) as they are
        (a tuple, a string, a named tuple of bytes), read when the transcript
        is. What every message of the session keeps alike (its start, opening,
        TLS and AUTH) is one tuple, made again only when one of them changes.
        """
        head = self.head
        if head is None:
            head = self.head = (
                self.started,
                self.started_at,
                self.opening or (),
                self.tls,
                self.auth,
            )
        login = getattr(session, "auth_data", None)
        # One tuple, the transaction's entries last: one object per message for the collector.
        # Its _FIXED first fields are the ones Written reads by position.
        return (
            head,
            self.cut,
            final,
            perf_counter(),
            session.peer,
            session.host_name,
            login,
            *self.lines,
        )

    def refused(self, session: Any, reply: str) -> dict[str, Any]:
        """The JSON transcript of a refusal with ``reply``: the last :data:`REFUSAL_LINES` lines."""
        # The line refused is the last entry: both sides record a line before serving it.
        return Written(self.kept(session, reply)).document(REFUSAL_LINES)

    def _add(self, what: Any) -> None:
        if len(self.lines) < SLOTS:
            self.lines += (what, perf_counter())
        else:
            self.cut += 1

    def client(self, data: bytes) -> None:
        """Take bytes the client sent (aiosmtpd's side): whole lines, DATA's octets counted."""
        if self._partial:
            data, self._partial = self._partial + data, b""
        while data:
            if self.in_data:
                data = self._data(data)
                continue
            end = data.find(b"\n")
            if end < 0:
                self._partial = data[-MAX_LINE:] if len(data) > MAX_LINE else data
                return
            line, data = data[:end].rstrip(b"\r"), data[end + 1 :]
            self._command(line)

    def _command(self, line: bytes) -> None:
        if self.masking:
            self._add(_MASK)
            return
        verb = line[:5].upper()
        if verb == b"AUTH ":
            mechanism, _, payload = line[5:].strip().partition(b" ")
            self.auth = mechanism.decode("ascii", "replace").upper()
            self.head = None
            line = b"AUTH " + mechanism + (b" " + _MASK if payload else b"")
        elif verb[:4] == b"MAIL":
            self.mail()
        line = line[:MAX_LINE]
        # A client's line opening with a digit is kept as text: bytes that do are the server's.
        self._add(line.decode("utf-8", "replace") if line[:1].isdigit() else line)

    def _data(self, data: bytes) -> bytes:
        """Count DATA's octets up to its final dot; the bytes after it."""
        seen = self._data_tail + data
        end = seen.find(b"\r\n.\r\n")
        if end < 0 and seen.startswith(b".\r\n"):
            end = -2
        if end == -1:
            self.octets += len(data)
            self._data_tail = seen[-4:]
            return b""
        used = end + 5 - len(self._data_tail)
        self._add(self.octets + max(0, used - 3))
        self.in_data, self._data_tail = False, b""
        return data[used:]

    def server(self, data: bytes) -> None:
        """Take a reply aiosmtpd's side wrote (its line end included)."""
        self._add(data[:MAX_LINE])
        self.masking = data.startswith(b"334")
        if data.startswith(b"354"):
            self.in_data = True
            self.octets = 0
            self._data_tail = b"\r\n"  # a message that is only the final dot


class Written:
    """One message's transcript as kept (:meth:`Transcript.kept`); :meth:`json` writes it out."""

    __slots__ = ("kept",)

    def __init__(self, kept: tuple[Any, ...]) -> None:
        self.kept = kept

    def entries(self, last: int | None = None) -> tuple[list[dict[str, Any]], int]:
        """The lines, each ``at_ms``, ``from`` and ``line``, and how many were cut.

        With ``last``, only the last ``last`` lines (the final reply among them).
        """
        (start, _, opening, _, _), cut, final, finished, *_ = self.kept[:_FIXED]
        said = self.kept[_FIXED:]
        out: list[dict[str, Any]] = []
        waiting: list[Any] = []  # entries whose time comes after them
        for what in (*opening, *said, finished):
            if not isinstance(what, float):
                waiting.append(what)
                continue
            at_ms = round((what - start) * 1000, 3)
            for entry in waiting:
                out += _lines(entry, at_ms)
            waiting.clear()
        if len(out) > MAX_LINES:
            cut += len(out) - MAX_LINES
            del out[MAX_LINES:]
        out.append({"at_ms": round((finished - start) * 1000, 3), "from": "server", "line": final})
        if last is not None and len(out) > last:
            cut += len(out) - last
            del out[:-last]
        return out, cut

    def json(self) -> bytes:
        """The JSON of ``GET /api/messages/{email}/{id}/transcript``, UTF-8."""
        document = self.document()
        return json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode("utf-8")

    def document(self, last: int | None = None) -> dict[str, Any]:
        """The transcript as a JSON object; with ``last``, only its last ``last`` lines."""
        (_, started_at, _, tls, auth), _, _, _, peer, ehlo, login = self.kept[:_FIXED]
        lines, cut = self.entries(last)
        if cut:  # said where the lines are missing: after them, or before the last ones
            at = -1 if last is None else 0
            note = {"at_ms": lines[at]["at_ms"], "from": "server", "line": f"... {cut} lines cut"}
            lines.insert(len(lines) if last is None else 0, note)
        username = getattr(login, "login", None)
        if isinstance(username, bytes):
            username = username.decode("utf-8", "replace")
        return {
            "client": {
                "address": peer[0] if isinstance(peer, tuple) and peer else None,
                "ehlo": ehlo if isinstance(ehlo, str) else None,
            },
            "tls": None if tls is None else {"version": tls[0], "cipher": tls[1]},
            "auth": None
            if auth is None
            else {"mechanism": auth, "username": username if isinstance(username, str) else None},
            "started_at": started_at.isoformat().replace("+00:00", "Z"),
            "lines": lines,
            "lines_cut": cut,
        }


def _lines(what: Any, at_ms: float) -> list[dict[str, Any]]:
    """The transcript's lines of one entry (see the module's docstring), at ``at_ms``."""
    if isinstance(what, int):
        texts, source = [f"<{what} octets of message data>"], "client"
    elif isinstance(what, str):
        texts, source = [what], "client"
    elif what[:1].isdigit():
        texts = [part[:MAX_LINE].decode("utf-8", "replace") for part in what.split(b"\r\n") if part]
        source = "server"
    else:
        texts, source = [what.decode("utf-8", "replace")], "client"
    return [{"at_ms": at_ms, "from": source, "line": text} for text in texts]


class TranscriptBook:
    """The transcripts of the newest ``capacity`` messages, by message id.

    Kept by the server's loop, read from any thread: each operation is one
    step of an ``OrderedDict``, which the interpreter's lock keeps whole.
    """

    def __init__(self, capacity: int = MAX_TRANSCRIPTS) -> None:
        self._capacity = capacity
        self._kept: OrderedDict[str, tuple[Any, ...]] = OrderedDict()

    def keep(self, messages: Iterable[Any], kept: tuple[Any, ...]) -> None:
        """Keep ``kept`` (:meth:`Transcript.kept`) as each message's transcript, by its ``id``."""
        book = self._kept
        for message in messages:
            book[message.id] = kept
        while len(book) > self._capacity:
            book.popitem(last=False)

    def get(self, message: Any) -> Written | None:
        """The transcript of ``message`` (a StoredMessage): on it, else here; None when none is."""
        kept = message.transcript or self._kept.get(message.id)
        return None if kept is None else Written(kept)
