"""IMAP and POP3 readers of the inboxes: listeners the server starts when asked (docs/readers.md).

Nothing here is imported unless ``imap_port`` or ``pop3_port`` is given, but
:mod:`.passwords` (standard library only), which ``POST /api/generate`` uses
to hand out each inbox's password. :mod:`.service` accepts connections and
runs a protocol's handler on each :class:`~.session.ReaderSession`, with the
server's :class:`~.context.ReaderContext`; :mod:`.listeners` builds them at
start. A protocol is a module of this package offering ``async def
handle(session)`` and ``BUSY`` (the bytes a connection over the limit is sent):
:mod:`.pop3` (RFC 1939) and ``imap``.
"""
