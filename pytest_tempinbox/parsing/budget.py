"""The one clock of a parse: its time budget, its deadlines, and the defects noted on the way.

:class:`ParseRun` is made by :func:`pytest_tempinbox.parsing.message.parse_message`
(and the attachment lookups) from a budget in seconds and a clock, by default
:func:`time.monotonic`. Every place the parser looks at the time reads that
clock: the reading of the structure, the headers and encoded words, and, through
:func:`late`, the searches for links and codes, which take the run's
``deadline`` and ``clock``. A test passes a clock of its own to make time pass
as it likes. Standard library only and no I/O.
"""

from __future__ import annotations

import time
from collections.abc import Callable

__all__ = ["CLOCK_EVERY", "Clock", "ParseRun", "late"]

#: A source of time in seconds that only goes forward, as :func:`time.monotonic`.
Clock = Callable[[], float]

# Reading the structure may take this share of the budget, so that the headers,
# the bodies and their links get the rest: they matter more than the ten
# thousandth part. A real 10 MB message takes about a quarter of the budget.
_FEED_SHARE = 0.5
_MAX_DEFECTS = 20

#: Matches handled between two looks at the clock: a look costs about as much as
#: a match, and a few hundred matches take well under a millisecond.
CLOCK_EVERY = 256


def late(count: int, deadline: float | None, clock: Clock = time.monotonic) -> bool:
    """Tell whether ``deadline`` has passed; ``clock`` is read every :data:`CLOCK_EVERY` counts."""
    return deadline is not None and not count % CLOCK_EVERY and clock() > deadline


class ParseRun:
    """One parse's clock, and the defects noted on the way."""

    def __init__(self, budget: float, clock: Clock = time.monotonic) -> None:
        self.budget = budget if budget > 0 else 0.0  # also NaN
        self.clock = clock
        started = clock()
        self.deadline = started + self.budget
        self.feed_deadline = started + self.budget * _FEED_SHARE
        self.notes: list[str] = []
        self.cuts: list[str] = []  # what the budget left undone
        self.feed_cut = False

    def expired(self) -> bool:
        """Whether the whole budget is spent."""
        return self.clock() > self.deadline

    def note(self, text: str) -> None:
        """Note a defect of the message."""
        self.notes.append(text)

    def cut(self, text: str) -> None:
        """Note a part of the work that the budget left undone."""
        self.cuts.append(text)

    def defects(self) -> tuple[str, ...]:
        """The defects to report: the budget's cuts first, at most 20 lines."""
        found = list(dict.fromkeys(self.notes))
        if self.cuts:
            cuts = "; ".join(dict.fromkeys(self.cuts))
            found.insert(0, f"parse budget of {self.budget:g} s exceeded: {cuts}")
        if len(found) > _MAX_DEFECTS:
            found[_MAX_DEFECTS - 1 :] = [f"{len(found) - _MAX_DEFECTS + 1} more defects not listed"]
        return tuple(found)
