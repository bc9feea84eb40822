"""Aligned checkpoint barriers over a task's input channels (Flink's
``SingleCheckpointBarrierHandler`` in its aligned mode).

A task snapshots its operators for checkpoint *n* only when every input channel has
delivered *n*'s barrier: the records before the barriers are in the snapshot, none
after. So after a channel's barrier arrives, the task stops reading that channel
(its later records belong after the snapshot) and reads the others until their
barriers come. A channel that has ended counts as aligned (FLIP-147). A newer
barrier arriving while an older alignment is unfinished means the older checkpoint
cannot complete here any more: it is declined and the newer one aligned instead.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Union

from yarnflow.core.streaming.events import CheckpointBarrier


@dataclass(frozen=True)
class Aligned:
    """Every channel has the barrier: snapshot now."""
    barrier: CheckpointBarrier
    alignment_ms: float
    start_delay_ms: float         # from the trigger until the first barrier arrived


@dataclass(frozen=True)
class Abandoned:
    """An alignment that cannot complete: decline ``checkpoint_id``."""
    checkpoint_id: int
    reason: str


Decision = Union[Aligned, Abandoned]


class BarrierAligner:
    def __init__(self, channels: int, now_ms: Callable[[], float]) -> None:
        if channels < 1:
            raise ValueError("a task aligns barriers over at least one channel")
        self._channels = channels
        self._now_ms = now_ms
        self._ended: set[int] = set()
        self._blocked: set[int] = set()
        self._current: CheckpointBarrier | None = None     # the one being aligned
        self._started_ms = 0.0
        self._latest_seen = 0        # highest checkpoint id seen (aligned or abandoned)

    def is_blocked(self, channel: int) -> bool:
        return channel in self._blocked

    @property
    def aligning(self) -> int | None:
        return self._current.checkpoint_id if self._current else None

    def on_barrier(self, channel: int, barrier: CheckpointBarrier) -> list[Decision]:
        decisions: list[Decision] = []
        if barrier.checkpoint_id < self._latest_seen or \
                (barrier.checkpoint_id == self._latest_seen and self._current is None):
            return decisions          # a checkpoint already aligned or given up
        if self._current is not None and barrier.checkpoint_id > self._current.checkpoint_id:
            decisions.append(Abandoned(self._current.checkpoint_id,
                                       f"barrier {barrier.checkpoint_id} arrived before "
                                       f"{self._current.checkpoint_id} was aligned"))
            self._reset()
        if self._current is None:
            self._current = barrier
            self._started_ms = self._now_ms()
            self._latest_seen = barrier.checkpoint_id
        self._blocked.add(channel)
        decisions.extend(self._maybe_aligned())
        return decisions

    def on_end_of_input(self, channel: int) -> list[Decision]:
        self._ended.add(channel)
        self._blocked.discard(channel)
        return self._maybe_aligned()

    def on_cancel(self, checkpoint_id: int) -> list[Decision]:
        """The coordinator aborted ``checkpoint_id`` (or a newer one came by another
        path): stop waiting for it."""
        self._latest_seen = max(self._latest_seen, checkpoint_id)
        if self._current is not None and self._current.checkpoint_id <= checkpoint_id:
            aborted = self._current.checkpoint_id
            self._reset()
            return [Abandoned(aborted, f"checkpoint {aborted} was aborted")]
        return []

    def _maybe_aligned(self) -> list[Decision]:
        if self._current is None:
            return []
        open_channels = self._channels - len(self._ended)
        if len(self._blocked) < open_channels:
            return []
        barrier, started = self._current, self._started_ms
        self._reset()
        now = self._now_ms()
        return [Aligned(barrier, now - started, max(0.0, started - barrier.timestamp_ms))]

    def _reset(self) -> None:
        self._current = None
        self._blocked.clear()
