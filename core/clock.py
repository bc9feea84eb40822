"""Time, as a component sees it (Flink's ``Clock``): every timeout, heartbeat check and
idle check reads one of these, so a unit test can drive time instead of waiting on
the wall clock.

``monotonic()`` measures intervals (timeouts, idleness); ``time()`` stamps events a
person reads (a subtask's state timestamps); ``sleep()`` pauses a retry loop.
``ManualClock`` moves only when told. Runtime code reads time nowhere else.
"""
from __future__ import annotations

import time as _time
from typing import Callable, Protocol, TypeVar

T = TypeVar("T")


class Clock(Protocol):
    def monotonic(self) -> float: ...
    def time(self) -> float: ...
    def sleep(self, seconds: float) -> None: ...


class SystemClock:
    # the C functions themselves: a state change of every subtask reads the clock
    monotonic = staticmethod(_time.monotonic)
    time = staticmethod(_time.time)
    sleep = staticmethod(_time.sleep)


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

    def sleep(self, seconds: float) -> None:
        """A pause passes at once: it only moves the clock."""
        self.advance(seconds)

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError(f"a clock does not go back ({seconds} s)")
        self._monotonic += seconds


class Deadline:
    """A moment ``timeout`` seconds from now by ``clock``: what is left of one wait
    that several steps share (wait for each job, then for their archives)."""

    def __init__(self, clock: Clock, timeout: float) -> None:
        self._clock = clock
        self.timeout = timeout
        self.at = clock.monotonic() + timeout

    def left(self) -> float:
        return max(0.0, self.at - self._clock.monotonic())

    def passed(self) -> bool:
        return self._clock.monotonic() >= self.at


def poll_until(condition: Callable[[], T | None], timeout: float | None, interval: float,
               clock: Clock = SYSTEM_CLOCK, max_interval: float | None = None) -> T | None:
    """The first answer of ``condition()`` that is not None, asked every ``interval``
    seconds; None once ``timeout`` has passed (never, for None). The one poll loop:
    each caller says in its own words what it waited for. With ``max_interval``, the
    interval doubles after each answer up to it (Flink's ExponentialWaitStrategy for a
    job's result): what ends soon is seen soon, what runs long is asked rarely."""
    deadline = None if timeout is None else Deadline(clock, timeout)
    while True:
        answer = condition()
        if answer is not None:
            return answer
        if deadline is not None and deadline.passed():
            return None
        clock.sleep(interval if deadline is None else min(interval, deadline.left()))
        if max_interval is not None:
            interval = min(interval * 2, max_interval)
