"""The recipients the SMTP server refused lately, to explain a wait that saw no mail.

A test that waits in vain for mail often sent it to an address one letter off,
to an inbox already deleted, or to another domain. The SMTP handler records
each recipient it refuses at ``RCPT TO`` here, and each recipient of a message
it refuses at the end of ``DATA`` (too big, over a quota...); ``GET /api/refused``
and the inbox's failure messages read them back, the most similar to an address first.
Memory stays bounded: the newest :data:`MAX_REFUSALS` refusals, none older
than :data:`REFUSAL_MAX_AGE` seconds. Standard library only, no I/O, and an
injectable clock.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from ...models import Refusal, Stage

if TYPE_CHECKING:
    from ...transcripts import Transcript

__all__ = [
    "MAX_FIELD",
    "MAX_REFUSALS",
    "MAX_SIMILAR_TO",
    "REFUSAL_MAX_AGE",
    "SIMILAR",
    "RefusalFinder",
    "RefusalLog",
    "similarity",
]

MAX_REFUSALS = 1000
REFUSAL_MAX_AGE = 600.0  # seconds
MAX_SIMILAR_TO = 254  # characters of an address to compare with: RFC 5321's longest
SIMILAR = 0.6
"""The :func:`similarity` from which a refused address counts as like another."""
MAX_FIELD = 256
"""Characters kept of a refused address or EHLO name: a path is 256 octets at most."""


def similarity(address: str, other: str) -> float:
    """How alike two addresses are, from 0 to 1, letter case aside.

    The local parts weigh three times as much as the domains: two generated
    addresses of one domain share a long domain, and are not alike for that.
    """
    from difflib import SequenceMatcher  # only when asked: failures and GET /api/refused

    local, _, domain = address.lower().rpartition("@")
    other_local, _, other_domain = other.lower().rpartition("@")
    local_ratio = SequenceMatcher(None, local, other_local, autojunk=False).ratio()
    domain_ratio = SequenceMatcher(None, domain, other_domain, autojunk=False).ratio()
    return 0.75 * local_ratio + 0.25 * domain_ratio


class RefusalFinder:
    """What every log of refusals finds alike: the ``find`` over its ``_newest_first``."""

    def find(
        self,
        *,
        since: datetime | None = None,
        similar_to: str | None = None,
        limit: int = MAX_REFUSALS,
        tenant: str | None = None,
    ) -> list[Refusal]:
        """The refusals remembered, at or after ``since``, newest first.

        With ``similar_to``, only those whose address is at least :data:`SIMILAR`
        like it, the most similar first, each with its ``similarity``. With
        ``tenant``, only those of sessions logged in as that tenant.
        """
        found = self._newest_first(since)
        if tenant is not None:
            found = [r for r in found if r.tenant == tenant]
        if similar_to is not None:
            scored = [r.scored(round(similarity(similar_to, r.address), 3)) for r in found]
            found = [r for r in scored if r.similarity is not None and r.similarity >= SIMILAR]
            found.sort(key=lambda r: -(r.similarity or 0.0))  # stable: newest first on ties
        return found[:limit]

    def _newest_first(self, since: datetime | None) -> list[Refusal]:
        """The refusals remembered, at or after ``since`` (all with None), newest first."""
        raise NotImplementedError


class RefusalLog(RefusalFinder):
    """The server's recent refusals, at ``RCPT TO`` and at the end of ``DATA``, from any thread.

    ``clock`` gives the current time as an aware datetime (the default: now, in UTC).
    """

    def __init__(
        self,
        capacity: int = MAX_REFUSALS,
        max_age: float = REFUSAL_MAX_AGE,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self.max_age = max_age
        self._clock = clock or _utc_now
        self._refusals: deque[Refusal] = deque(maxlen=capacity)
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            return len(self._current())

    def record(
        self,
        address: str,
        reply: str,
        client_ip: str | None,
        helo: str | None,
        tenant: str | None = None,
        transcript: dict[str, Any] | None = None,
        stage: Stage = "rcpt",
    ) -> None:
        """Remember that mail to ``address`` was refused with ``reply`` at ``stage``.

        ``reply``: at RCPT its text, no code; at DATA the whole reply line.
        ``tenant``: the tenant the session logged in as, if any; ``transcript``:
        the JSON of the session's transcript up to the refusal, if kept.
        """
        refusal = Refusal(
            at=self._clock(),
            address=address[:MAX_FIELD],
            reply=reply,
            client_ip=client_ip,
            helo=None if helo is None else helo[:MAX_FIELD],
            tenant=tenant,
            transcript=None if transcript is None else read_transcript(transcript),
            stage=stage,
        )
        with self._lock:
            self._refusals.append(refusal)

    def _newest_first(self, since: datetime | None) -> list[Refusal]:
        with self._lock:
            found = [r for r in self._current() if since is None or r.at >= since]
        found.reverse()
        return found

    def _current(self) -> list[Refusal]:
        """Forget the refusals older than ``max_age``; return the others, oldest first."""
        oldest = self._clock().timestamp() - self.max_age
        while self._refusals and self._refusals[0].at.timestamp() < oldest:
            self._refusals.popleft()
        return list(self._refusals)


def _utc_now() -> datetime:
    return datetime.now(timezone.utc)


def read_transcript(document: dict[str, Any]) -> Transcript:
    """A refusal's transcript from its JSON (its module imported when a refusal has one)."""
    from ...transcripts import Transcript

    return Transcript.from_json(document)
