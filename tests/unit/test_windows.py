"""Window assignment and firing against a per-row oracle."""
from __future__ import annotations

import numpy as np
import pytest

from yarnflow.core.streaming.windows import (
    SessionWindows, SlidingWindows, TumblingWindows, assign, expired, fires, merge_sessions)

RNG = np.random.default_rng(7)
TIMES = RNG.integers(-50_000, 200_000, size=2000).astype(np.int64)


def test_tumbling_windows_hold_each_record_once() -> None:
    rows, starts, ends = assign(TumblingWindows(10_000, 3_000), TIMES)
    assert (rows == np.arange(len(TIMES))).all()
    assert ((starts <= TIMES) & (TIMES < ends)).all()
    assert ((starts - 3_000) % 10_000 == 0).all()


def test_sliding_windows_match_a_per_row_oracle() -> None:
    size, slide = 10_000, 3_000
    rows, starts, _ = assign(SlidingWindows(size, slide), TIMES)
    got = sorted(zip(rows.tolist(), starts.tolist()))
    oracle = sorted((i, s) for i, t in enumerate(TIMES.tolist())
                    for s in range(t - t % slide - 4 * slide, t + 1, slide)
                    if s <= t < s + size)
    assert got == oracle


def test_a_window_fires_at_its_last_instant_and_expires_after_the_lateness() -> None:
    assert not fires(10_000, 9_998)
    assert fires(10_000, 9_999)
    assert not expired(10_000, 2_000, 11_998)
    assert expired(10_000, 2_000, 11_999)
    assert list(fires(np.array([5, 10]), 5)) == [True, False]


def test_sessions_merge_overlapping_and_touching_intervals() -> None:
    rows, starts, ends = assign(SessionWindows(10), np.array([0, 5, 30, 15, 50, 40]))
    merged_starts, merged_ends, member = merge_sessions(starts, ends)
    assert list(zip(merged_starts, merged_ends)) == [(0, 25), (30, 60)]
    assert list(member) == [0, 0, 1, 0, 1, 1]


@pytest.mark.parametrize("bad", [lambda: TumblingWindows(0), lambda: SlidingWindows(10, 0),
                                 lambda: SessionWindows(-1), lambda: TumblingWindows(10, 10)])
def test_bad_windows_are_refused(bad) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError):
        bad()
