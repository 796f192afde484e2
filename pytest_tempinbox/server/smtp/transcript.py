"""The SMTP conversation of a session, kept cheaply as it happens and written out when asked.

A :class:`Transcript` is fed the bytes each side sends (the client's as they
arrive, the server's as they are written): it appends ``(time, side, bytes)``
tuples and nothing more on the hot path. DATA's octets are counted, not kept
(``<N octets of message data>``); AUTH's payloads are masked as they are read
(``AUTH PLAIN ****``, and every line answering a ``334`` challenge as ``****``),
so no secret is ever held. :meth:`Transcript.snapshot` keeps, for the
transaction just ended, the lines of ``GET /api/messages/{email}/{id}/transcript``
(:class:`Written`; its JSON is made only when read):
the session's opening (greeting, EHLO, STARTTLS, AUTH: everything before its
first ``MAIL``) and that transaction's lines from its ``MAIL`` on.
:class:`TranscriptBook` keeps the documents of the newest messages by id.
Standard library only; see ``docs/transcripts.md``.
"""

from __future__ import annotations

import json
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable
from datetime import datetime, timezone
from typing import Any

__all__ = ["MAX_LINE", "MAX_LINES", "MAX_TRANSCRIPTS", "Transcript", "TranscriptBook"]

MAX_LINES = 500
"""Lines kept of one session; the lines after are counted (``... N lines cut``)."""
MAX_LINE = 512
"""Characters kept of one line."""
MAX_TRANSCRIPTS = 10_000
"""Transcripts a server keeps, the newest messages'."""

_CLIENT, _SERVER, _DATA = 0, 1, 2
_SLOTS = 3 * MAX_LINES
_MASK = b"****"


class Transcript:
    """One SMTP session's lines as both sides sent them; see the module's docstring."""

    __slots__ = (
        "_data_at",
        "_data_tail",
        "_partial",
        "auth",
        "cut",
        "in_data",
        "lines",
        "masking",
        "opening",
        "started_at",
        "started_ns",
        "transaction",
    )

    def __init__(self) -> None:
        self.started_at = datetime.now(timezone.utc)
        self.started_ns = time.perf_counter_ns()
        # Flat (time, side, line) triples: no tuple kept per line for the collector to track.
        self.lines: list[Any] = []
        self.cut = 0
        self.opening = -1  # index of the session's first MAIL: the opening ends there
        self.transaction = 0  # index of this transaction's MAIL
        self.auth: str | None = None
        self.in_data = False
        self.masking = False  # answering AUTH's 334 challenges
        self._partial = b""
        self._data_tail = b""
        self._data_at = -1  # the index of the DATA octets' line; -1 once cut

    def _add(self, side: int, line: Any) -> None:
        if len(self.lines) >= _SLOTS:
            self.cut += 1
            return
        self.lines += (time.perf_counter_ns(), side, line)

    def client(self, data: bytes) -> None:
        """Take bytes the client sent: whole lines are kept, DATA's octets counted."""
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
            self._add(_CLIENT, _MASK)
            return
        verb = line[:5].upper()
        if verb == b"AUTH ":
            mechanism, _, payload = line[5:].strip().partition(b" ")
            self.auth = mechanism.decode("ascii", "replace").upper()
            line = b"AUTH " + mechanism + (b" " + _MASK if payload else b"")
        elif verb[:4] == b"MAIL":
            if self.opening < 0:
                self.opening = len(self.lines)
            elif self.transaction > self.opening:
                # The last transaction is in its message's snapshot: this one starts afresh.
                del self.lines[self.opening :]
                self.cut = 0
            self.transaction = len(self.lines)
        self._add(_CLIENT, line[:MAX_LINE])

    def served(self, line: bytes) -> None:
        """Take a command line the fast lane served (never AUTH: the lane hands that over)."""
        if line[:4].upper() == b"MAIL":
            self._command(line)  # its transaction's bookkeeping
            return
        if len(self.lines) >= _SLOTS:
            self.cut += 1
            return
        self.lines += (time.perf_counter_ns(), _CLIENT, line)

    def wrote(self, data: bytes) -> None:
        """Take replies the fast lane wrote, kept whole and split when read."""
        if len(self.lines) >= _SLOTS:
            self.cut += 1
            return
        self.lines += (time.perf_counter_ns(), _SERVER, data)

    def message_data(self, octets: int) -> None:
        """Note the fast lane's DATA: ``octets`` of message, not kept."""
        self._add(_DATA, octets)

    def _data(self, data: bytes) -> bytes:
        """Count DATA's octets up to its final dot; the bytes after it."""
        seen = self._data_tail + data
        end = seen.find(b"\r\n.\r\n")
        if end < 0 and seen.startswith(b".\r\n"):
            end = -2
        at = self._data_at
        if end == -1:
            if at >= 0:
                self.lines[at + 2] += len(data)
            self._data_tail = seen[-4:]
            return b""
        used = end + 5 - len(self._data_tail)
        if at >= 0:
            octets = max(0, used - 3)
            self.lines[at] = time.perf_counter_ns()
            self.lines[at + 2] += octets
        self.in_data, self._data_tail = False, b""
        return data[used:]

    def server(self, data: bytes) -> None:
        """Take bytes the server wrote: one or more reply lines."""
        for line in data.split(b"\r\n"):
            if line:
                self._add(_SERVER, line[:MAX_LINE])
        last = data[-64:].rsplit(b"\r\n", 2)
        reply = last[-2] if len(last) > 1 else data
        self.masking = reply.startswith(b"334")
        if reply.startswith(b"354"):
            self.in_data = True
            self._data_tail = b"\r\n"  # a message that is only the final dot
            self._data_at = len(self.lines) if len(self.lines) < _SLOTS else -1
            self._add(_DATA, 0)

    def snapshot(
        self,
        peer: Any,
        ehlo: str | None,
        tls: tuple[str | None, str | None] | None,
        username: str | None,
        final: str,
    ) -> Written:
        """What the transaction just ended with the reply ``final`` keeps (JSON made when read)."""
        lines = self.lines
        opening = self.opening if self.opening >= 0 else len(lines)
        kept = lines[:opening] + lines[max(self.transaction, opening) :]
        kept += (time.perf_counter_ns(), _SERVER, final)
        return Written(self, kept, peer, ehlo, tls, username)


class Written:
    """One message's transcript as kept: its lines and facts; :meth:`json` writes it out."""

    __slots__ = (
        "auth",
        "cut",
        "ehlo",
        "lines",
        "peer",
        "started_at",
        "started_ns",
        "tls",
        "username",
    )

    def __init__(
        self,
        transcript: Transcript,
        lines: list[Any],
        peer: Any,
        ehlo: str | None,
        tls: tuple[str | None, str | None] | None,
        username: str | None,
    ) -> None:
        self.started_at, self.started_ns = transcript.started_at, transcript.started_ns
        self.auth, self.cut = transcript.auth, transcript.cut
        self.lines, self.peer, self.ehlo, self.tls, self.username = lines, peer, ehlo, tls, username

    def json(self) -> bytes:
        """The JSON of ``GET /api/messages/{email}/{id}/transcript``, UTF-8."""
        start = self.started_ns
        out: list[dict[str, Any]] = []
        flat = self.lines
        for index in range(0, len(flat), 3):
            at, side, line = flat[index : index + 3]
            at_ms = round((at - start) / 1e6, 3)
            if side == _DATA:
                texts = [f"<{line} octets of message data>"]
            elif isinstance(line, str):
                texts = [line]
            else:
                texts = [
                    part[:MAX_LINE].decode("utf-8", "replace")
                    for part in line.split(b"\r\n")
                    if part
                ]
            source = "server" if side == _SERVER else "client"
            out += [{"at_ms": at_ms, "from": source, "line": text} for text in texts]
        if self.cut:
            out.append(
                {"at_ms": out[-1]["at_ms"], "from": "server", "line": f"... {self.cut} lines cut"}
            )
        peer = self.peer
        document = {
            "client": {
                "address": peer[0] if isinstance(peer, tuple) and peer else None,
                "ehlo": self.ehlo,
            },
            "tls": None if self.tls is None else {"version": self.tls[0], "cipher": self.tls[1]},
            "auth": None
            if self.auth is None
            else {"mechanism": self.auth, "username": self.username},
            "started_at": self.started_at.isoformat().replace("+00:00", "Z"),
            "lines": out,
            "lines_cut": self.cut,
        }
        return json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


class TranscriptBook:
    """The transcripts of the newest ``capacity`` messages, by message id, from any thread."""

    def __init__(self, capacity: int = MAX_TRANSCRIPTS) -> None:
        self._capacity = capacity
        self._kept: OrderedDict[str, Written] = OrderedDict()
        self._lock = threading.Lock()

    def keep(self, ids: Iterable[str], document: Written) -> None:
        """Keep ``document`` as the transcript of each message of ``ids``."""
        with self._lock:
            for id in ids:
                self._kept[id] = document
            while len(self._kept) > self._capacity:
                self._kept.popitem(last=False)

    def get(self, id: str) -> Written | None:
        """The transcript of message ``id``; None when none is kept."""
        with self._lock:
            return self._kept.get(id)
