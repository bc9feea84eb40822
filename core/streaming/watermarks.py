"""Event time: the watermarks a source makes per split, and the one a task takes from
several inputs (Flink's ``WatermarkStrategy.forBoundedOutOfOrderness`` with idleness, and
``StatusWatermarkValve``).

A source subtask reads several splits (Kafka partitions, files) at uneven paces, so
it keeps a watermark per split and emits their minimum: a fast partition must not
declare the records of a slow one late. A split that has had no record for
``idleness`` stops holding the minimum back until it has records again; when every
split is idle, the subtask says so downstream instead of inventing progress.
Timestamps are milliseconds since the epoch.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from yarnflow.core.streaming.events import MAX_WATERMARK, MIN_WATERMARK


@dataclass(frozen=True)
class WatermarkStrategy:
    """``assign_watermarks(column, max_out_of_orderness, idleness)``: the column that
    holds each record's event time, how late a record may come and still be on time,
    and how long a silent split holds the watermark back (0: for ever)."""
    column: str
    max_out_of_orderness_ms: int
    idleness_ms: int = 0

    def __post_init__(self) -> None:
        if self.max_out_of_orderness_ms < 0 or self.idleness_ms < 0:
            raise ValueError("max_out_of_orderness and idleness cannot be negative")


def event_times_ms(column: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """A column's event times as int64 milliseconds: a timestamp of any unit (naive ones
    read as UTC), a date, or an integer already in milliseconds. Nulls are refused: a
    record without a time has no window."""
    if column.null_count:
        raise ValueError("an event-time column has nulls: every record needs its time")
    kind = column.type
    if pa.types.is_timestamp(kind):
        column = pc.cast(column, pa.timestamp("ms", tz=kind.tz))
        values: np.ndarray = column.cast(pa.int64()).to_numpy(zero_copy_only=False)
        return values
    if pa.types.is_date(kind):
        ms = pc.cast(pc.cast(column, pa.timestamp("ms")), pa.int64())
        out: np.ndarray = ms.to_numpy(zero_copy_only=False)
        return out
    if pa.types.is_integer(kind):
        ints: np.ndarray = column.cast(pa.int64()).to_numpy(zero_copy_only=False)
        return ints
    raise ValueError(f"an event-time column must be a timestamp, a date or integer "
                     f"milliseconds, not {kind}")


@dataclass
class _Split:
    max_timestamp: int = MIN_WATERMARK
    last_active_ms: float = 0.0
    idle: bool = False


@dataclass
class SplitWatermarks:
    """A source subtask's watermark over its splits. ``now_ms`` is processing time (a
    clock's, so a test drives idleness)."""
    strategy: WatermarkStrategy
    now_ms: Callable[[], float]
    _splits: dict[str, _Split] = field(default_factory=dict)
    _emitted: int = MIN_WATERMARK
    _idle: bool = False
    _last_active_ms: float | None = None      # of any split: a subtask with none goes idle

    def add_split(self, split: str) -> None:
        self._splits.setdefault(split, _Split(last_active_ms=self.now_ms()))
        self._last_active_ms = self.now_ms()

    def remove_split(self, split: str) -> None:
        """A bounded split read to its end holds nothing back any more."""
        if self._splits.pop(split, None) is not None:
            self._last_active_ms = self.now_ms()

    def on_records(self, split: str, timestamps: np.ndarray) -> None:
        state = self._splits.setdefault(split, _Split())
        state.last_active_ms = self._last_active_ms = self.now_ms()
        state.idle = False
        if len(timestamps):
            state.max_timestamp = max(state.max_timestamp, int(timestamps.max()))

    def _split_watermark(self, state: _Split) -> int:
        if state.max_timestamp == MIN_WATERMARK:
            return MIN_WATERMARK
        return state.max_timestamp - self.strategy.max_out_of_orderness_ms - 1

    def current(self) -> tuple[int | None, bool | None]:
        """What to emit now: a watermark that advanced (else None), and the subtask's
        idleness when it changed (else None). Called after each batch and on a timer."""
        now = self.now_ms()
        idleness = self.strategy.idleness_ms
        active = []
        for state in self._splits.values():
            if idleness and now - state.last_active_ms >= idleness:
                state.idle = True
            if not state.idle:
                active.append(self._split_watermark(state))
        if self._last_active_ms is None:
            self._last_active_ms = now
        # every split idle, or none left to read (all finished) for ``idleness``
        all_idle = not active and (bool(self._splits) or (
            bool(idleness) and now - self._last_active_ms >= idleness))
        status = None
        if all_idle != self._idle:
            self._idle = all_idle
            status = all_idle
        if not self._splits:
            return None, status
        if not active:
            return None, status
        candidate = min(active)
        if candidate > self._emitted:
            self._emitted = candidate
            return candidate, status
        return None, status

    @property
    def emitted(self) -> int:
        return self._emitted

    def restore(self, emitted: int) -> None:
        """After a restore, never emit below what the checkpoint had emitted."""
        self._emitted = emitted


@dataclass
class _Channel:
    watermark: int = MIN_WATERMARK
    idle: bool = False
    aligned: bool = True      # counts towards the minimum


class WatermarkValve:
    """A task's watermark from its input channels (Flink's ``StatusWatermarkValve``):
    the minimum over the active ones, emitted only when it advances. An idle channel
    does not count; one that comes back counts again once its watermark has caught up
    with what was emitted, so the output never goes back. A channel read to its end
    counts as ``MAX_WATERMARK``."""

    def __init__(self, channels: int) -> None:
        self._channels = [_Channel() for _ in range(channels)]
        self._emitted = MIN_WATERMARK
        self._idle = False

    @property
    def emitted(self) -> int:
        return self._emitted

    def input_watermark(self, channel: int, timestamp: int) -> int | None:
        state = self._channels[channel]
        if state.idle or timestamp <= state.watermark:
            return None
        state.watermark = timestamp
        if not state.aligned and timestamp >= self._emitted:
            state.aligned = True
        return self._advance()

    def input_status(self, channel: int, idle: bool) -> tuple[int | None, bool | None]:
        """A channel went idle or active: the watermark that advanced (an idle channel
        may have been the minimum), and the task's own idleness when it changed."""
        state = self._channels[channel]
        if state.idle == idle:
            return None, None
        state.idle = idle
        if idle:
            state.aligned = False
        elif state.watermark >= self._emitted:
            state.aligned = True
        advanced = self._advance() if idle else None
        all_idle = all(c.idle for c in self._channels)
        status = None
        if all_idle != self._idle:
            self._idle = all_idle
            status = all_idle
        return advanced, status

    def input_ended(self, channel: int) -> int | None:
        state = self._channels[channel]
        state.idle = False
        state.aligned = True
        state.watermark = MAX_WATERMARK
        return self._advance()

    def _advance(self) -> int | None:
        counted = [c.watermark for c in self._channels if c.aligned and not c.idle]
        if not counted:
            return None
        low = min(counted)
        if low > self._emitted:
            self._emitted = low
            return low
        return None
