"""A provider send delivered: the server's limits checked, one copy per live recipient inbox.

The same limits as SMTP (``ServerConfig.max_recipients`` and
``message_size_limit``); recipients without a live inbox are refused as an
SMTP ``RCPT`` is, recorded in the store's refusals so that a wait's timeout
names them. A live recipient's pending fault (``fail_next``, ``delay_next``,
``disconnect_next``) is taken here, one per inbox and send, whatever its
stage: a delay holds the send, then it goes on; an error reply or a
disconnect is a :class:`Struck` that the provider route answers (see
:mod:`.keys` and docs/providers.md). The store is reached through its
protocol only.
"""

from __future__ import annotations

import asyncio
import os
from base64 import urlsafe_b64encode
from dataclasses import dataclass

from ...config import ServerConfig
from ...values import Fault, ProviderRecord
from ..store.faults import data_answer
from ..store.protocol import InboxStore
from ..store.stored_message import StoredMessage
from .send import Send, SendError, build_message

__all__ = ["HTTP_STATUSES", "NOT_LIVE", "Delivery", "Struck", "TooLarge", "deliver", "new_id"]

NOT_LIVE = "not a live generated address"
"""Why a recipient was refused, as the refusals log says it (the SMTP side's words)."""


HTTP_STATUSES = frozenset({400, 401, 403, 404, 413, 422, 429, 500, 502, 503, 504})
"""The fault codes a provider send answers as they are: the HTTP statuses a provider gives."""


async def _within_quotas(store: InboxStore, live: list[str], size: int) -> None:
    """Raise :class:`Struck` ``429`` when a live recipient's tenant is over its messages or bytes.

    As SMTP refuses such mail (``452``/``552``), the send is refused whole and
    told so, in the provider's own error shape: nothing is stored, nothing lost.
    """
    for address in live:
        over = await store.quota_room(address, size)
        if over is not None:
            raise Struck(429, f"the inbox {address}'s tenant {over}")


class TooLarge(SendError):
    """The message built from a send is over the server's message size limit."""


class Struck(Exception):
    """A live recipient's fault struck the send: answer ``status`` with ``message``, or drop.

    ``status`` is None for a disconnect: the connection is dropped, unanswered.
    Nothing of the send is stored. A provider's endpoint lets it through; the
    provider route (:mod:`.gate`) answers it with the provider's ``error_reply``.
    """

    def __init__(self, status: int | None, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def http_status(code: int) -> int:
    """The HTTP status a provider send gets for a fault's reply ``code``.

    A code that is an HTTP status a provider answers (:data:`HTTP_STATUSES`:
    ``429``, ``500``, ``503``, ...) stays; another temporary SMTP code (``421``,
    ``450``, ``451``, ...) is ``503``, another permanent one (``550``, ...) ``400``.
    """
    if code in HTTP_STATUSES:
        return code
    return 503 if code < 500 else 400


async def strike(store: InboxStore, live: list[str]) -> None:
    """Take each live recipient's next fault, whatever its stage, and carry it out.

    One answer for the send, as SMTP's one answer to DATA: the longest delay
    is waited, then a disconnect beats an error reply, and the first
    recipient's reply wins (:func:`~..store.faults.data_answer`).
    """
    faults: list[Fault] = []
    for address in live:
        fault = await store.take_fault(address, "rcpt") or await store.take_fault(address, "data")
        if fault is not None:
            faults.append(fault)
    if not faults:
        return
    fault = data_answer(faults)
    if fault.delay is not None:
        await asyncio.sleep(fault.delay)
    if fault.disconnect:
        raise Struck(None, "connection dropped (injected fault)")
    if fault.code is not None:
        raise Struck(http_status(fault.code), fault.message or "")


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
    """A new provider message id: 22 URL-safe characters, as SendGrid's are.

    :func:`secrets.token_urlsafe` (16) spelled out: the same 16 random bytes
    in URL-safe base64, without its three calls between.
    """
    return urlsafe_b64encode(os.urandom(16)).rstrip(b"=").decode("ascii")


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
    if store.faults_added:  # the usual case: no test ever asked for one
        await strike(store, live)
    if store.quotas is not None:
        await _within_quotas(store, live, len(raw))
    stored = await store.deliver(send.sender[1], live, raw, record)
    return Delivery(tuple(stored), tuple(refused))
