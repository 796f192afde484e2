"""The store: where inboxes and their messages are kept, and what a store must do.

:mod:`.protocol` says what the server asks of a store (:class:`~.protocol.InboxStore`);
the records every store shares sit beside it: the messages as kept
(:mod:`.stored_message`), the address rules (:mod:`.addresses`), the injected
faults (:mod:`.faults`), the refused recipients (:mod:`.refusals`) and how a
pending wait sleeps (:mod:`.waiting`). The stores
themselves are :mod:`.memory` (in this process) and :mod:`.redis` (shared by
several servers); :mod:`.factory` opens the one a configuration names. No SMTP,
no HTTP here: the other wings call the store, never the reverse.
"""
