"""The clock every runtime wait reads: a deadline shared by several steps, and the one
poll loop, driven by a manual clock (nothing here sleeps)."""
from __future__ import annotations

from yarnflow.core.clock import Deadline, ManualClock, poll_until


def test_a_deadline_counts_down_by_its_clock_and_never_below_zero():
    clock = ManualClock()
    deadline = Deadline(clock, 10)
    clock.advance(4)
    assert deadline.left() == 6 and not deadline.passed()
    clock.advance(7)
    assert deadline.left() == 0 and deadline.passed()


def test_poll_until_returns_the_first_answer_asking_at_the_interval():
    clock = ManualClock()
    answers = iter([None, None, "ready"])
    asked_at: list[float] = []

    def condition() -> str | None:
        asked_at.append(clock.monotonic())
        return next(answers)
    assert poll_until(condition, 10, 0.5, clock) == "ready"
    assert asked_at == [1000.0, 1000.5, 1001.0]


def test_poll_until_gives_none_once_the_timeout_passed_without_overshooting_it():
    clock = ManualClock()
    asked: list[float] = []
    assert poll_until(lambda: asked.append(clock.monotonic()), 1.2, 0.5, clock) is None
    assert asked == [1000.0, 1000.5, 1001.0, 1001.2]


def test_poll_until_with_a_max_interval_doubles_the_interval_up_to_it():
    """JobHandle.wait's backoff: a job that ends soon is seen soon, a long one asked rarely."""
    clock = ManualClock()
    asked: list[float] = []
    assert poll_until(lambda: asked.append(round(clock.monotonic() - 1000, 3)), 1.0, 0.01,
                      clock, max_interval=0.25) is None
    assert asked == [0.0, 0.01, 0.03, 0.07, 0.15, 0.31, 0.56, 0.81, 1.0]
