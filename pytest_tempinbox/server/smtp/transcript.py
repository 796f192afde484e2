"""The SMTP conversation of a session, kept cheaply as it happens and written out when asked.

A session's :class:`Transcript` holds a plain list of ``(time, what)`` pairs,
flat: the fast lane appends to it inline, with no function call per line, the
bytes of each command line it serves and of each batch of replies it writes;
aiosmtpd's side feeds :meth:`Transcript.client` and :meth:`Transcript.server`.
What an entry is tells whose it is: bytes opening with a digit are the
server's (every SMTP reply does), other bytes and a ``str`` the client's, an
``int`` DATA's octets (counted, not kept: ``<N octets of message data>``).
AUTH's payloads are masked as they are read (``AUTH PLAIN ****``, and every
line answering a ``334`` challenge as ``****``), so no secret is ever held.
Each ``MAIL`` starts a new list whose first pair holds the session's opening
(greeting, EHLO, STARTTLS, AUTH: everything before its first ``MAIL``), so a
message keeps its transcript by reference (:meth:`Transcript.kept`, no copy),
and the lines, their times and the JSON of
``GET /api/messages/{email}/{id}/transcript`` are made only when read
(:class:`Written`). :class:`TranscriptBook` keeps the newest messages' by id.
Standard library only; see ``docs/transcripts.md``.
"""

from __future__ import annotations

import json
import threading
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
        "in_data",
        "lines",
        "masking",
        "octets",
        "opening",
        "pending",
        "started",
        "started_at",
        "tls",
    )

    def __init__(self) -> None:
        self.started_at = datetime.now(timezone.utc)
        self.started = perf_counter()
        self.lines: list[Any] = []
        """The current transaction's flat ``(time, what)`` pairs; the fast lane appends to it."""
        self.cut = 0
        """Entries of the current transaction counted, not kept."""
        self.opening: list[Any] | None = None  # the lines before the first MAIL, once one came
        self.auth: str | None = None
        self.tls: tuple[str | None, str | None] | None = None
        self.in_data = False
        self.masking = False  # answering AUTH's 334 challenges
        self.octets = 0
        self.pending: bytes | None = None
        """The command line the fast lane is serving, recorded once served."""
        self._partial = b""
        self._data_tail = b""

    def mail(self) -> list[Any]:
        """Start a transaction (its ``MAIL`` line comes next): the new list, the opening first."""
        if self.opening is None:
            self.opening = self.lines
        self.lines = lines = [self.started, self.opening]
        self.cut = 0
        return lines

    def secure(self, transport: Any) -> None:
        """Note the TLS version and cipher of ``transport``, if it runs TLS."""
        ssl_object = transport.get_extra_info("ssl_object")
        if ssl_object is not None:
            self.tls = (ssl_object.version(), (ssl_object.cipher() or (None,))[0])

    def kept(self, peer: Any, ehlo: Any, login: Any, final: str) -> tuple[Any, ...]:
        """What the transaction just ended with the reply ``final`` keeps: references, no copy."""
        lines, cut, tls, auth = self.lines, self.cut, self.tls, self.auth
        return (self, lines, len(lines), cut, tls, auth, final, perf_counter(), peer, ehlo, login)

    def refused(self, peer: Any, ehlo: Any, login: Any, reply: str) -> dict[str, Any]:
        """The JSON transcript of a refusal with ``reply``: the last :data:`REFUSAL_LINES` lines."""
        lines, pending = self.lines, self.pending
        if pending is not None and (not lines or lines[-1] is not pending):
            lines = [*lines, perf_counter(), pending]  # the line refused, not yet recorded
        kept = (self, lines, len(lines), self.cut, self.tls, self.auth, reply, perf_counter())
        return Written((*kept, peer, ehlo, login)).document(REFUSAL_LINES)

    def _add(self, what: Any) -> None:
        if len(self.lines) < SLOTS:
            self.lines += (perf_counter(), what)
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
        transcript, flat, end, cut, _, _, final, finished, _, _, _ = self.kept
        start: float = transcript.started
        flat = flat[:end]
        if len(flat) > 1 and isinstance(flat[1], list):  # the session's opening
            flat = flat[1] + flat[2:]
        out: list[dict[str, Any]] = []
        for index in range(0, len(flat), 2):
            at_ms = round((flat[index] - start) * 1000, 3)
            what = flat[index + 1]
            if isinstance(what, int):
                texts, source = [f"<{what} octets of message data>"], "client"
            elif isinstance(what, str):
                texts, source = [what], "client"
            elif what[:1].isdigit():
                texts = [
                    part[:MAX_LINE].decode("utf-8", "replace")
                    for part in what.split(b"\r\n")
                    if part
                ]
                source = "server"
            else:
                texts, source = [what.decode("utf-8", "replace")], "client"
            out += [{"at_ms": at_ms, "from": source, "line": text} for text in texts]
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
        transcript, _, _, _, tls, auth, _, _, peer, ehlo, login = self.kept
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
            "started_at": transcript.started_at.isoformat().replace("+00:00", "Z"),
            "lines": lines,
            "lines_cut": cut,
        }


class TranscriptBook:
    """The transcripts of the newest ``capacity`` messages, by message id, from any thread."""

    def __init__(self, capacity: int = MAX_TRANSCRIPTS) -> None:
        self._capacity = capacity
        self._kept: OrderedDict[str, tuple[Any, ...]] = OrderedDict()
        self._lock = threading.Lock()

    def keep(self, messages: Iterable[Any], kept: tuple[Any, ...]) -> None:
        """Keep ``kept`` (:meth:`Transcript.kept`) as each message's transcript, by its ``id``."""
        with self._lock:
            book = self._kept
            for message in messages:
                book[message.id] = kept
            while len(book) > self._capacity:
                book.popitem(last=False)

    def get(self, id: str) -> Written | None:
        """The transcript of message ``id``; None when none is kept."""
        with self._lock:
            kept = self._kept.get(id)
        return None if kept is None else Written(kept)
