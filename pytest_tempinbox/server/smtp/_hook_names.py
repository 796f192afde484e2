"""What aiosmtpd looks up by name on every connection, worked out once per class.

aiosmtpd builds each connection's tables of commands, AUTH mechanisms and
handler hooks from ``dir()`` of its protocol and of the handler, and reads the
signature of the handler's ``handle_EHLO``: :func:`dispatch_names` and
:func:`keep_signature` make both a lookup. Kept apart from
:mod:`pytest_tempinbox.server.smtp._aiosmtpd` so that the handler can use them
without importing aiosmtpd, which the fast lane does not need.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["DISPATCH_PREFIXES", "dispatch_names", "keep_signature"]

# aiosmtpd finds its commands, AUTH mechanisms and handler hooks by these prefixes.
DISPATCH_PREFIXES = ("smtp_", "auth_", "handle_")
_dispatch_names_of: dict[type, list[str]] = {}
_F = TypeVar("_F", bound=Callable[..., Any])


def dispatch_names(cls: type) -> list[str]:
    """The names of ``cls`` that aiosmtpd looks for: what a ``__dir__`` need list.

    aiosmtpd builds each connection's command and AUTH tables from ``dir()`` and
    :func:`inspect.getmembers` of the protocol and the handler: a getattr and a
    sort over some 150 names, most of the cost of accepting a connection. The
    names it looks for are the class's, so they are listed once per class.
    """
    names = _dispatch_names_of.get(cls)
    if names is None:
        names = sorted(name for name in dir(cls) if name.startswith(DISPATCH_PREFIXES))
        _dispatch_names_of[cls] = names
    return list(names)


def keep_signature(function: _F) -> _F:
    """Give ``function`` its signature, worked out once, and return it.

    aiosmtpd looks at ``handle_EHLO``'s signature on every connection (to tell
    its old four-argument form apart), which takes longer than the rest of
    setting up the session; :func:`inspect.signature` hands out a
    ``__signature__`` as it is.
    """
    setattr(function, "__signature__", inspect.signature(function))  # noqa: B010
    return function
