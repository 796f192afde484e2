"""The inbox handle that tests use: read, wait for, and delete one address's mail.

It also makes the address misbehave on purpose, for testing how an application
copes: :meth:`Inbox.fail_next`, :meth:`Inbox.delay_next` and
:meth:`Inbox.disconnect_next` inject faults into its next deliveries.

Every call that does I/O comes in two forms: ``messages()`` blocks, and
``await messages_async()`` lets the event loop run while it waits, for
``async def`` tests whose application sends mail from the same loop. Both share
the same search, errors and failure messages. The module is long because of
those twins: each wait is written twice, over one shared search.
"""

from __future__ import annotations

import time
import unicodedata
from collections.abc import Callable
from typing import TYPE_CHECKING, Generic, TypeVar

from ..errors import MailAssertionError, WaitTimeout
from ..limits import MAX_WAIT
from ..models import Fault, Message, Stage
from ..parsing.failures import excerpt
from ..parsing.match import (
    Wanted,
    collapse_space,
    searchable_text,
    sender_matches,
    subject_matches,
    text_matches,
)

if TYPE_CHECKING:
    from datetime import datetime

    from .http import TempInboxClient

__all__ = ["Inbox", "describe", "seconds"]

# A long-poll that cancelling cannot end (requests in a worker thread) is kept
# this short, so that a cancelled wait lets go of its thread within this time.
_UNCANCELLABLE_POLL = 1.0

Result = TypeVar("Result")


# Plain classes, not dataclasses: creating a dataclass costs about 1 ms of import.
class _Filter:
    """The filters of a wait: strings go to the server too, patterns and ``match`` stay here."""

    __slots__ = ("match", "sender", "subaddress", "subject", "text")

    def __init__(
        self,
        subject: Wanted | None,
        sender: Wanted | None,
        match: Callable[[Message], bool] | None,
        text: Wanted | None = None,
        subaddress: str | None = None,
    ) -> None:
        # An empty string filters nothing, as on the server (even a mail without From).
        self.subject = subject or None
        self.sender = sender or None
        self.text = text or None
        self.match = match
        if subaddress is not None and not isinstance(subaddress, str):
            raise TypeError(f"subaddress must be a string, not {type(subaddress).__name__}")
        self.subaddress = subaddress or None

    def __call__(self, message: Message) -> bool:
        if self.subaddress is not None and message.subaddress != _folded(self.subaddress):
            return False
        if self.subject is not None and not subject_matches(self.subject, message.subject):
            return False
        if self.sender is not None:
            address = message.sender.email if message.sender else None
            if not sender_matches(self.sender, address):
                return False
        if self.text is not None and not text_matches(
            self.text, searchable_text(message.text, message.html)
        ):
            return False
        return self.match is None or bool(self.match(message))

    @property
    def server_side(self) -> dict[str, str]:
        """The string filters as the client's keywords: the server applies them before answering."""
        given = (
            ("subject", self.subject),
            ("sender", self.sender),
            ("text", self.text),
            ("subaddress", self.subaddress),
        )
        return {name: value for name, value in given if isinstance(value, str)}

    def __str__(self) -> str:
        parts = [] if self.subaddress is None else [f"subaddress {self.subaddress!r}"]
        for name, value in (
            ("subject", self.subject),
            ("sender", self.sender),
            ("text", self.text),
        ):
            if isinstance(value, str):
                parts.append(f"{name} containing {value!r}")
            elif value is not None:
                parts.append(f"{name} matching {value.pattern!r}")
        if self.match is not None:
            parts.append(f"match={getattr(self.match, '__name__', repr(self.match))}")
        return "message with " + " and ".join(parts) if parts else "message"

    def first(self, received: list[Message], new: int) -> Message | None:
        return next((message for message in received[-new:] if self(message)), None)

    def near_miss(self, message: Message) -> str | None:
        """Why a message that did not pass looks close to passing, if it does."""
        subject = self.subject
        if (
            isinstance(subject, str)
            and subject not in message.subject
            and subject.lower() in message.subject.lower()
        ):
            return "its subject matches but for letter case (subject= is case-sensitive)"
        if isinstance(self.text, str) and not text_matches(
            self.text, searchable_text(message.text, message.html)
        ):
            folded = collapse_space(self.text).lower()
            bodies = searchable_text(message.text, message.html)
            if any(folded in body.lower() for body in bodies):
                return "its text matches but for letter case (text= is case-sensitive)"
        return None


class _Search(Generic[Result]):
    """A wait with the server's long-poll and a cursor, apart from how requests are made.

    Each poll returns only messages newer than the last one seen, as soon as one
    arrives; the search ends with a last non-waiting poll when time is up.
    """

    __slots__ = ("check", "cursor", "deadline", "done", "longest_poll", "received", "result")

    def __init__(
        self,
        check: Callable[[list[Message], int], Result | None],
        timeout: float,
        longest_poll: float,
    ) -> None:
        self.check = check
        self.longest_poll = longest_poll
        self.received: list[Message] = []
        self.result: Result | None = None
        self.cursor: str | None = None
        self.deadline = time.monotonic() + timeout
        self.done = False

    def next_poll(self) -> float | None:
        """The wait of the next poll, or None when the search is over."""
        if self.done:
            return None
        remaining = max(0.0, self.deadline - time.monotonic())
        self.done = remaining <= 0
        return min(remaining, self.longest_poll)

    def feed(self, batch: list[Message]) -> None:
        """Take a poll's answer."""
        if not batch:
            return
        self.done = False  # there may be more: poll once more, even when time is up
        self.cursor = batch[-1].id
        self.received += batch
        self.result = self.check(self.received, len(batch))
        if self.result is not None:
            self.done = True


class Inbox:
    """One disposable address and what it received; ``str(inbox)`` is the address.

    Hand :attr:`address` to the application under test, then read the mail with
    :meth:`messages` or wait for it with :meth:`wait_for_message` (in ``async``
    tests, :meth:`wait_for_message_async`).
    """

    def __init__(
        self, address: str, client: TempInboxClient, *, created_at: datetime | None = None
    ) -> None:
        self.address = address
        """The generated email address, lowercase: give it to the application under test."""
        self.client = client
        """The client this inbox reads through."""
        self.created_at = created_at
        """When the server created the inbox, if known: a failed wait lists mail refused since."""

    def __str__(self) -> str:
        return self.address

    def __repr__(self) -> str:
        return f"<Inbox {self.address}>"

    def messages(self) -> list[Message]:
        """Return every message received so far, oldest first."""
        return self.client.messages(self.address)

    async def messages_async(self) -> list[Message]:
        """Return every message received so far, oldest first, without blocking the loop."""
        return await self.client.messages_async(self.address)

    def wait_for_message(
        self,
        *,
        subject: Wanted | None = None,
        sender: Wanted | None = None,
        match: Callable[[Message], bool] | None = None,
        text: Wanted | None = None,
        subaddress: str | None = None,
        timeout: float = 10.0,
    ) -> Message:
        """Return the first message, oldest first, that passes every given filter.

        ``subject``: the subject contains this text (case-sensitive). ``sender``:
        the ``From`` address contains this text (case-insensitive). ``text``: the
        text body or the HTML's visible text contains this text (case-sensitive,
        runs of white space read as one space). Each of the three may instead be
        a compiled :class:`re.Pattern`, searched. ``subaddress``: the message
        was sent to the sub-address ``name+subaddress@domain`` of this inbox's
        ``name@domain`` (any case, for ASCII). ``match``: this callable returns
        true for the message. String filters are applied by the server, so only
        matching messages are downloaded.

        Waits up to ``timeout`` seconds with the server's long-poll (no
        sleeping); then raises :class:`~pytest_tempinbox.errors.WaitTimeout`,
        whose message lists what the inbox did receive, and what the server
        and the process can tell of where the mail went: mail the server
        refused while the test ran (to any address), Django's locmem outbox,
        the SMTP host and port, a running event loop this call blocked.
        ``timeout`` that is no number (``"1"``) is a :class:`TypeError`. It
        blocks: in an ``async def`` test use :meth:`wait_for_message_async`.
        """
        __tracebackhide__ = True
        timeout = seconds("timeout", timeout)
        wanted = _Filter(subject, sender, match, text, subaddress)
        found = self._run(wanted, wanted.first, timeout)
        if found is not None:
            return found
        received = self.messages()
        notes = self._notes("wait_for_message")
        raise _timeout(self.address, f"no {wanted}", timeout, received, wanted, notes=notes)

    async def wait_for_message_async(
        self,
        *,
        subject: Wanted | None = None,
        sender: Wanted | None = None,
        match: Callable[[Message], bool] | None = None,
        text: Wanted | None = None,
        subaddress: str | None = None,
        timeout: float = 10.0,
    ) -> Message:
        """Like :meth:`wait_for_message`, awaitable: the event loop runs while it waits.

        Cancelling it (``asyncio.wait_for``, an anyio cancel scope) ends the wait
        at once.
        """
        __tracebackhide__ = True
        timeout = seconds("timeout", timeout)
        wanted = _Filter(subject, sender, match, text, subaddress)
        found = await self._run_async(wanted, wanted.first, timeout)
        if found is not None:
            return found
        received = await self.messages_async()
        notes = await self._notes_async()
        raise _timeout(self.address, f"no {wanted}", timeout, received, wanted, notes=notes)

    def wait_for_messages(
        self,
        count: int,
        *,
        subject: Wanted | None = None,
        sender: Wanted | None = None,
        match: Callable[[Message], bool] | None = None,
        text: Wanted | None = None,
        subaddress: str | None = None,
        timeout: float = 10.0,
    ) -> list[Message]:
        """Wait until at least ``count`` messages pass the filters; return those, oldest first.

        The filters are those of :meth:`wait_for_message`; without any, every
        message counts. Raises :class:`~pytest_tempinbox.errors.WaitTimeout`
        when fewer arrived in ``timeout`` seconds. It blocks: in an
        ``async def`` test use :meth:`wait_for_messages_async`.
        """
        __tracebackhide__ = True
        timeout, count = seconds("timeout", timeout), _count(count)
        wanted = _Filter(subject, sender, match, text, subaddress)
        found = self._run(wanted, _at_least(count, wanted), timeout)
        if found is not None:
            return found
        what = f"fewer than {count} {_plural(wanted)}"
        received = self.messages()
        notes = self._notes("wait_for_messages")
        raise _timeout(self.address, what, timeout, received, wanted, count, notes)

    async def wait_for_messages_async(
        self,
        count: int,
        *,
        subject: Wanted | None = None,
        sender: Wanted | None = None,
        match: Callable[[Message], bool] | None = None,
        text: Wanted | None = None,
        subaddress: str | None = None,
        timeout: float = 10.0,
    ) -> list[Message]:
        """Like :meth:`wait_for_messages`, awaitable: the event loop runs while it waits."""
        __tracebackhide__ = True
        timeout, count = seconds("timeout", timeout), _count(count)
        wanted = _Filter(subject, sender, match, text, subaddress)
        found = await self._run_async(wanted, _at_least(count, wanted), timeout)
        if found is not None:
            return found
        what = f"fewer than {count} {_plural(wanted)}"
        received = await self.messages_async()
        notes = await self._notes_async()
        raise _timeout(self.address, what, timeout, received, wanted, count, notes)

    def assert_no_message(
        self,
        subject: Wanted | None = None,
        sender: Wanted | None = None,
        match: Callable[[Message], bool] | None = None,
        *,
        text: Wanted | None = None,
        subaddress: str | None = None,
        within: float = 1.0,
    ) -> None:
        """Pass when no message passing the filters is in the inbox after ``within`` seconds.

        The filters are those of :meth:`wait_for_message`; without any, every
        message counts. A message that was already there counts too. It waits
        with the server's long-poll, never by sleeping and polling, so it fails
        as soon as a matching message arrives, raising
        :class:`~pytest_tempinbox.errors.MailAssertionError` that shows it and
        says, by its received time, whether it was already there when the
        check began or how long after it came; it passes after ``within``
        seconds. ``within`` that is no number is a :class:`TypeError`. It
        blocks: in an ``async def`` test use :meth:`assert_no_message_async`.
        """
        __tracebackhide__ = True
        within = seconds("within", within)
        wanted = _Filter(subject, sender, match, text, subaddress)
        started = _now()
        found = self._run(wanted, wanted.first, within)
        if found is not None:
            raise _unexpected(self.address, wanted, within, found, started)

    async def assert_no_message_async(
        self,
        subject: Wanted | None = None,
        sender: Wanted | None = None,
        match: Callable[[Message], bool] | None = None,
        *,
        text: Wanted | None = None,
        subaddress: str | None = None,
        within: float = 1.0,
    ) -> None:
        """Like :meth:`assert_no_message`, awaitable: the event loop runs while it waits."""
        __tracebackhide__ = True
        within = seconds("within", within)
        wanted = _Filter(subject, sender, match, text, subaddress)
        started = _now()
        found = await self._run_async(wanted, wanted.first, within)
        if found is not None:
            raise _unexpected(self.address, wanted, within, found, started)

    def _run(
        self,
        wanted: _Filter,
        check: Callable[[list[Message], int], Result | None],
        timeout: float,
    ) -> Result | None:
        """Long-poll until ``check`` finds its result or ``timeout`` is up."""
        search = self._search(check, timeout)
        while (wait := search.next_poll()) is not None:
            batch = self.client.messages(
                self.address, after=search.cursor, wait=wait, **wanted.server_side
            )
            search.feed(batch)
        return search.result

    async def _run_async(
        self,
        wanted: _Filter,
        check: Callable[[list[Message], int], Result | None],
        timeout: float,
    ) -> Result | None:
        search = self._search(check, timeout, awaited=True)
        while (wait := search.next_poll()) is not None:
            batch = await self.client.messages_async(
                self.address, after=search.cursor, wait=wait, **wanted.server_side
            )
            search.feed(batch)
        return search.result

    def delete(self) -> int:
        """Delete the inbox and its mail; return how many messages were purged."""
        return self.client.delete(self.address)

    async def delete_async(self) -> int:
        """Like :meth:`delete`, awaitable."""
        return await self.client.delete_async(self.address)

    def fail_next(
        self,
        code: int = 451,
        message: str | None = None,
        *,
        times: int = 1,
        stage: Stage = "rcpt",
    ) -> Fault:
        """Answer the next ``times`` deliveries to this address with the SMTP reply ``code``.

        ``stage="rcpt"``: the ``RCPT TO`` of this address gets the reply (other
        recipients of the transaction are not affected); ``stage="data"``: the
        whole DATA gets it, and nobody in that transaction gets the message.
        ``code`` is a 4xx (temporary) or 5xx (permanent) reply code;
        ``message`` its text, 1-200 printable ASCII characters, to which the
        server adds an enhanced status code (``4.0.0``, ``5.0.0``) if it has none.
        A 421 also closes the connection. Faults apply in the order they were
        made; returns this one as the server keeps it.
        """
        return self.client.add_fault(self.address, _reply(code, message, times, stage))

    async def fail_next_async(
        self,
        code: int = 451,
        message: str | None = None,
        *,
        times: int = 1,
        stage: Stage = "rcpt",
    ) -> Fault:
        """Like :meth:`fail_next`, awaitable."""
        fault = _reply(code, message, times, stage)
        return await self.client.add_fault_async(self.address, fault)

    def delay_next(self, seconds: float, *, times: int = 1, stage: Stage = "data") -> Fault:
        """Hold the answer to the next ``times`` deliveries to this address for ``seconds``.

        ``stage="data"``: the message is stored and answered ``250`` after the
        delay, only if the client is still connected then (a client that timed
        out and left has it stored nowhere); ``stage="rcpt"``: the ``RCPT TO``
        answer waits. ``seconds`` is above 0, up to 60.
        """
        fault = Fault(stage=stage, delay=seconds, times=times)
        return self.client.add_fault(self.address, fault)

    async def delay_next_async(
        self, seconds: float, *, times: int = 1, stage: Stage = "data"
    ) -> Fault:
        """Like :meth:`delay_next`, awaitable."""
        fault = Fault(stage=stage, delay=seconds, times=times)
        return await self.client.add_fault_async(self.address, fault)

    def disconnect_next(self, *, times: int = 1, stage: Stage = "data") -> Fault:
        """Drop the connection, without an answer, on the next ``times`` deliveries to this address.

        ``stage="data"``: after the message text, which is stored for nobody;
        ``stage="rcpt"``: at this address's ``RCPT TO``.
        """
        fault = Fault(stage=stage, disconnect=True, times=times)
        return self.client.add_fault(self.address, fault)

    async def disconnect_next_async(self, *, times: int = 1, stage: Stage = "data") -> Fault:
        """Like :meth:`disconnect_next`, awaitable."""
        fault = Fault(stage=stage, disconnect=True, times=times)
        return await self.client.add_fault_async(self.address, fault)

    def faults(self) -> list[Fault]:
        """Return the pending faults, first to apply first; ``times`` counts what is left."""
        return self.client.faults(self.address)

    async def faults_async(self) -> list[Fault]:
        """Like :meth:`faults`, awaitable."""
        return await self.client.faults_async(self.address)

    def clear_faults(self) -> int:
        """Drop the pending faults; return how many there were."""
        return self.client.clear_faults(self.address)

    async def clear_faults_async(self) -> int:
        """Like :meth:`clear_faults`, awaitable."""
        return await self.client.clear_faults_async(self.address)

    def _notes(self, method: str) -> list[str]:
        """What a failed blocking wait adds: why no mail may have arrived (see ``_explain``)."""
        from .explain import explain, loop_is_running

        return explain(self, blocking=method if loop_is_running() else None)

    async def _notes_async(self) -> list[str]:
        from .explain import explain_async

        return await explain_async(self)

    def _search(
        self,
        check: Callable[[list[Message], int], Result | None],
        timeout: float,
        *,
        awaited: bool = False,
    ) -> _Search[Result]:
        cancellable = self.client.transport.cancellable
        longest = _UNCANCELLABLE_POLL if awaited and not cancellable else MAX_WAIT
        return _Search(check, timeout, longest)


def _reply(code: int, message: str | None, times: int, stage: Stage) -> Fault:
    return Fault(stage=stage, code=code, message=message, times=times)


def _at_least(count: int, wanted: _Filter) -> Callable[[list[Message], int], list[Message] | None]:
    def check(received: list[Message], new: int) -> list[Message] | None:
        passing = [message for message in received if wanted(message)]
        return passing if len(passing) >= count else None

    return check


def _plural(wanted: _Filter) -> str:
    text = str(wanted)
    return "messages" + text[len("message") :]


def seconds(name: str, value: object) -> float:
    """``value`` as a number of seconds, 0 or more; the error names the parameter ``name``.

    A string (``timeout="1"``) or ``True`` is a :class:`TypeError`, a negative
    number or NaN a :class:`ValueError`, raised where the caller passed it,
    not from deep inside a wait.
    """
    __tracebackhide__ = True
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(
            f"{name} must be a number of seconds (int or float), not"
            f" {type(value).__name__} {value!r}"
        )
    if not value >= 0:  # also false for NaN
        raise ValueError(f"{name} must be a number of seconds, 0 or more, not {value!r}")
    return float(value)


def _count(count: object) -> int:
    __tracebackhide__ = True
    if isinstance(count, bool) or not isinstance(count, int):
        raise TypeError(f"count must be an int, not {type(count).__name__} {count!r}")
    if count < 1:
        raise ValueError(f"count must be 1 or more, not {count!r}")
    return count


def _now() -> datetime:
    from datetime import datetime, timezone

    return datetime.now(timezone.utc)


def _timeout(
    address: str,
    what: str,
    timeout: float,
    received: list[Message],
    wanted: _Filter,
    count: int | None = None,
    notes: list[str] | None = None,
) -> WaitTimeout:
    lines = [f"{what} arrived at {address} within {timeout:g} s;"]
    if not received:
        lines.append("the inbox received no mail at all.")
        return WaitTimeout("\n".join(lines + (notes or [])))
    passing = sum(1 for message in received if wanted(message))
    lines.append(f"the inbox received {len(received)} message(s):")
    for message in received:
        line = f"  - {describe(message)}"
        if count is not None and wanted(message):
            line += " (passes)"
        elif (miss := wanted.near_miss(message)) is not None:
            line += f" ({miss})"
        lines.append(line)
    if count is not None and str(wanted) != "message":
        lines.append(f"{passing} of them pass the filters.")
    return WaitTimeout("\n".join(lines + (notes or [])))


def _unexpected(
    address: str, wanted: _Filter, within: float, message: Message, started: datetime
) -> MailAssertionError:
    """The failure of ``assert_no_message``: when the message came, by its received time."""
    early = (started - message.received_at).total_seconds()
    if early >= 0:
        when = f"one was already there when the check began (received {early:.2f} s before)"
    else:
        when = f"one arrived {-early:.2f} s after the check began"
    lines = [
        f"expected no {wanted} at {address} within {within:g} s, but {when}:",
        f"  - {describe(message)}",
    ]
    lines += [f"    | {line}" for line in excerpt(message)]
    return MailAssertionError("\n".join(lines))


def describe(message: Message) -> str:
    """One line about a message: when it arrived, who sent it, its subject and sub-address."""
    sender = str(message.sender) if message.sender else message.envelope.mail_from or "<>"
    received = message.received_at.strftime("%H:%M:%S.%f")[:-3]
    via = "" if message.subaddress is None else f" (to sub-address {message.subaddress!r})"
    return f"{received} from {sender}: {message.subject!r}{via}"


def _folded(subaddress: str) -> str:
    """``subaddress`` as the server keeps one: its ASCII letters lowercased, in NFC."""
    if subaddress.isascii():
        return subaddress.lower()
    lowered = "".join(char.lower() if char.isascii() else char for char in subaddress)
    return unicodedata.normalize("NFC", lowered)
