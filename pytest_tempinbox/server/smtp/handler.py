"""The SMTP handler: aiosmtpd's hooks that check addresses and deliver into the store.

It accepts mail only for live generated addresses (no relaying, ever), and
stores each message before answering ``250`` to DATA. Faults injected into an
inbox (:mod:`pytest_tempinbox.server.store.faults`) strike here, at RCPT or at DATA.
The connection it serves is :mod:`pytest_tempinbox.server.smtp`'s: the fast
lane and aiosmtpd's protocol call the same hooks, each with its own session and
envelope objects of aiosmtpd's shape, so this module imports nothing of
aiosmtpd when it runs.
"""

from __future__ import annotations

import logging
import sys
from typing import TYPE_CHECKING, Any

from ...errors import InboxNotFound, QuotaExceeded, StoreUnavailable
from ...limits import DEFAULT_MAX_RECIPIENTS
from ...models import Fault, Stage
from ..counters import (
    INJECTED_FAULT,
    INVALID_ADDRESS,
    STORE_UNAVAILABLE,
    TOO_MANY_RECIPIENTS,
    UNKNOWN_RECIPIENT,
    ServerCounters,
)
from ..store.addresses import recipient_inbox
from ..store.faults import data_answer
from ..store.protocol import InboxStore
from ._hook_names import dispatch_names, keep_signature
from .strike import strike
from .tenant_login import session_tenant

if TYPE_CHECKING:
    # Their shapes: the fast lane passes objects of its own with the same attributes.
    from aiosmtpd.smtp import SMTP, Envelope, Session

    from .transcript import TranscriptBook

__all__ = ["InboxHandler"]

# The SMTP side logs under one name, the one its users' logging settings know.
log = logging.getLogger("pytest_tempinbox.server.smtp")

MAX_LOCAL_PART, MAX_DOMAIN, MAX_PATH = 64, 255, 256
_NOT_LIVE = "not a live generated address"
_NOT_LIVE_REPLY = f"Recipient address rejected: {_NOT_LIVE}"
# A tenant's login: one reply for an inbox of another tenant and for none at all.
_NOT_TENANTS = "550 5.7.1 Recipient address rejected: not a live inbox of the authenticated tenant"
_NONE_LEFT = "554 5.1.1 No live recipients left: the inboxes were deleted"


class InboxHandler:
    """aiosmtpd handler hooks: MAIL and RCPT check addresses, DATA delivers into the store.

    Without ``advertise_auth``, EHLO's answer leaves AUTH out. ``dir()`` of a
    handler lists only its hooks: aiosmtpd reads it on every connection. What
    it accepts and refuses is counted in ``counters`` (its own when none is given).
    When the store does not answer, RCPT and DATA answer ``451 4.3.0``: the
    client tries again later, and nothing answered 250 is lost.
    """

    def __dir__(self) -> list[str]:
        return dispatch_names(type(self))

    def __init__(
        self,
        store: InboxStore,
        *,
        max_recipients: int = DEFAULT_MAX_RECIPIENTS,
        advertise_auth: bool = True,
        counters: ServerCounters | None = None,
        tenant_logins: bool = False,
        transcripts: TranscriptBook | None = None,
    ) -> None:
        self.store = store
        self.transcripts = transcripts
        """Where each delivered message's SMTP transcript is kept (None: not kept).

        A store that keeps the messages it delivers has each one's kept on it.
        """
        self._on_messages = store.keeps_delivered
        self.tenant_logins = tenant_logins
        self.max_recipients = max_recipients
        self.advertise_auth = advertise_auth
        self.counters = ServerCounters() if counters is None else counters

    @keep_signature
    async def handle_EHLO(
        self,
        server: SMTP,
        session: Session,
        envelope: Envelope,
        hostname: str,
        responses: list[str],
    ) -> list[str]:
        """Answer EHLO with aiosmtpd's extensions, AUTH left out when it is not offered.

        The lines go out in one write: aiosmtpd writes each line it is given on
        its own, and a client reading them wakes up for each.
        """
        session.host_name = hostname  # aiosmtpd leaves this to a handler with this hook
        if not self.advertise_auth:
            responses = [line for line in responses if not line.startswith("250-AUTH")]
        return ["\r\n".join(responses)]

    async def handle_MAIL(
        self,
        server: SMTP,
        session: Session,
        envelope: Envelope,
        address: str,
        mail_options: list[str],
    ) -> str:
        """Accept any sender (``<>`` too) whose path is within RFC 5321's lengths."""
        if address != "<>":
            refusal = _path_refusal(address, envelope)
            if refusal:
                return refusal
        envelope.mail_from = address
        envelope.mail_options.extend(mail_options)
        return "250 2.1.0 OK"

    async def handle_RCPT(
        self,
        server: SMTP,
        session: Session,
        envelope: Envelope,
        address: str,
        rcpt_options: list[str],
    ) -> str:
        """Accept a live inbox's address (any case), or a sub-address of it; refuse others with 550.

        ``name+detail@domain`` is the inbox ``name@domain``'s (RFC 5233). A
        session logged in with a tenant's SMTP credentials reaches that
        tenant's inboxes only: any other address, live or not, gets one
        ``550 5.7.1`` reply.
        """
        refused = self.counters.refused
        refusal = _path_refusal(address, envelope)
        if refusal:
            refused[INVALID_ADDRESS] += 1
            return refusal
        if len(envelope.rcpt_tos) >= self.max_recipients:
            refused[TOO_MANY_RECIPIENTS] += 1
            return f"452 4.5.3 Too many recipients: at most {self.max_recipients} per message"
        tenant = session_tenant(session) if self.tenant_logins else None
        try:
            store = self.store
            # With quotas, one look-up tells both whether the inbox is live and its room.
            verdict = await (
                store.accepts(address) if store.quotas is None else store.admits(address)
            )
            if verdict is False or (tenant is not None and not self._reaches(tenant, address)):
                return self._refuse(session, address, tenant)
            if verdict is not True:
                return _over_quota(verdict)
            fault = await self._take_fault(envelope, address, "rcpt")
            if fault is not None:
                reply = await strike(server, fault)
                if reply is not None:
                    refused[INJECTED_FAULT] += 1
                    return reply
                if not await self.store.accepts(address):  # deleted during the delay
                    return self._refuse(session, address, tenant)
        except StoreUnavailable as exc:
            refused[STORE_UNAVAILABLE] += 1
            return self._store_down(exc)
        envelope.rcpt_tos.append(address)
        envelope.rcpt_options.extend(rcpt_options)
        return "250 2.1.5 OK"

    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        """Store a copy for each accepted recipient, then answer 250.

        Faults for the end of DATA strike first. SMTP has one DATA reply for
        every recipient, so when one recipient's fault replies or disconnects,
        nobody gets the message (the client will send it to them all again).
        A delay waits, the longest of them; a client that leaves meanwhile
        cancels the session, and nothing is stored. A refusal over a quota, or
        for want of a live recipient, is remembered (:meth:`refuse_data`).
        """
        raw = envelope.original_content or b""
        # aiosmtpd keeps the null reverse-path as "<>"; the API calls it "".
        mail_from = "" if envelope.mail_from == "<>" else str(envelope.mail_from)
        try:
            faults = [
                fault
                for address in (dict.fromkeys(envelope.rcpt_tos) if self.store.faults_added else ())
                if (fault := await self._take_fault(envelope, address, "data")) is not None
            ]
            if faults:
                reply = await strike(server, data_answer(faults))
                if reply is not None:
                    return reply
            if self.store.quotas is None:
                stored = await self.store.deliver(mail_from, envelope.rcpt_tos, raw)
            else:
                stored = await self.store.deliver(
                    mail_from, envelope.rcpt_tos, raw, within_quotas=True
                )
        except StoreUnavailable as exc:
            return self._store_down(exc)
        except QuotaExceeded as over:
            return self.refuse_data(session, envelope, _over_quota(over))
        if not stored:
            # Every recipient was deleted between RCPT and the end of DATA.
            return self.refuse_data(session, envelope, _NONE_LEFT)
        self.counters.messages_accepted += 1
        status = f"250 2.0.0 OK: queued as {stored[0].id}"
        if self.transcripts is not None:
            transcript = getattr(session, "transcript", None)
            if transcript is not None:
                kept = transcript.kept(session, status)
                if self._on_messages:
                    for message in stored:
                        message.transcript = kept
                else:
                    self.transcripts.keep(stored, kept)
        return status

    def _store_down(self, error: StoreUnavailable) -> str:
        """Count a store that does not answer, and the ``451`` that asks the client to retry."""
        self.counters.store_errors += 1
        log.warning("the store does not answer: %s", error)
        # One line of the reason, without what could break the reply line.
        reason = " ".join(str(error).split())[:200] or "the store does not answer"
        return f"451 4.3.0 {reason}, try again later"

    def _reaches(self, tenant: str, address: str) -> bool:
        """Whether a session logged in as ``tenant`` may mail ``address``, a live inbox's."""
        try:
            return self.store.owner(recipient_inbox(address)[0]) == tenant
        except InboxNotFound:  # gone since accepts() looked
            return False

    def _refuse(self, session: Session, address: str, tenant: str | None = None) -> str:
        """Refuse ``address`` with 550, and remember it for the failures of waits.

        ``tenant`` is the tenant the session logged in as: the refusal is that
        tenant's to read (``GET /api/refused``), and worded alike for every address.
        """
        reason = _NOT_LIVE if tenant is None else _NOT_TENANTS.partition(": ")[2]
        # The address is not echoed: it may hold bytes that cannot be encoded.
        reply = _NOT_TENANTS if tenant is not None else f"550 5.1.1 {_NOT_LIVE_REPLY}"
        client_ip, helo, said = _who(session, reply)
        self.store.refusals.record(address, reason, client_ip, helo, tenant=tenant, transcript=said)
        self.counters.refused[UNKNOWN_RECIPIENT] += 1
        return reply

    def refuse_data(self, session: Session, envelope: Envelope, reply: str) -> str:
        """Remember ``reply``, refusing a message at the end of DATA, for each recipient.

        Returns ``reply``. Each recipient accepted at RCPT gets a refusal at
        stage ``"data"``, with the whole reply line and the session's transcript
        up to it: the mail did reach the server, and a wait for it says what the
        server answered. The refusal is the tenant's the session logged in as,
        as at RCPT; without a login, the tenant's that owns the recipient's
        inbox, who could read the transcript of that message had it been
        stored (a recipient deleted meanwhile: nobody's). Faults a test
        injected are not remembered (it asked for them), nor a ``451`` of the
        store down: it is where the refusals are kept. When they cannot be
        written, ``reply`` is answered all the same.
        """
        recipients = dict.fromkeys(envelope.rcpt_tos)
        if not recipients:
            return reply
        tenant = session_tenant(session) if self.tenant_logins else None
        client_ip, helo, said = _who(session, reply)
        record = self.store.refusals.record
        try:
            for address in recipients:
                owner = tenant if tenant is not None else self._owner(address)
                record(address, reply, client_ip, helo, owner, said, stage="data")
        except StoreUnavailable as exc:
            log.warning("a refusal at the end of DATA is not remembered: %s", exc)
        return reply

    def _owner(self, address: str) -> str | None:
        """The tenant owning the live inbox ``address`` reaches; None: none, or no inbox now."""
        try:
            return self.store.owner(recipient_inbox(address)[0])
        except InboxNotFound:
            return None

    async def _take_fault(self, envelope: Envelope, address: str, stage: Stage) -> Fault | None:
        """The fault this transaction's delivery to ``address`` gets at ``stage``, if any.

        A transaction takes at most one fault per inbox: a delayed RCPT does
        not also take the next fault at DATA, nor a repeated RCPT (or one to
        another sub-address of the inbox) another one.
        """
        if not self.store.faults_added:  # the usual case: no test ever asked for one
            return None
        taken: set[str] = getattr(envelope, "faulted", set())
        key = recipient_inbox(address)[0]
        if key in taken:
            return None
        fault = await self.store.take_fault(address, stage)
        if fault is not None:
            taken.add(key)
        return fault

    async def handle_exception(self, error: Exception) -> str:
        """Log an unexpected error and answer a temporary failure without internals."""
        aiosmtpd_smtp: Any = sys.modules.get("aiosmtpd.smtp")  # only it raises this one
        if aiosmtpd_smtp is not None and isinstance(error, aiosmtpd_smtp.TLSSetupException):
            # A client that does not trust the certificate: its failure, not ours.
            # aiosmtpd closes the connection without sending this answer.
            log.info("STARTTLS handshake failed: %s", error.__cause__)
        else:
            log.error("error while handling an SMTP command", exc_info=error)
        return "451 4.3.0 Local error in processing, try again later"


def _who(session: Session, reply: str) -> tuple[str | None, str | None, dict[str, Any] | None]:
    """The client's IP address, its EHLO name and the transcript of a refusal with ``reply``."""
    peer = session.peer
    client_ip = peer[0] if isinstance(peer, tuple) and peer else None
    helo = session.host_name if isinstance(session.host_name, str) else None
    kept = getattr(session, "transcript", None)
    said = None if kept is None else kept.refused(session, reply)
    return client_ip, helo, said


def _path_refusal(address: str, envelope: Envelope) -> str | None:
    """The reply refusing a MAIL or RCPT ``address``, or None when its form is fine."""
    if not envelope.smtp_utf8 and not address.isascii():
        # RFC 6531 3.7.4.1, and what Postfix answers: unicode needs MAIL ... SMTPUTF8.
        return "553 5.6.7 Must declare SMTPUTF8 to send unicode address"
    if not address.isascii() and not _is_utf8(address):
        # Bytes that are no UTF-8 (kept as surrogates): no JSON could carry them.
        return "553 5.1.3 Malformed address: it is not valid UTF-8"
    # RFC 5321 4.5.3.1: local part 64 octets, domain 255, path (with <>) 256.
    encoded = address.encode("utf-8", "surrogateescape")
    local, at, domain = encoded.rpartition(b"@")
    if not at or not local or not domain:
        return "553 5.1.3 Malformed address: a local part, '@' and a domain are needed"
    if len(local) > MAX_LOCAL_PART or len(domain) > MAX_DOMAIN or len(encoded) + 2 > MAX_PATH:
        return (
            f"553 5.1.3 Address too long: local part {MAX_LOCAL_PART}, domain {MAX_DOMAIN},"
            f" path {MAX_PATH} octets at most"
        )
    return None


def _is_utf8(text: str) -> bool:
    """Tell whether ``text`` holds no surrogates: the bytes it was read from were UTF-8."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _over_quota(over: QuotaExceeded) -> str:
    """The SMTP reply for a recipient's tenant over its ``messages`` or ``bytes`` quota.

    RFC 3463's X.2.2 is "mailbox full". Over ``messages``: ``452 4.2.2``, a
    transient failure (RFC 5321 section 4.5.3.1.10: the client tries later, as
    mail is deleted). Over ``bytes`` at the end of DATA: ``552 5.2.2``, the reply
    RFC 5321 gives for exceeded storage allocation; nothing is stored, the
    sender is told, so no mail is silently lost.
    """
    if over.quota == "messages":
        return f"452 4.2.2 Mailbox full: the inbox's tenant {over}; try again later"
    return f"552 5.2.2 Mailbox full: the inbox's tenant {over}"
