"""The inbox handle that tests use: read, wait for, and delete one address's mail.

:class:`Inbox` lives with the client it reads through, in :mod:`.http` (the two
name each other); this module is the name it has always been imported by, with
:func:`describe` (one line about a message) and :func:`seconds` (a duration
checked where the caller passed it), which live in :mod:`.flows`.
"""

from __future__ import annotations

from .flows import describe, seconds
from .http import Inbox

__all__ = ["Inbox", "describe", "seconds"]
