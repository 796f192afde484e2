"""The SMTP conversation that delivered a message, as ``Message.transcript()`` returns it.

The JSON of ``GET /api/messages/{email}/{id}/transcript`` read into frozen
objects (docs/transcripts.md). Imported only when a transcript is read.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

__all__ = ["Transcript", "TranscriptAuth", "TranscriptLine", "TranscriptTLS"]


@dataclass(frozen=True)
class TranscriptLine:
    """One line of the conversation: who sent it, when (ms from the session's start), what."""

    at_ms: float
    side: Literal["client", "server"]
    line: str


@dataclass(frozen=True)
class TranscriptTLS:
    """The TLS the session ran under (STARTTLS or implicit): its version and cipher."""

    version: str | None
    cipher: str | None


@dataclass(frozen=True)
class TranscriptAuth:
    """The AUTH the session logged in with: its mechanism and user name (never the secret)."""

    mechanism: str
    username: str | None


@dataclass(frozen=True)
class Transcript:
    """The SMTP session that delivered a message, up to the reply to its DATA.

    A refusal's transcript (:attr:`~pytest_tempinbox.models.Refusal.transcript`)
    holds the last lines of its session, up to the refusal's reply.

    ``lines`` hold the session's opening (greeting, EHLO, STARTTLS, AUTH) and
    this message's transaction; AUTH payloads read ``****`` and the message
    itself ``<N octets of message data>``. ``lines_cut`` counts the lines
    beyond the bound (docs/limits.md).
    """

    client_address: str | None
    ehlo: str | None
    tls: TranscriptTLS | None
    auth: TranscriptAuth | None
    started_at: datetime
    lines: tuple[TranscriptLine, ...]
    lines_cut: int = 0

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Transcript:
        """Read the JSON object the transcript route answers."""
        tls, auth = data.get("tls"), data.get("auth")
        return cls(
            client_address=data["client"]["address"],
            ehlo=data["client"]["ehlo"],
            tls=None if tls is None else TranscriptTLS(tls["version"], tls["cipher"]),
            auth=None if auth is None else TranscriptAuth(auth["mechanism"], auth["username"]),
            started_at=datetime.fromisoformat(data["started_at"].replace("Z", "+00:00")),
            lines=tuple(
                TranscriptLine(line["at_ms"], line["from"], line["line"]) for line in data["lines"]
            ),
            lines_cut=data.get("lines_cut", 0),
        )

    def to_json(self) -> dict[str, Any]:
        """The JSON object the transcript route answers (what :meth:`from_json` reads)."""
        tls, auth = self.tls, self.auth
        return {
            "client": {"address": self.client_address, "ehlo": self.ehlo},
            "tls": None if tls is None else {"version": tls.version, "cipher": tls.cipher},
            "auth": None
            if auth is None
            else {"mechanism": auth.mechanism, "username": auth.username},
            "started_at": self.started_at.isoformat().replace("+00:00", "Z"),
            "lines": [
                {"at_ms": line.at_ms, "from": line.side, "line": line.line} for line in self.lines
            ],
            "lines_cut": self.lines_cut,
        }

    def __str__(self) -> str:
        """The conversation as a log reads: ``C:``/``S:`` and each line."""
        return "\n".join(
            f"{'C' if line.side == 'client' else 'S'}: {line.line}" for line in self.lines
        )
