"""Injected faults: the strict reading of a request for one, its SMTP reply, the queue; no I/O.

A test makes one address misbehave on purpose (``POST /api/faults/{email}``):
its next deliveries get an SMTP error reply, a delay or a dropped connection,
at ``RCPT TO`` or at the end of DATA. Each inbox keeps its pending faults in a
:class:`FaultQueue`, in the order they apply; the SMTP handler takes them one
delivery at a time.
"""

from __future__ import annotations

import math
import re
import threading
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from ...errors import InvalidRequest, TooManyFaults
from ...limits import MAX_FAULT_DELAY, MAX_FAULT_MESSAGE, MAX_FAULT_TIMES, MAX_FAULTS_PER_INBOX
from ...models import Fault, Stage

__all__ = ["FAULT_FIELDS", "FaultQueue", "data_answer", "read_fault", "reply_line"]

FAULT_FIELDS = ("stage", "code", "message", "delay", "disconnect", "times")
_KINDS = ("code", "delay", "disconnect")
_STAGES: tuple[Stage, ...] = ("rcpt", "data")
# RFC 3463: class.subject.detail, the class being the reply code's first digit.
_ENHANCED = re.compile(r"([245])\.[0-9]{1,3}\.[0-9]{1,3}(?: |$)")
_PRINTABLE = re.compile(r"[\x20-\x7e]+")
_DEFAULT_TEXT = {
    4: "Temporary failure, try again later (injected fault)",
    5: "Permanent failure (injected fault)",
}


def read_fault(options: Mapping[str, Any]) -> Fault:
    """Read a request's JSON object into a fault; :class:`InvalidRequest` says what is wrong.

    ``stage`` is required, and exactly one of ``code`` (with an optional
    ``message``), ``delay`` and ``disconnect``; ``times`` defaults to 1. A
    message without an RFC 3463 enhanced status code gets ``4.0.0`` or
    ``5.0.0`` in front, after the reply code's class.
    """
    unknown = sorted(set(options) - set(FAULT_FIELDS))
    if unknown:
        named = ", ".join(repr(key)[:40] for key in unknown[:5])
        raise InvalidRequest(f"unknown field(s): {named}; known: {', '.join(FAULT_FIELDS)}")
    stage = options.get("stage")
    if stage not in _STAGES:
        raise InvalidRequest('stage is required: "rcpt" or "data"')
    kinds = [kind for kind in _KINDS if kind in options]
    if len(kinds) != 1:
        raise InvalidRequest("give exactly one of code, delay and disconnect")
    if "message" in options and "code" not in options:
        raise InvalidRequest("message goes with code: it is the text of the reply")
    times = _whole(options.get("times", 1), "times", 1, MAX_FAULT_TIMES)
    if kinds == ["code"]:
        code = _reply_code(options["code"])
        message = _reply_text(code, options.get("message"))
        return Fault(stage=stage, code=code, message=message, times=times)
    if kinds == ["delay"]:
        return Fault(stage=stage, delay=_delay(options["delay"]), times=times)
    if options["disconnect"] is not True:
        raise InvalidRequest("disconnect must be true (leave it out for another kind of fault)")
    return Fault(stage=stage, disconnect=True, times=times)


def reply_line(fault: Fault) -> str:
    """The SMTP reply of a ``reply`` fault: its code, then its text."""
    return f"{fault.code} {fault.message}"


def data_answer(faults: list[Fault]) -> Fault:
    """The one fault that answers DATA when several recipients' faults strike there.

    SMTP has one answer to DATA for every recipient: the longest delay is
    waited, then a disconnect beats an error reply, and of error replies the
    first recipient's (``faults`` are in ``RCPT TO`` order) wins.
    """
    delays = [fault.delay for fault in faults if fault.delay is not None]
    longest = max(delays, default=0.0)
    final = next((fault for fault in faults if fault.disconnect), None)
    final = final or next((fault for fault in faults if fault.code is not None), None)
    if final is None:
        return next(fault for fault in faults if fault.delay == longest)
    if longest:
        # A fault of the server's making, never listed: the delay, then the final answer.
        return replace(final, delay=longest)
    return final


def _whole(value: Any, name: str, lowest: int, highest: int) -> int:
    # JSON Schema's "integer" includes 2.0; true is no number, whatever Python says.
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not lowest <= value <= highest:
        raise InvalidRequest(f"{name} must be a whole number from {lowest} to {highest}")
    return value


def _reply_code(value: Any) -> int:
    code = _whole(value, "code", 400, 599)
    if code % 100 >= 60:
        # RFC 5321 4.2: the second digit is a category from 0 to 5.
        raise InvalidRequest(
            "code must be an SMTP error reply code: 4yz or 5yz with y from 0 to 5"
            " (400-459 or 500-559)"
        )
    return code


def _reply_text(code: int, message: Any) -> str:
    if message is None:
        return f"{code // 100}.0.0 {_DEFAULT_TEXT[code // 100]}"
    if (
        not isinstance(message, str)
        or len(message) > MAX_FAULT_MESSAGE
        or not _PRINTABLE.fullmatch(message)
    ):
        raise InvalidRequest(
            f"message must be 1-{MAX_FAULT_MESSAGE} printable ASCII characters (no CR or LF)"
        )
    enhanced = _ENHANCED.match(message)
    if enhanced is None:
        return f"{code // 100}.0.0 {message}"
    if enhanced[1] != str(code // 100):
        raise InvalidRequest(
            f"the enhanced status code of message must be of class {code // 100}, as code {code}"
        )
    return message


def _delay(value: Any) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not 0 < value <= MAX_FAULT_DELAY  # also false for NaN
        or not math.isfinite(value)
    ):
        raise InvalidRequest(
            f"delay must be a number of seconds above 0, up to {MAX_FAULT_DELAY:g}"
        )
    return float(value)


class FaultQueue:
    """One inbox's pending faults, in the order they apply; safe to use from any thread."""

    __slots__ = ("_faults", "_lock")

    def __init__(self) -> None:
        self._faults: list[Fault] = []
        self._lock = threading.Lock()

    def add(self, fault: Fault) -> None:
        """Queue ``fault`` after the others; :class:`TooManyFaults` when the queue is full."""
        with self._lock:
            if len(self._faults) >= MAX_FAULTS_PER_INBOX:
                raise TooManyFaults(
                    f"the inbox already holds {MAX_FAULTS_PER_INBOX} pending faults,"
                    " the most allowed"
                )
            self._faults.append(fault)

    def pending(self) -> list[Fault]:
        """The pending faults, first to apply first, ``times`` counting what is left of each."""
        with self._lock:
            return list(self._faults)

    def clear(self) -> int:
        """Drop every pending fault; return how many there were."""
        with self._lock:
            count = len(self._faults)
            self._faults.clear()
            return count

    def take(self, stage: Stage) -> Fault | None:
        """Consume the first fault for one delivery, if it is for ``stage``; else None.

        Faults apply in order: one for another stage, first in line, keeps the
        others waiting. A fault of several ``times`` stays first, one time less.
        """
        with self._lock:
            if not self._faults or self._faults[0].stage != stage:
                return None
            first = self._faults[0]
            if first.times > 1:
                self._faults[0] = replace(first, times=first.times - 1)
            else:
                del self._faults[0]
            return replace(first, times=1)
