"""The package's exceptions: one base class, one subclass per thing that can go wrong.

Each error that the HTTP API can report carries the stable ``code`` token and
the HTTP ``status`` of its problem document, so the server and the client speak
of the same failures with the same names. :data:`PROBLEMS` is the one table of
every code the server can answer with: its status and the error class the
client raises for it.
"""

from __future__ import annotations

import math

__all__ = [
    "ERRORS_BY_CODE",
    "HEADER_TOO_LARGE",
    "HOST_NOT_ALLOWED",
    "INTERNAL_ERROR",
    "LINK_CHECKS_OFF",
    "METHOD_NOT_ALLOWED",
    "NOT_FOUND",
    "PROBLEMS",
    "RATE_LIMITED",
    "SHUTTING_DOWN",
    "TLS_OFF",
    "TOO_MANY_CONNECTIONS",
    "URI_TOO_LONG",
    "AddressTaken",
    "AttachmentNotFound",
    "InboxNotFound",
    "InvalidAddress",
    "InvalidRequest",
    "MailAssertionError",
    "MessageNotFound",
    "PayloadTooLarge",
    "QuotaExceeded",
    "ServerStartError",
    "ServerUnavailable",
    "SpamAssassinError",
    "SpamAssassinMissing",
    "StoreUnavailable",
    "TempInboxError",
    "TooManyFaults",
    "TooManyStreams",
    "WaitTimeout",
]


class TempInboxError(Exception):
    """Base class of every error raised by pytest-tempinbox."""

    code: str = "error"
    status: int = 500


class InboxNotFound(TempInboxError):
    """Raised when an address was never generated, was deleted or has expired."""

    code = "inbox_not_found"
    status = 404


class MessageNotFound(TempInboxError):
    """Raised when an inbox holds no message (or attachment) with the given id or index."""

    code = "message_not_found"
    status = 404


class InvalidAddress(TempInboxError):
    """Raised when a string given as an email address is not one."""

    code = "invalid_address"
    status = 400


class InvalidRequest(TempInboxError):
    """Raised when a request's parameters or body are malformed or out of range."""

    code = "invalid_request"
    status = 400


class AddressTaken(TempInboxError):
    """Raised when a chosen address is already a live inbox."""

    code = "address_taken"
    status = 409


class AttachmentNotFound(TempInboxError):
    """Raised when a message has no attachment with the given index."""

    code = "attachment_not_found"
    status = 404


class PayloadTooLarge(TempInboxError):
    """Raised when a request body is larger than the server accepts."""

    code = "payload_too_large"
    status = 413


class TooManyFaults(TempInboxError):
    """Raised when an inbox already holds as many pending faults as a server allows (100)."""

    code = "too_many_faults"
    status = 409


class TooManyStreams(TempInboxError):
    """Raised when an event stream would be one more than a server allows open at once.

    The limits are the server's ``max_streams_per_inbox`` and ``max_streams``:
    10 and 100 by default, 10 and 10,000 for the standalone command.
    """

    code = "too_many_streams"
    status = 429


class QuotaExceeded(TempInboxError):
    """Raised when a tenant (or, without tenants, everyone) is over one of its quotas.

    ``quota`` names it (``inboxes``, ``inboxes_per_hour``, ``checks_per_minute``...),
    ``limit`` is its value, and ``retry_after`` the seconds until it frees when
    that is known (a per-hour or per-minute window), else None: the server
    answers ``429`` with a ``Retry-After`` header then (``docs/tenants.md``).
    """

    code = "quota_exceeded"
    status = 429

    def __init__(
        self,
        message: str = "",
        *,
        quota: str = "",
        limit: int = 0,
        retry_after: float | None = None,
    ) -> None:
        if not message:
            frees = (
                f"it frees in {max(1, math.ceil(retry_after))} s"
                if retry_after is not None
                else "it frees as inboxes are deleted or expire"
            )
            message = f"over the {quota} quota ({limit}): {frees}"
        super().__init__(message)
        self.quota = quota
        self.limit = limit
        self.retry_after = retry_after


class StoreUnavailable(TempInboxError):
    """Raised when the server's store does not answer (Redis down or unreachable).

    Nothing is lost: SMTP answers ``451 4.3.0`` meanwhile, so a sender tries
    again later, and the API answers 503 until the store is back.
    """

    code = "store_unavailable"
    status = 503


class SpamAssassinError(TempInboxError):
    """Raised when SpamAssassin cannot score a message: it failed, timed out or said nothing."""

    code = "spam_check_failed"
    status = 503


class SpamAssassinMissing(SpamAssassinError):
    """Raised when the ``spamassassin`` program is not found; its message says what to install."""

    code = "spamassassin_missing"
    status = 501


class ServerStartError(TempInboxError):
    """Raised when the server cannot start, most often because a port is already taken."""

    code = "server_start_failed"


class ServerUnavailable(TempInboxError):
    """Raised by the client when the server cannot be reached or answers unexpectedly."""

    code = "server_unavailable"


class MailAssertionError(TempInboxError, AssertionError):
    """Raised when a test's expectation about its mail does not hold.

    ``message.link(...)``, ``message.code()`` and ``message.attachment(...)``
    finding none or several, ``inbox.assert_no_message(...)`` seeing one, and
    a wait running out of time (:class:`WaitTimeout`). It is an
    :class:`AssertionError`, so pytest reports a failed assertion, and its
    message says what was expected and what the mail held instead.
    """

    code = "assertion_failed"


class WaitTimeout(MailAssertionError, TimeoutError):
    """Raised when waiting for mail runs out of time.

    Its message lists what the inbox did receive (sender and subject of each
    message), so a failing test explains itself. It is also a
    :class:`TimeoutError`.
    """

    code = "wait_timeout"


# The codes of the problems that no exception class of its own stands for.
NOT_FOUND = "not_found"
METHOD_NOT_ALLOWED = "method_not_allowed"
URI_TOO_LONG = "uri_too_long"
HEADER_TOO_LARGE = "header_too_large"
HOST_NOT_ALLOWED = "host_not_allowed"
TLS_OFF = "tls_off"
INTERNAL_ERROR = "internal_error"
SHUTTING_DOWN = "shutting_down"
LINK_CHECKS_OFF = "link_checks_off"
TOO_MANY_CONNECTIONS = "too_many_connections"
RATE_LIMITED = "rate_limited"

PROBLEMS: dict[str, tuple[int, type[TempInboxError]]] = {
    InboxNotFound.code: (InboxNotFound.status, InboxNotFound),
    MessageNotFound.code: (MessageNotFound.status, MessageNotFound),
    AttachmentNotFound.code: (AttachmentNotFound.status, AttachmentNotFound),
    InvalidAddress.code: (InvalidAddress.status, InvalidAddress),
    InvalidRequest.code: (InvalidRequest.status, InvalidRequest),
    AddressTaken.code: (AddressTaken.status, AddressTaken),
    NOT_FOUND: (404, TempInboxError),
    METHOD_NOT_ALLOWED: (405, TempInboxError),
    PayloadTooLarge.code: (PayloadTooLarge.status, PayloadTooLarge),
    URI_TOO_LONG: (414, TempInboxError),
    HEADER_TOO_LARGE: (431, TempInboxError),
    HOST_NOT_ALLOWED: (421, TempInboxError),
    TLS_OFF: (404, TempInboxError),
    TooManyFaults.code: (TooManyFaults.status, TooManyFaults),
    TooManyStreams.code: (TooManyStreams.status, TooManyStreams),
    QuotaExceeded.code: (QuotaExceeded.status, QuotaExceeded),
    StoreUnavailable.code: (StoreUnavailable.status, StoreUnavailable),
    SHUTTING_DOWN: (503, TempInboxError),
    LINK_CHECKS_OFF: (403, TempInboxError),
    TOO_MANY_CONNECTIONS: (503, TempInboxError),
    RATE_LIMITED: (429, TempInboxError),
    SpamAssassinError.code: (SpamAssassinError.status, SpamAssassinError),
    SpamAssassinMissing.code: (SpamAssassinMissing.status, SpamAssassinMissing),
    # Last, and apart: the server's own failure, never the fault of a request.
    INTERNAL_ERROR: (500, TempInboxError),
}
"""Every ``code`` of the HTTP API's problem documents: its HTTP status and error class.

The client raises the class for the code (:class:`TempInboxError` itself for a
code without a class of its own); the OpenAPI document lists the codes in this
order, all but ``internal_error``, which no request can cause.
"""

ERRORS_BY_CODE: dict[str, type[TempInboxError]] = {
    code: error for code, (_, error) in PROBLEMS.items() if error is not TempInboxError
}
"""The error class for each ``code`` of :data:`PROBLEMS` that has a class of its own."""
