"""Each inbox's password for its IMAP and POP3 readers: signed, never stored.

An inbox's password is an HMAC-SHA256 of its folded address (and of the
tenant that generated it, so that an inbox made again at a chosen address by
another tenant does not open with the first one's password) under a key the
store keeps (:meth:`~pytest_tempinbox.server.store.protocol.InboxStore.secret`):
random per server with the memory store, one for every server on a Redis.
Nothing is stored per inbox, so handing a password out costs one HMAC, and
any server of the store accepts the password another handed out.
Standard library only: the API imports this module for ``POST /api/generate``.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import threading
import weakref

from ...errors import InboxNotFound, InvalidAddress
from ..store.addresses import normalize_address
from ..store.protocol import InboxStore

__all__ = ["PASSWORD_LENGTH", "InboxPasswords", "passwords_of"]

PASSWORD_LENGTH = 24
"""Characters in a password: base32 (lowercase letters and 2 to 7), 120 bits."""
_SECRET = "reader-passwords"
_made: weakref.WeakKeyDictionary[InboxStore, InboxPasswords] = weakref.WeakKeyDictionary()
_made_lock = threading.Lock()


class InboxPasswords:
    """The passwords of the inboxes of ``store``; the key is read from it on first use."""

    def __init__(self, store: InboxStore) -> None:
        self.store = store
        self._key: bytes | None = None

    def password(self, address: str) -> str:
        """The password of the live inbox at ``address`` (any case).

        Raises as :meth:`~pytest_tempinbox.server.store.protocol.InboxStore.get`.
        """
        folded = self.store.get(address).address
        return self.password_for(folded, self.store.owner(folded))

    def password_for(self, folded: str, owner: str | None) -> str:
        """The password of the inbox at the folded address ``folded`` that ``owner`` generated.

        No look-up: what ``POST /api/generate`` hands out with the inbox it made.
        """
        key = self._key
        if key is None:
            key = self._key = self.store.secret(_SECRET)
        signed = f"{folded}\0{owner or ''}".encode("utf-8", "surrogateescape")
        digest = hmac.new(key, signed, hashlib.sha256).digest()
        return base64.b32encode(digest[:15]).decode("ascii").lower()

    def check(self, user: str, password: str) -> str | None:
        """The inbox's folded address when ``password`` is that of a live inbox ``user``; else None.

        None too for a user that is no address, and for a password of the
        right inbox but of another incarnation of it (another tenant's). The
        comparison takes the same time wherever the strings differ. Raises
        nothing but :class:`~pytest_tempinbox.errors.StoreUnavailable`.
        """
        try:
            folded = normalize_address(user)
            owner = self.store.owner(folded)
        except (InvalidAddress, InboxNotFound):
            return None
        expected = self.password_for(folded, owner).encode("ascii")
        given = password.encode("utf-8", "surrogateescape")
        return folded if hmac.compare_digest(expected, given) else None


def passwords_of(store: InboxStore) -> InboxPasswords:
    """The one :class:`InboxPasswords` of ``store`` in this process (made on first call)."""
    with _made_lock:
        found = _made.get(store)
        if found is None:
            found = _made[store] = InboxPasswords(store)
        return found
