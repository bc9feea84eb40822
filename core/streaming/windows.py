"""Windows over event time (Flink's window assigners and its rules for when a window
fires and when a record is too late for it).

A window is the half-open interval ``[start, end)`` in milliseconds; its last instant
is ``end - 1``. It fires once the watermark reaches that instant, and keeps its state
``allowed_lateness`` longer, firing again for each late record that still reaches it;
a record whose every window is past that is late and is dropped (counted, or sent to
a side output). Assignment is vectorised: a batch's rows get their windows in one
numpy pass.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Union

import numpy as np


@dataclass(frozen=True)
class TumblingWindows:
    size_ms: int
    offset_ms: int = 0

    def __post_init__(self) -> None:
        if self.size_ms <= 0 or not 0 <= self.offset_ms < self.size_ms:
            raise ValueError("a tumbling window needs size > 0 and 0 <= offset < size")


@dataclass(frozen=True)
class SlidingWindows:
    size_ms: int
    slide_ms: int
    offset_ms: int = 0

    def __post_init__(self) -> None:
        if self.size_ms <= 0 or self.slide_ms <= 0 or not 0 <= self.offset_ms < self.slide_ms:
            raise ValueError("a sliding window needs size > 0, slide > 0 and "
                             "0 <= offset < slide")


@dataclass(frozen=True)
class SessionWindows:
    """Records of one key closer than ``gap_ms`` to each other share a window."""
    gap_ms: int

    def __post_init__(self) -> None:
        if self.gap_ms <= 0:
            raise ValueError("a session window needs a gap > 0")


WindowAssigner = Union[TumblingWindows, SlidingWindows, SessionWindows]


def window_start(timestamps: np.ndarray, size_ms: int, offset_ms: int = 0) -> np.ndarray:
    """The start of the window of length ``size_ms`` each timestamp falls in (Flink's
    ``TimeWindow.getWindowStartWithOffset``; numpy's remainder is never negative, so
    times before the epoch fall in the right window too)."""
    starts: np.ndarray = timestamps - np.remainder(timestamps - offset_ms, size_ms)
    return starts


def assign(assigner: WindowAssigner, timestamps: np.ndarray) -> tuple[np.ndarray, np.ndarray,
                                                                       np.ndarray]:
    """Each (row, window) pair: the row indexes, and each window's start and end. A
    tumbling or session window gives one per row; a sliding one ``ceil(size/slide)``."""
    timestamps = np.asarray(timestamps, dtype=np.int64)
    rows = np.arange(len(timestamps), dtype=np.int64)
    if isinstance(assigner, TumblingWindows):
        starts = window_start(timestamps, assigner.size_ms, assigner.offset_ms)
        return rows, starts, starts + assigner.size_ms
    if isinstance(assigner, SessionWindows):
        return rows, timestamps, timestamps + assigner.gap_ms
    last = window_start(timestamps, assigner.slide_ms, assigner.offset_ms)
    per_row = -(-assigner.size_ms // assigner.slide_ms)
    steps = np.arange(per_row, dtype=np.int64) * assigner.slide_ms
    starts = (last[:, None] - steps[None, :]).reshape(-1)
    all_rows = np.repeat(rows, per_row)
    keep = starts + assigner.size_ms > np.repeat(timestamps, per_row)
    return all_rows[keep], starts[keep], starts[keep] + assigner.size_ms


def fires(end_ms: np.ndarray | int, watermark: int) -> np.ndarray | bool:
    """A window is complete once the watermark reaches its last instant."""
    return end_ms - 1 <= watermark


def expired(end_ms: np.ndarray | int, allowed_lateness_ms: int,
            watermark: int) -> np.ndarray | bool:
    """A window whose state is gone: a record for it is late (Flink's ``isWindowLate``)."""
    return end_ms - 1 + allowed_lateness_ms <= watermark


def merge_sessions(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray,
                                                                  np.ndarray]:
    """Overlapping (or touching) intervals of one key merged: the merged windows' starts
    and ends, and for each input interval the index of the window it joined."""
    if not len(starts):
        empty = np.empty(0, dtype=np.int64)
        return empty, empty, empty
    order = np.argsort(starts, kind="stable")
    s, e = starts[order], ends[order]
    running_end = np.maximum.accumulate(e)
    new = np.empty(len(s), dtype=bool)
    new[0] = True
    new[1:] = s[1:] > running_end[:-1]
    group = np.cumsum(new) - 1
    merged_starts = s[new]
    merged_ends = np.maximum.reduceat(e, np.flatnonzero(new))
    member = np.empty(len(s), dtype=np.int64)
    member[order] = group
    return merged_starts, merged_ends, member
