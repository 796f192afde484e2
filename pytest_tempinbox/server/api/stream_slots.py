"""How many event streams are open, in all and per inbox, within the limits.

One :class:`StreamSlots` lives in the API's settings
(:class:`~.settings.ApiSettings`); each event stream (:mod:`.events`) takes a
slot when it opens and gives it back when it ends.
"""

from __future__ import annotations

import threading

from ...errors import TooManyStreams
from ...limits import DEFAULT_MAX_STREAMS, DEFAULT_MAX_STREAMS_PER_INBOX

__all__ = ["StreamSlots"]


class StreamSlots:
    """Counts the open streams, in all and per inbox, and refuses one over the limits.

    ``limit`` and ``per_inbox`` are the server's ``max_streams`` and ``max_streams_per_inbox``.
    """

    def __init__(
        self, limit: int = DEFAULT_MAX_STREAMS, per_inbox: int = DEFAULT_MAX_STREAMS_PER_INBOX
    ) -> None:
        self.limit = limit
        self.per_inbox = per_inbox
        self._open: dict[str, int] = {}
        self._total = 0
        self._lock = threading.Lock()

    @property
    def total(self) -> int:
        """How many streams are open now."""
        return self._total

    def acquire(self, address: str) -> None:
        """Count one more stream of ``address``; :class:`TooManyStreams` over a limit."""
        with self._lock:
            if self._total >= self.limit:
                raise TooManyStreams(f"{self.limit} event streams are open, the most allowed")
            if self._open.get(address, 0) >= self.per_inbox:
                raise TooManyStreams(
                    f"{self.per_inbox} event streams of this inbox are open, the most allowed"
                )
            self._open[address] = self._open.get(address, 0) + 1
            self._total += 1

    def release(self, address: str) -> None:
        """Count one stream of ``address`` less."""
        with self._lock:
            left = self._open.pop(address) - 1
            if left:
                self._open[address] = left
            self._total -= 1
