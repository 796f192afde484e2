"""A provider send delivered: the server's limits checked, one copy per live recipient inbox.

The same limits as SMTP (``ServerConfig.max_recipients`` and
``message_size_limit``); recipients without a live inbox are refused as an
SMTP ``RCPT`` is, recorded in the store's refusals so that a wait's timeout
names them. The store is reached through its protocol only.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from ...config import ServerConfig
from ...values import ProviderRecord
from ..store.protocol import InboxStore
from ..store.stored_message import StoredMessage
from .send import Send, SendError, build_message

__all__ = ["NOT_LIVE", "Delivery", "TooLarge", "deliver", "new_id"]

NOT_LIVE = "not a live generated address"
"""Why a recipient was refused, as the refusals log says it (the SMTP side's words)."""


class TooLarge(SendError):
    """The message built from a send is over the server's message size limit."""


@dataclass(frozen=True, slots=True)
class Delivery:
    """What became of a send: its copies, in recipient order, and the refused recipients."""

    stored: tuple[StoredMessage, ...]
    refused: tuple[str, ...]


def nobody_live(refused: list[str]) -> str:
    """The error of a send none of whose recipients is live, naming the first few."""
    shown = ", ".join(refused[:5]) + (", ..." if len(refused) > 5 else "")
    return f"no recipient is a live inbox of this server: {shown}"


def new_id() -> str:
    """A new provider message id: 22 URL-safe characters, as SendGrid's are."""
    return secrets.token_urlsafe(16)


async def deliver(
    store: InboxStore,
    config: ServerConfig,
    send: Send,
    record: ProviderRecord,
    message_id: str,
) -> Delivery:
    """Build ``send`` into its message and store one copy per live recipient inbox.

    ``message_id`` is the provider's id for the send; the message's
    ``Message-ID`` is made of it (a send's ``raw`` message is stored as it
    is, its sender and recipients then the envelope's). More recipients than the server takes, or
    no recipient, is a :class:`SendError`; a message over the size limit
    :class:`TooLarge`. The refused recipients are in the answer and in the
    store's refusals; nothing is stored when none is live.
    """
    recipients = tuple(dict.fromkeys(address.lower() for address in send.recipients))
    if not recipients:
        raise SendError("the send has no recipient", "to")
    if len(recipients) > config.max_recipients:
        raise SendError(
            f"too many recipients: {len(recipients)}, at most {config.max_recipients} per message",
            "to",
        )
    raw = build_message(send, record, f"<{message_id}@{record.name}.tempinbox.invalid>")
    if len(raw) > config.message_size_limit:
        raise TooLarge(
            f"the message is {len(raw)} bytes, over the server's limit of "
            f"{config.message_size_limit} bytes"
        )
    live: list[str] = []
    refused: list[str] = []
    for address in recipients:
        (live if await store.accepts(address) else refused).append(address)
    for address in refused:
        store.refusals.record(address, NOT_LIVE, None, f"{record.name} API")
    if not live:
        return Delivery((), tuple(refused))
    stored = await store.deliver(send.sender[1], live, raw, record)
    return Delivery(tuple(stored), tuple(refused))
