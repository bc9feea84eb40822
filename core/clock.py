"""Time, as a component sees it (Flink's ``Clock``): every timeout, heartbeat check and
idle check reads one of these, so a unit test can drive time instead of waiting on
the wall clock.

``monotonic()`` measures intervals (timeouts, idleness); ``time()`` stamps events a
person reads (a subtask's state timestamps). ``ManualClock`` moves only when told.
"""
from __future__ import annotations

import time as _time
from typing import Protocol


class Clock(Protocol):
    def monotonic(self) -> float: ...
    def time(self) -> float: ...


class SystemClock:
    # the C functions themselves: a state change of every subtask reads the clock
    monotonic = staticmethod(_time.monotonic)
    time = staticmethod(_time.time)


SYSTEM_CLOCK = SystemClock()


class ManualClock:
    """A clock for tests: it starts at ``start`` (monotonic) and ``wall`` (epoch) and
    advances only by ``advance``; both readings move together."""

    def __init__(self, start: float = 1000.0, wall: float = 1_700_000_000.0) -> None:
        self._monotonic = start
        self._offset = wall - start

    def monotonic(self) -> float:
        return self._monotonic

    def time(self) -> float:
        return self._monotonic + self._offset

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError(f"a clock does not go back ({seconds} s)")
        self._monotonic += seconds
