"""The memory store's quota counters: each owner's live inboxes, and its windows.

:class:`QuotaBook` is kept by :class:`~.store.Store` when the server has
quotas (:class:`~pytest_tempinbox.quotas.QuotaPolicy`), and called under the
store's lock only, so that checking a quota and counting against it are one
step: no two concurrent generate calls can both take the last place.
A window (``inboxes_per_hour``, ``checks_per_minute``) is fixed: it opens at
its first count and frees whole when its length is up.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from ....errors import QuotaExceeded
from ....quotas import QuotaPolicy, Quotas, storage_exceeded

__all__ = ["QuotaBook"]

_NOTHING = (0, 0)


class QuotaBook:
    """The counts each owner's quotas are checked against, in this process."""

    __slots__ = ("_held", "_live", "_windows")

    def __init__(self) -> None:
        self._live: dict[str, set[str]] = {}
        self._windows: dict[tuple[str, str], tuple[float, int]] = {}
        # Each owner's messages and their raw bytes, across its inboxes: kept as
        # they come and go, so a delivery's check costs the same for 1 or 1,000 inboxes.
        self._held: dict[str, list[int]] = {}

    def created(self, owner: str | None, address: str) -> None:
        """Count the inbox at ``address`` as ``owner``'s, live."""
        if owner is not None:
            self._live.setdefault(owner, set()).add(address)

    def dropped(self, owner: str | None, address: str) -> None:
        """The inbox at ``address`` is gone (deleted or expired)."""
        if owner is not None:
            self._live.get(owner, set()).discard(address)

    def stored(self, owner: str | None, size: int) -> None:
        """Count one more message of ``size`` raw bytes in ``owner``'s inboxes."""
        if owner is not None:
            held = self._held.get(owner)
            if held is None:
                held = self._held[owner] = [0, 0]
            held[0] += 1
            held[1] += size

    def removed(self, owner: str | None, messages: int, size: int) -> None:
        """Count ``messages`` of ``size`` raw bytes in all out of ``owner``'s inboxes."""
        held = None if owner is None else self._held.get(owner)
        if held is not None:
            held[0] -= messages
            held[1] -= size

    def room(
        self, quotas: Quotas, owner: str | None, size: int | None, everyone: tuple[int, int]
    ) -> QuotaExceeded | None:
        """The quota one more delivery to ``owner`` (of ``size`` bytes, if known) would pass.

        None: room. ``everyone`` is what the whole store holds (messages, raw
        bytes): without tenants (owner None), one quota for everyone. The
        store's hot path calls it, twice a message.
        """
        messages, stored = everyone if owner is None else self._held.get(owner, _NOTHING)
        return storage_exceeded(quotas, messages, stored, size)

    def charge_generate(
        self, quotas: Quotas, owner: str | None, live_everyone: Callable[[], int]
    ) -> None:
        """Count one more inbox for ``owner``, or raise :class:`QuotaExceeded` counting nothing.

        ``live_everyone`` counts every live inbox: without tenants (owner None),
        the ``inboxes`` quota is the server's whole.
        """
        limit = quotas.active("inboxes")
        if limit is not None:
            live = live_everyone() if owner is None else len(self._live.get(owner, ()))
            if live >= limit:
                raise QuotaExceeded(quota="inboxes", limit=limit)
        self.charge(quotas, owner, "inboxes_per_hour", quotas.hour)

    def charge(self, quotas: Quotas, owner: str | None, name: str, length: float) -> None:
        """Count one in ``owner``'s window of quota ``name`` (``length`` seconds), if it holds."""
        limit = quotas.active(name)
        if limit is None:
            return
        key = (QuotaPolicy.counted_as(owner), name)
        now = time.monotonic()
        start, count = self._windows.get(key, (now, 0))
        if now - start >= length:
            start, count = now, 0
        if count >= limit:
            raise QuotaExceeded(quota=name, limit=limit, retry_after=start + length - now)
        self._windows[key] = (start, count + 1)
