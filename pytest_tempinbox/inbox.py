"""The inbox handle that tests use: read, wait for, and delete one address's mail.

It also makes the address misbehave on purpose, for testing how an application
copes: :meth:`Inbox.fail_next`, :meth:`Inbox.delay_next` and
:meth:`Inbox.disconnect_next` inject faults into its next deliveries.

Every call that does I/O comes in two forms: ``messages()`` blocks, and
``await messages_async()`` lets the event loop run while it waits, for
``async def`` tests whose application sends mail from the same loop. Both share
the same search, errors and failure messages.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Generic, TypeVar

from .errors import WaitTimeout
from .limits import MAX_WAIT
from .models import Fault, Message, Stage

if TYPE_CHECKING:
    from .client import TempInboxClient

__all__ = ["Inbox", "describe"]

# A long-poll that cancelling cannot end (requests in a worker thread) is kept
# this short, so that a cancelled wait lets go of its thread within this time.
_UNCANCELLABLE_POLL = 1.0

Result = TypeVar("Result")


# Plain classes, not dataclasses: creating a dataclass costs about 1 ms of import.
class _Filter:
    __slots__ = ("match", "sender", "subject")

    def __init__(
        self, subject: str | None, sender: str | None, match: Callable[[Message], bool] | None
    ) -> None:
        self.subject = subject
        self.sender = sender
        self.match = match

    def __call__(self, message: Message) -> bool:
        if self.subject is not None and self.subject not in message.subject:
            return False
        if self.sender is not None and (
            message.sender is None or self.sender.lower() not in message.sender.email.lower()
        ):
            return False
        return self.match is None or bool(self.match(message))

    def __str__(self) -> str:
        parts = []
        if self.subject is not None:
            parts.append(f"subject containing {self.subject!r}")
        if self.sender is not None:
            parts.append(f"sender containing {self.sender!r}")
        if self.match is not None:
            parts.append(f"match={getattr(self.match, '__name__', repr(self.match))}")
        return "message with " + " and ".join(parts) if parts else "message"

    def first(self, received: list[Message], new: int) -> Message | None:
        return next((message for message in received[-new:] if self(message)), None)


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

    def __init__(self, address: str, client: TempInboxClient) -> None:
        self.address = address
        """The generated email address, lowercase: give it to the application under test."""
        self.client = client
        """The client this inbox reads through."""

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
        subject: str | None = None,
        sender: str | None = None,
        match: Callable[[Message], bool] | None = None,
        timeout: float = 10.0,
    ) -> Message:
        """Return the first message, oldest first, that passes every given filter.

        ``subject``: the subject contains this text (case-sensitive). ``sender``:
        the ``From`` address contains this text (case-insensitive). ``match``:
        this callable returns true for the message. Waits up to ``timeout``
        seconds with the server's long-poll (no sleeping); then raises
        :class:`~pytest_tempinbox.errors.WaitTimeout`, whose message lists what
        the inbox did receive. It blocks: in an ``async def`` test use
        :meth:`wait_for_message_async`.
        """
        __tracebackhide__ = True
        wanted = _Filter(subject, sender, match)
        search = self._search(wanted.first, timeout)
        while (wait := search.next_poll()) is not None:
            search.feed(self.client.messages(self.address, after=search.cursor, wait=wait))
        if search.result is not None:
            return search.result
        raise _timeout(self.address, f"no {wanted}", timeout, self.messages())

    async def wait_for_message_async(
        self,
        *,
        subject: str | None = None,
        sender: str | None = None,
        match: Callable[[Message], bool] | None = None,
        timeout: float = 10.0,
    ) -> Message:
        """Like :meth:`wait_for_message`, awaitable: the event loop runs while it waits.

        Cancelling it (``asyncio.wait_for``, an anyio cancel scope) ends the wait
        at once.
        """
        __tracebackhide__ = True
        wanted = _Filter(subject, sender, match)
        search = self._search(wanted.first, timeout, awaited=True)
        while (wait := search.next_poll()) is not None:
            batch = await self.client.messages_async(self.address, after=search.cursor, wait=wait)
            search.feed(batch)
        if search.result is not None:
            return search.result
        raise _timeout(self.address, f"no {wanted}", timeout, await self.messages_async())

    def wait_for_messages(self, count: int, *, timeout: float = 10.0) -> list[Message]:
        """Wait until the inbox holds at least ``count`` messages; return them all, oldest first.

        Raises :class:`~pytest_tempinbox.errors.WaitTimeout` when fewer arrived in
        ``timeout`` seconds. It blocks: in an ``async def`` test use
        :meth:`wait_for_messages_async`.
        """
        __tracebackhide__ = True
        search = self._search(_at_least(count), timeout)
        while (wait := search.next_poll()) is not None:
            search.feed(self.client.messages(self.address, after=search.cursor, wait=wait))
        if search.result is not None:
            return search.result
        raise _timeout(self.address, f"fewer than {count} messages", timeout, search.received)

    async def wait_for_messages_async(self, count: int, *, timeout: float = 10.0) -> list[Message]:
        """Like :meth:`wait_for_messages`, awaitable: the event loop runs while it waits."""
        __tracebackhide__ = True
        search = self._search(_at_least(count), timeout, awaited=True)
        while (wait := search.next_poll()) is not None:
            batch = await self.client.messages_async(self.address, after=search.cursor, wait=wait)
            search.feed(batch)
        if search.result is not None:
            return search.result
        raise _timeout(self.address, f"fewer than {count} messages", timeout, search.received)

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


def _at_least(count: int) -> Callable[[list[Message], int], list[Message] | None]:
    def check(received: list[Message], new: int) -> list[Message] | None:
        return list(received) if len(received) >= count else None

    return check


def _timeout(address: str, what: str, timeout: float, received: list[Message]) -> WaitTimeout:
    lines = [f"{what} arrived at {address} within {timeout:g} s;"]
    if not received:
        lines.append("the inbox received no mail at all.")
    else:
        lines.append(f"the inbox received {len(received)} message(s):")
        lines += [f"  - {describe(message)}" for message in received]
    return WaitTimeout("\n".join(lines))


def describe(message: Message) -> str:
    """One line about a message: when it arrived, who sent it, and its subject."""
    sender = str(message.sender) if message.sender else message.envelope.mail_from or "<>"
    received = message.received_at.strftime("%H:%M:%S.%f")[:-3]
    return f"{received} from {sender}: {message.subject!r}"
