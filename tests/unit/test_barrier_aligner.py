"""Aligned barriers over several channels, against what Flink's aligned handler does."""
from __future__ import annotations

from yarnflow.core.clock import ManualClock
from yarnflow.core.streaming.events import CheckpointBarrier
from yarnflow.taskexecutor.streaming.barrier_aligner import Abandoned, Aligned, BarrierAligner


def aligner(channels: int) -> tuple[BarrierAligner, ManualClock]:
    clock = ManualClock(start=0.0, wall=0.0)
    return BarrierAligner(channels, lambda: clock.monotonic() * 1000), clock


def barrier(n: int) -> CheckpointBarrier:
    return CheckpointBarrier(n, 0)


def test_a_channel_is_held_after_its_barrier_until_every_channel_has_it() -> None:
    handler, clock = aligner(3)
    clock.advance(1.0)
    assert handler.on_barrier(1, barrier(1)) == []
    assert handler.is_blocked(1) and not handler.is_blocked(0)
    clock.advance(0.25)
    assert handler.on_barrier(0, barrier(1)) == []
    clock.advance(0.25)
    decisions = handler.on_barrier(2, barrier(1))
    assert decisions == [Aligned(barrier(1), alignment_ms=500.0, start_delay_ms=1000.0)]
    assert not any(handler.is_blocked(c) for c in range(3))


def test_one_channel_aligns_at_once() -> None:
    handler, _ = aligner(1)
    assert isinstance(handler.on_barrier(0, barrier(4))[0], Aligned)


def test_an_ended_channel_counts_as_aligned() -> None:
    handler, _ = aligner(2)
    handler.on_barrier(0, barrier(1))
    decisions = handler.on_end_of_input(1)
    assert [type(d) for d in decisions] == [Aligned]
    assert isinstance(handler.on_barrier(0, barrier(2))[0], Aligned)   # 1 stays ended


def test_a_newer_barrier_abandons_the_older_alignment() -> None:
    handler, _ = aligner(2)
    handler.on_barrier(0, barrier(1))
    decisions = handler.on_barrier(1, barrier(2))
    assert decisions == [Abandoned(1, "barrier 2 arrived before 1 was aligned")]
    assert handler.aligning == 2 and handler.is_blocked(1) and not handler.is_blocked(0)
    assert handler.on_barrier(0, barrier(1)) == []         # the old one, late: ignored
    assert isinstance(handler.on_barrier(0, barrier(2))[0], Aligned)


def test_a_cancelled_checkpoint_unblocks_and_later_barriers_of_it_are_ignored() -> None:
    handler, _ = aligner(2)
    handler.on_barrier(0, barrier(3))
    assert handler.on_cancel(3) == [Abandoned(3, "checkpoint 3 was aborted")]
    assert not handler.is_blocked(0)
    assert handler.on_barrier(1, barrier(3)) == []
    assert handler.aligning is None
