"""The Redis store's quotas: the arguments its scripts check them with, and their answers.

The counts live in Redis, so every server on it holds a tenant to one quota:
``tempinbox:tenant:<owner>:live`` (sorted set: the owner's live inboxes,
scored by deadline), ``tempinbox:tenant:<owner>:window`` (inboxes generated in
the current ``inboxes_per_hour`` window, expiring with it) and
``tempinbox:tenant:<owner>:checks`` (checks in the current minute's window).
The owner is :data:`~pytest_tempinbox.quotas.EVERYONE` on a server without
tenants. The create script (:data:`.scripts.CREATE`) checks and counts in one
step, so concurrent generate calls on any number of servers cannot pass a quota.
"""

from __future__ import annotations

from ....errors import QuotaExceeded
from ....quotas import QuotaPolicy
from . import scripts

__all__ = ["check_arguments", "over_quota", "quota_arguments"]


def _text(value: int | None) -> str:
    return "" if value is None else str(value)


def quota_arguments(policy: QuotaPolicy | None, owner: str | None) -> list[str]:
    """The create script's quota arguments: live inboxes, per window, window ms, counted as."""
    if policy is None:
        return ["", "", "0", ""]
    quotas = policy.of(owner)
    return [
        _text(quotas.active("inboxes")),
        _text(quotas.active("inboxes_per_hour")),
        str(max(1, round(quotas.hour * 1000))),
        QuotaPolicy.counted_as(owner),
    ]


def check_arguments(policy: QuotaPolicy, owner: str | None) -> list[str] | None:
    """The charge script's arguments for one check; None when ``checks_per_minute`` is off."""
    quotas = policy.of(owner)
    limit = quotas.active("checks_per_minute")
    if limit is None:
        return None
    key = f"{scripts.PREFIX}tenant:{QuotaPolicy.counted_as(owner)}:checks"
    return [key, str(limit), str(max(1, round(quotas.minute * 1000)))]


def over_quota(policy: QuotaPolicy | None, owner: str | None, reply: list[int]) -> QuotaExceeded:
    """The error for a script's answer over a quota: ``[-1]``, ``[-2, ms]`` or ``[-3, ms]``."""
    assert policy is not None, "only a store with quotas answers over one"
    quotas = policy.of(owner)
    name = {-1: "inboxes", -2: "inboxes_per_hour"}.get(reply[0], "checks_per_minute")
    limit = quotas.active(name) or 0
    retry_after = None if reply[0] == -1 else max(int(reply[1]), 1) / 1000
    return QuotaExceeded(quota=name, limit=limit, retry_after=retry_after)
