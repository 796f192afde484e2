"""The server's operational counters: plain integers, read by ``GET /metrics``.

Each server owns one :class:`ServerCounters`; the SMTP handler, the SMTP
service and the HTTP app add to it where things happen, with nothing but an
integer addition, so that counting costs the hot paths nothing. The metrics
endpoint (:mod:`pytest_tempinbox.server.api.metrics`) reads them, and the gauges
the parts of the server keep themselves, when it is scraped.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .readers.counters import ReaderCounters

__all__ = [
    "AUTH_REQUIRED",
    "INJECTED_FAULT",
    "INVALID_ADDRESS",
    "REFUSAL_REASONS",
    "STORE_UNAVAILABLE",
    "TOO_MANY_RECIPIENTS",
    "UNKNOWN_RECIPIENT",
    "ServerCounters",
]

# Why a recipient was refused, as the ``reason`` label of the refusals counter.
UNKNOWN_RECIPIENT = "unknown_recipient"
TOO_MANY_RECIPIENTS = "too_many_recipients"
INJECTED_FAULT = "injected_fault"
AUTH_REQUIRED = "auth_required"
STORE_UNAVAILABLE = "store_unavailable"
INVALID_ADDRESS = "invalid_address"
REFUSAL_REASONS = (
    UNKNOWN_RECIPIENT,
    TOO_MANY_RECIPIENTS,
    INJECTED_FAULT,
    AUTH_REQUIRED,
    STORE_UNAVAILABLE,
    INVALID_ADDRESS,
)


def _none() -> int:
    return 0


def _not_listening() -> bool:
    return False


class ServerCounters:
    """What a server counts as it runs, and where its open sessions and streams are read.

    ``messages_accepted`` counts the messages answered 250 at the end of DATA,
    ``refused`` the recipients refused at RCPT by reason (one of
    :data:`REFUSAL_REASONS`), ``store_errors`` the times the store did not
    answer, and ``long_polls`` the reads of messages waiting right now. The
    SMTP service and the app set ``smtp_sessions`` and ``event_streams`` to
    functions that count their open sessions and streams, and the SMTP service
    ``smtp_listening`` to one that tells whether its listener accepts connections.
    """

    __slots__ = (
        "event_streams",
        "long_polls",
        "messages_accepted",
        "readers",
        "refused",
        "smtp_listening",
        "smtp_sessions",
        "store_errors",
        "webhooks",
    )

    def __init__(self) -> None:
        self.messages_accepted = 0
        self.refused: dict[str, int] = dict.fromkeys(REFUSAL_REASONS, 0)
        self.store_errors = 0
        self.long_polls = 0
        self.smtp_sessions: Callable[[], int] = _none
        self.event_streams: Callable[[], int] = _none
        self.smtp_listening: Callable[[], bool] = _not_listening
        self.webhooks: Callable[[], dict[str, int]] | None = None
        """The webhooks' counters and queue length (docs/webhooks.md); None without webhooks."""
        # The IMAP and POP3 counts, set when a reader listener starts (docs/readers.md).
        self.readers: ReaderCounters | None = None

    def __repr__(self) -> str:
        return (
            f"<ServerCounters accepted={self.messages_accepted}"
            f" refused={sum(self.refused.values())} store_errors={self.store_errors}>"
        )
