"""The waits of an inbox, each written once as a flow of calls, and their failure texts.

:func:`wait` long-polls until the mail a check looks for is in (or time is up);
:func:`wait_for` and :func:`assert_none` build on it the failures that
``wait_for_message``, ``wait_for_messages`` and ``assert_no_message`` raise.
Each is a flow (see :mod:`.calls`): the inbox drives it blocking for
``wait_for_message()`` and awaited for ``wait_for_message_async()``, so the two
cannot drift. The calls a flow makes are handed in, so the flows know neither
the inbox nor the client.
"""

from __future__ import annotations

import time
import unicodedata
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from ..errors import MailAssertionError, WaitTimeout
from ..limits import MAX_WAIT
from ..models import Message
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

    from .calls import Call, Flow

__all__ = [
    "Filter",
    "assert_none",
    "at_least",
    "counted",
    "describe",
    "failure",
    "plural",
    "seconds",
    "wait",
    "wait_for",
]

Result = TypeVar("Result")
Check = Callable[[list[Message], int], "Result | None"]
Poll = Callable[["str | None", float], "Call[list[Message]]"]
"""The call of one long-poll: given the cursor (the last id seen) and how long to wait."""


# Plain classes, not dataclasses: creating a dataclass costs about 1 ms of import.
class Filter:
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
        """Whether ``message`` passes every filter."""
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
        """The check of ``wait_for_message``: the first passing one of the ``new`` last received."""
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


def wait(poll: Poll, check: Check[Result], timeout: float) -> Flow[Result | None]:
    """Long-poll until ``check`` finds its result in what arrived, or ``timeout`` is up.

    Each poll returns only messages newer than the last one seen, as soon as one
    arrives; the wait ends with a last non-waiting poll when time is up, and
    polls once more whenever a poll brought mail.
    """
    __tracebackhide__ = True
    deadline = time.monotonic() + timeout
    received: list[Message] = []
    cursor: str | None = None
    done = False
    while not done:
        remaining = max(0.0, deadline - time.monotonic())
        done = remaining <= 0
        batch: list[Message] = yield poll(cursor, min(remaining, MAX_WAIT))
        if batch:
            received += batch
            cursor = batch[-1].id
            result = check(received, len(batch))
            if result is not None:
                return result
            done = False  # there may be more: poll once more, even when time is up
    return None


def wait_for(
    poll: Poll,
    check: Check[Result],
    timeout: float,
    failure: Callable[[list[Message]], str],
    listing: Callable[[], Call[list[Message]]],
    notes: Callable[[], Flow[list[str]]],
) -> Flow[Result]:
    """:func:`wait`, or the :class:`WaitTimeout` that says what arrived instead and why.

    ``failure`` makes the message's lines from the inbox's mail (``listing``);
    ``notes`` adds what the package can tell of where the mail went. Both are
    made only when the wait has failed.
    """
    __tracebackhide__ = True
    found = yield from wait(poll, check, timeout)
    if found is not None:
        return found
    received = yield listing()
    raise WaitTimeout("\n".join([failure(received), *(yield from notes())]))


def assert_none(address: str, wanted: Filter, poll: Poll, within: float) -> Flow[None]:
    """Wait ``within`` seconds for a message passing ``wanted``; fail as soon as one is there."""
    __tracebackhide__ = True
    started = _now()
    found = yield from wait(poll, wanted.first, within)
    if found is not None:
        raise _unexpected(address, wanted, within, found, started)


def at_least(count: int, wanted: Filter) -> Check[list[Message]]:
    """The check of ``wait_for_messages``: ``count`` messages, or more, pass ``wanted``."""

    def check(received: list[Message], new: int) -> list[Message] | None:
        passing = [message for message in received if wanted(message)]
        return passing if len(passing) >= count else None

    return check


def plural(wanted: Filter) -> str:
    """``str(wanted)`` in the plural: ``messages with subject ...``."""
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


def counted(value: object) -> int:
    """``value`` as the count of ``wait_for_messages``: an int, 1 or more."""
    __tracebackhide__ = True
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"count must be an int, not {type(value).__name__} {value!r}")
    if value < 1:
        raise ValueError(f"count must be 1 or more, not {value!r}")
    return value


def _now() -> datetime:
    from datetime import datetime, timezone

    return datetime.now(timezone.utc)


def failure(
    address: str,
    what: str,
    timeout: float,
    received: list[Message],
    wanted: Filter,
    count: int | None = None,
) -> str:
    """What a wait that ran out says: what it waited for, and each message the inbox has."""
    lines = [f"{what} arrived at {address} within {timeout:g} s;"]
    if not received:
        lines.append("the inbox received no mail at all.")
        return "\n".join(lines)
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
    return "\n".join(lines)


def _unexpected(
    address: str, wanted: Filter, within: float, message: Message, started: datetime
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
