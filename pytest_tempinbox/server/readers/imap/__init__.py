"""The IMAP4rev1 server of the readers (RFC 3501, as clients use it to fetch mail).

One job a module: :mod:`.tokens` reads arguments, :mod:`.wire` reads a command
(literals included) off a session, :mod:`.mime` cuts a message into parts,
:mod:`.structure` writes ENVELOPE and BODYSTRUCTURE, :mod:`.fetch` and
:mod:`.search` answer those commands, :mod:`.mailbox` is a session's view of
``INBOX`` and the flags, and :mod:`.session` runs the states and commands
(:class:`~.session.IMAPHandler`). The server imports this package only when
it has an IMAP listener.
"""

from .session import BUSY, handle

__all__ = ["BUSY", "handle"]
