"""Disposable email inboxes for pytest: an in-process SMTP server with an HTTP API.

Importing the package is cheap (the pytest plugin loads it in every run): the
data classes, the server (and with it aiosmtpd, Starlette and uvicorn) and the
client (and requests) are imported when first used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._version import __version__
from .errors import (
    AddressTaken,
    AttachmentNotFound,
    InboxNotFound,
    InvalidAddress,
    InvalidRequest,
    MailAssertionError,
    MessageNotFound,
    PayloadTooLarge,
    ServerStartError,
    ServerUnavailable,
    StoreUnavailable,
    TempInboxError,
    TooManyFaults,
    TooManyStreams,
    WaitTimeout,
)

if TYPE_CHECKING:
    from .client.http import TempInboxClient
    from .client.inbox import Inbox
    from .models import Message
    from .server.inbox_server import InboxServer
    from .values import Address, Attachment, Envelope, Fault, Link, ProviderRecord, Refusal


__all__ = [
    "Address",
    "AddressTaken",
    "Attachment",
    "AttachmentNotFound",
    "Envelope",
    "Fault",
    "Inbox",
    "InboxNotFound",
    "InboxServer",
    "InvalidAddress",
    "InvalidRequest",
    "Link",
    "MailAssertionError",
    "Message",
    "MessageNotFound",
    "PayloadTooLarge",
    "ProviderRecord",
    "Refusal",
    "ServerStartError",
    "ServerUnavailable",
    "StoreUnavailable",
    "TempInboxClient",
    "TempInboxError",
    "TooManyFaults",
    "TooManyStreams",
    "WaitTimeout",
    "__version__",
]


_LAZY = {
    "Address": "values",
    "Attachment": "values",
    "Envelope": "values",
    "Fault": "values",
    "Link": "values",
    "ProviderRecord": "values",
    "Message": "models",
    "Refusal": "values",
    "Inbox": "client.inbox",
    "TempInboxClient": "client.http",
    "InboxServer": "server.inbox_server",
}


def __getattr__(name: str) -> Any:
    # PEP 562: keep `import pytest_tempinbox` free of the heavy imports (aiosmtpd,
    # Starlette and uvicorn for the server, requests for the client) until used.
    if name in _LAZY:
        module = importlib.import_module(f".{_LAZY[name]}", __name__)
        return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
