"""Disposable email inboxes for pytest: an in-process SMTP server with an HTTP API.

Importing the package is cheap: the server (and with it aiosmtpd, Starlette and
uvicorn) is imported only when :class:`InboxServer` is first used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import (
    AttachmentNotFound,
    InboxNotFound,
    InvalidAddress,
    InvalidRequest,
    MessageNotFound,
    PayloadTooLarge,
    ServerStartError,
    TempInboxError,
)
from .models import Address, Attachment, Envelope, Message

if TYPE_CHECKING:
    from .server import InboxServer

__version__ = "0.1.0"

__all__ = [
    "Address",
    "Attachment",
    "AttachmentNotFound",
    "Envelope",
    "InboxNotFound",
    "InboxServer",
    "InvalidAddress",
    "InvalidRequest",
    "Message",
    "MessageNotFound",
    "PayloadTooLarge",
    "ServerStartError",
    "TempInboxError",
    "__version__",
]


def __getattr__(name: str) -> Any:
    # PEP 562: keep `import pytest_tempinbox` free of the server's heavy imports.
    if name == "InboxServer":
        from .server import InboxServer

        return InboxServer
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
