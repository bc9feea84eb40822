"""Test only: a slow host on purpose (``test.taskmanager.slow-hosts``), for the
speculation tests and ``bench/straggler.py``. A task on such a host stretches the time
its operator spends between batches by its factor, as a CPU that many times slower
would (a sleep in proportion to the work done, so the slowdown scales with the job)."""
from __future__ import annotations

from typing import Callable

from yarnflow.core.clock import SYSTEM_CLOCK, Clock


def slowdown_of(rules: str, host: str) -> float:
    """``rules``: ``HOST=FACTOR[,HOST=FACTOR...]``; 1.0 for a host not named."""
    for rule in filter(None, (r.strip() for r in rules.split(","))):
        name, _, factor = rule.partition("=")
        if name.strip() == host:
            return float(factor)
    return 1.0


class Stretch:
    """In the task thread: ``work_done()`` where the operator's work since ``resume()``
    ends (it asks for its next input batch, or hands one on), which waits ``(factor -
    1)`` times that long, with ``wait`` (the task's cancel event's, so a cancelled task
    stops waiting); ``resume()`` where the task stops waiting for input or for room
    downstream, which is not work and not stretched."""

    def __init__(self, factor: float, wait: Callable[[float], object],
                 clock: Clock = SYSTEM_CLOCK) -> None:
        self._extra = max(factor - 1.0, 0.0)
        self._wait = wait
        self._clock = clock
        self._last = clock.monotonic()

    def work_done(self) -> None:
        if self._extra:
            self._wait((self._clock.monotonic() - self._last) * self._extra)   # the workload

    def resume(self) -> None:
        if self._extra:
            self._last = self._clock.monotonic()
