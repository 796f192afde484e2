"""The package's exceptions: one base class, one subclass per thing that can go wrong.

Each error that the HTTP API can report carries the stable ``code`` token and
the HTTP ``status`` of its problem document, so the server and the client speak
of the same failures with the same names.
"""

from __future__ import annotations

__all__ = [
    "ERRORS_BY_CODE",
    "AddressTaken",
    "AttachmentNotFound",
    "InboxNotFound",
    "InvalidAddress",
    "InvalidRequest",
    "MailAssertionError",
    "MessageNotFound",
    "PayloadTooLarge",
    "ServerStartError",
    "ServerUnavailable",
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

    The limits are 10 streams per inbox and 100 in all.
    """

    code = "too_many_streams"
    status = 429


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


ERRORS_BY_CODE: dict[str, type[TempInboxError]] = {
    error.code: error
    for error in (
        AddressTaken,
        AttachmentNotFound,
        InboxNotFound,
        InvalidAddress,
        InvalidRequest,
        MessageNotFound,
        PayloadTooLarge,
        TooManyFaults,
        TooManyStreams,
    )
}
"""The error class for each ``code`` the HTTP API can answer with."""
