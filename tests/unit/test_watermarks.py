"""Watermarks per split with idleness, and the valve over a task's channels, on a
manual clock."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from yarnflow.core.clock import ManualClock
from yarnflow.core.streaming.events import MAX_WATERMARK
from yarnflow.core.streaming.watermarks import (
    SplitWatermarks, WatermarkStrategy, WatermarkValve, event_times_ms)


def ms(*values: int) -> np.ndarray:
    return np.array(values, dtype=np.int64)


def source(idleness_ms: int = 0) -> tuple[SplitWatermarks, ManualClock]:
    clock = ManualClock()
    return SplitWatermarks(WatermarkStrategy("t", 5000, idleness_ms),
                           lambda: clock.monotonic() * 1000), clock


def test_the_watermark_is_the_slowest_split_minus_the_out_of_orderness() -> None:
    marks, _ = source()
    marks.add_split("p0")
    marks.add_split("p1")
    marks.on_records("p0", ms(100_000, 90_000))
    assert marks.current() == (None, None)           # p1 has said nothing yet
    marks.on_records("p1", ms(20_000))
    assert marks.current() == (20_000 - 5000 - 1, None)
    marks.on_records("p1", ms(10_000))                # out of order: no step back
    assert marks.current() == (None, None)
    marks.on_records("p1", ms(200_000))
    assert marks.current() == (100_000 - 5001, None)  # now p0 is the slowest


def test_an_idle_split_stops_holding_the_watermark_back_until_it_has_records() -> None:
    marks, clock = source(idleness_ms=30_000)
    marks.add_split("p0")
    marks.add_split("p1")
    marks.on_records("p0", ms(50_000))
    clock.advance(29.9)
    marks.on_records("p0", ms(60_000))
    assert marks.current() == (None, None)            # p1 silent, not yet idle
    clock.advance(0.1)
    assert marks.current() == (60_000 - 5001, None)   # p1 idle: p0 alone decides
    marks.on_records("p1", ms(1_000))                 # p1 back, far behind
    assert marks.current() == (None, None)            # never goes back
    clock.advance(30.0)                               # both silent
    assert marks.current() == (None, True)
    marks.on_records("p0", ms(70_000))
    assert marks.current() == (70_000 - 5001, False)  # p1 stays idle: p0 decides


def test_the_valve_takes_the_minimum_of_active_channels() -> None:
    valve = WatermarkValve(3)
    assert valve.input_watermark(0, 10) is None
    assert valve.input_watermark(1, 20) is None
    assert valve.input_watermark(2, 5) == 5
    assert valve.input_watermark(2, 30) == 10
    assert valve.input_status(0, idle=True) == (20, None)     # 0 idle: min(20, 30)
    assert valve.input_watermark(0, 12) is None               # idle: ignored
    assert valve.input_status(0, idle=False) == (None, None)  # back, but behind 20
    assert valve.input_watermark(1, 40) == 30                 # 0 (at 12) is not counted,
    assert valve.input_watermark(0, 25) is None               # nor at 25, below 30,
    assert valve.input_watermark(2, 50) == 40
    assert valve.input_watermark(0, 45) is None               # until it catches up:
    assert valve.input_watermark(1, 60) == 45                 # then it holds the rest back
    assert valve.input_status(1, True) == (None, None)
    assert valve.input_status(2, True) == (None, None)
    assert valve.input_status(0, True) == (None, True)        # every channel idle


def test_an_ended_channel_holds_nothing_back() -> None:
    valve = WatermarkValve(2)
    valve.input_watermark(0, 100)
    assert valve.input_ended(1) == 100
    assert valve.input_ended(0) == MAX_WATERMARK


def test_event_times_from_timestamps_dates_and_integers() -> None:
    stamps = pa.array([0, 1500], pa.timestamp("s"))
    assert list(event_times_ms(stamps)) == [0, 1_500_000]
    assert list(event_times_ms(pa.array([2], pa.int32()))) == [2]
    with pytest.raises(ValueError, match="nulls"):
        event_times_ms(pa.array([1, None], pa.int64()))
    with pytest.raises(ValueError, match="not string"):
        event_times_ms(pa.array(["x"]))


def test_a_subtask_whose_splits_all_finished_goes_idle_after_the_idleness() -> None:
    marks, clock = source(idleness_ms=1_000)
    marks.add_split("file-1")
    marks.on_records("file-1", ms(50_000))
    assert marks.current() == (50_000 - 5001, None)
    marks.remove_split("file-1")               # read to its end: holds nothing back
    clock.advance(0.9)
    assert marks.current() == (None, None)
    clock.advance(0.1)
    assert marks.current() == (None, True)     # no split for 1 s: idle
    marks.add_split("file-2")
    marks.on_records("file-2", ms(60_000))
    assert marks.current() == (60_000 - 5001, False)
