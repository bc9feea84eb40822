"""The keyed window aggregate against pyarrow's group_by: incremental partial results,
firing on the watermark, lateness, and a restore that takes its key groups from any
subtask's snapshot."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tests.unit.fakes import TestingStreamContext
from yarnflow.core.fs import FileSystemSettings
from yarnflow.core.fs.opening import open_filesystem
from yarnflow.core.streaming.key_groups import key_groups_of, operator_index_of
from yarnflow.core.streaming.operators import OperatorRestore
from yarnflow.core.streaming.window_aggregate import WindowAggregateOperator
from yarnflow.core.streaming.windows import SessionWindows, SlidingWindows, TumblingWindows

RNG = np.random.default_rng(11)


def events(n: int, start: int = 0) -> pa.Table:
    return pa.table({"k": pa.array(RNG.integers(0, 13, n)).cast(pa.string()),
                     "t": pa.array(start + np.sort(RNG.integers(0, 60_000, n)), pa.int64()),
                     "v": pa.array(RNG.integers(0, 100, n), pa.int64())})


def oracle(table: pa.Table, size: int) -> list[tuple]:
    start = pc.multiply(pc.divide(table["t"], size), size)
    grouped = table.append_column("w", start).group_by(["k", "w"]).aggregate(
        [("v", "count"), ("v", "sum")])
    return sorted(zip(grouped["k"].to_pylist(), grouped["w"].to_pylist(),
                      grouped["v_count"].to_pylist(), grouped["v_sum"].to_pylist()))


def fired(ctx: TestingStreamContext) -> list[tuple]:
    if not ctx.out:
        return []
    t = ctx.table()
    return sorted(zip(t["k"].to_pylist(), t["window_start"].to_pylist(),
                      t["v_count"].to_pylist(), t["v_sum"].to_pylist()))


def window(size: int = 10_000, lateness: int = 0) -> WindowAggregateOperator:
    return WindowAggregateOperator(["k"], TumblingWindows(size), [("v", "count"), ("v", "sum")],
                                   "t", lateness, uid="w")


def test_windows_fire_when_the_watermark_passes_their_end(tmp_path: Path) -> None:
    table = events(5_000)
    op, ctx = window(), TestingStreamContext(tmp_path)
    op.setup(ctx, None)
    for batch in table.to_batches(max_chunksize=333):
        op.process(batch)
    op.on_watermark(29_999)                      # windows [0,10s) [10,20s) [20,30s)
    early = table.filter(pc.less(table["t"], 30_000))
    assert fired(ctx) == oracle(early, 10_000)
    assert ctx.table()["window_end"].to_pylist()[0] - ctx.table()["window_start"].to_pylist()[0] \
        == 10_000
    op.on_watermark(1 << 62)
    assert fired(ctx) == oracle(table, 10_000)   # every window once


def test_sliding_windows_match_the_oracle_over_each_slide(tmp_path: Path) -> None:
    table = events(2_000)
    op = WindowAggregateOperator(["k"], SlidingWindows(20_000, 10_000), [("v", "count")], "t")
    ctx = TestingStreamContext(tmp_path)
    op.setup(ctx, None)
    op.process(table.to_batches()[0])
    op.on_watermark(1 << 62)
    counts = sum(ctx.table()["v_count"].to_pylist())
    assert counts == 2 * table.num_rows           # each record in two windows


def test_late_records_are_dropped_and_counted_and_lateness_refires(tmp_path: Path) -> None:
    op, ctx = window(lateness=5_000), TestingStreamContext(tmp_path)
    op.setup(ctx, None)
    op.process(pa.record_batch({"k": ["a", "a"], "t": [1_000, 2_000], "v": [1, 2]}))
    op.on_watermark(12_000)                      # [0,10s) fires: count 2
    op.process(pa.record_batch({"k": ["a"], "t": [3_000], "v": [4]}))   # late, within 5 s
    op.on_watermark(13_000)                      # fires again, updated
    op.on_watermark(20_000)                      # its state is gone past 15 s
    op.process(pa.record_batch({"k": ["a"], "t": [4_000], "v": [8]}))   # too late
    op.on_watermark(30_000)
    assert [row[2:] for row in fired(ctx)] == [(2, 3), (3, 7)]
    assert ctx.counters == {"late-records-dropped": 1}


def test_a_restore_takes_its_key_groups_from_every_snapshot(tmp_path: Path) -> None:
    """Two subtasks snapshot; one subtask restored at parallelism 1 takes both halves
    (the next issue's rescaling), and the restored windows fire as if never stopped."""
    table = events(4_000)
    fs = open_filesystem(f"file://{tmp_path}", FileSystemSettings())
    files = []
    groups = key_groups_of(table.to_batches()[0], ["k"], 128)
    for index in (0, 1):
        op, ctx = window(), TestingStreamContext(tmp_path, index, 2)
        op.setup(ctx, None)
        owner = operator_index_of(groups, 128, 2)      # as a keyed exchange routes them
        op.process(table.filter(pa.array(owner == index)).to_batches()[0])
        result = op.snapshot(1)
        assert result.write is not None
        names, size = result.write()
        assert size > 0
        files += [f"file://{tmp_path}/{n}" for n in names]
    whole, ctx = window(), TestingStreamContext(tmp_path, 0, 1)
    whole.setup(ctx, OperatorRestore(b'{"watermark": -1}', tuple(files), fs))
    whole.on_watermark(1 << 62)
    assert fired(ctx) == oracle(table, 10_000)
    half, ctx = window(), TestingStreamContext(tmp_path, 1, 2)       # and at parallelism 2
    half.setup(ctx, OperatorRestore(b'{"watermark": -1}', tuple(files), fs))
    half.on_watermark(1 << 62)
    owned = operator_index_of(groups, 128, 2) == 1
    assert fired(ctx) == oracle(table.filter(pa.array(owned)), 10_000)


def session_oracle(table: pa.Table, gap: int) -> list[tuple]:
    """Each key's sessions, one record at a time in time order: a record no further
    than ``gap`` from the session's last record extends it (windows that touch merge,
    as Flink's ``TimeWindow.intersects`` says)."""
    out = []
    rows = sorted(zip(table["k"].to_pylist(), table["t"].to_pylist(), table["v"].to_pylist()))
    current: list | None = None
    for key, t, v in rows:
        if current and current[0] == key and t <= current[2]:
            current[2] = max(current[2], t + gap)
            current[3] += 1
            current[4] += v
            continue
        if current:
            out.append(tuple(current))
        current = [key, t, t + gap, 1, v]
    if current:
        out.append(tuple(current))
    return sorted(out)


def fired_sessions(ctx: TestingStreamContext) -> list[tuple]:
    t = ctx.table()
    return sorted(zip(t["k"].to_pylist(), t["window_start"].to_pylist(),
                      t["window_end"].to_pylist(), t["v_count"].to_pylist(),
                      t["v_sum"].to_pylist()))


def sessions(gap: int, lateness: int = 0) -> WindowAggregateOperator:
    return WindowAggregateOperator(["k"], SessionWindows(gap), [("v", "count"), ("v", "sum")],
                                   "t", lateness, uid="s")


def test_session_windows_merge_out_of_order_records_across_batches(tmp_path: Path) -> None:
    """Records of 13 keys, shuffled within each batch (out of order), a gap of 700 ms:
    the sessions fired equal those a record-at-a-time oracle builds, whatever order the
    batches bring the records in and however often state was merged between them."""
    table = events(3_000)
    shuffled = table.take(pa.array(RNG.permutation(table.num_rows)))
    op, ctx = sessions(700), TestingStreamContext(tmp_path)
    op.setup(ctx, None)
    for i, batch in enumerate(shuffled.to_batches(max_chunksize=211)):
        op.process(batch)
        if i % 3 == 0:
            op._merge()                  # merges between batches, as a snapshot does
    op.on_watermark(10**9)
    assert fired_sessions(ctx) == session_oracle(table, 700)


def test_a_session_fires_when_the_watermark_passes_its_end_and_not_before(
        tmp_path: Path) -> None:
    table = pa.table({"k": ["a", "a", "b", "a"], "t": [0, 400, 100, 5_000],
                      "v": [1, 2, 3, 4]})
    op, ctx = sessions(1_000), TestingStreamContext(tmp_path)
    op.setup(ctx, None)
    op.process(table.to_batches()[0])
    op.on_watermark(1_098)            # a's first session ends at 1400, b's at 1100
    assert ctx.out == []
    op.on_watermark(1_099)
    assert fired_sessions(ctx) == [("b", 100, 1_100, 1, 3)]
    op.on_watermark(1_399)
    assert fired_sessions(ctx) == [("a", 0, 1_400, 2, 3), ("b", 100, 1_100, 1, 3)]


def test_a_late_record_within_the_allowed_lateness_fires_its_session_again_merged(
        tmp_path: Path) -> None:
    op, ctx = sessions(1_000, lateness=5_000), TestingStreamContext(tmp_path)
    op.setup(ctx, None)
    op.process(pa.table({"k": ["a"], "t": [0], "v": [1]}).to_batches()[0])
    op.on_watermark(2_000)                         # [0, 1000) fired
    op.process(pa.table({"k": ["a"], "t": [900], "v": [5]}).to_batches()[0])
    op.on_watermark(2_001)                         # merged into [0, 1900), fired again
    assert fired_sessions(ctx) == [("a", 0, 1_000, 1, 1), ("a", 0, 1_900, 2, 6)]
    op.on_watermark(20_000)
    op.process(pa.table({"k": ["a"], "t": [950], "v": [7]}).to_batches()[0])
    assert ctx.counters.get("late-records-dropped") == 1


def test_session_state_restores_from_a_snapshot(tmp_path: Path) -> None:
    table = events(2_000)
    first, second = table.slice(0, 1_000), table.slice(1_000)
    op, ctx = sessions(500), TestingStreamContext(tmp_path)
    op.setup(ctx, None)
    op.process(first.combine_chunks().to_batches()[0])
    result = op.snapshot(1)
    assert result.write is not None
    names, _ = result.write()
    restored = OperatorRestore(result.inline, tuple(f"file://{tmp_path}/{n}" for n in names),
                               open_filesystem(f"file://{tmp_path}", FileSystemSettings()))
    again, ctx2 = sessions(500), TestingStreamContext(tmp_path)
    again.setup(ctx2, restored)
    again.process(second.combine_chunks().to_batches()[0])
    again.on_watermark(10**9)
    assert fired_sessions(ctx2) == session_oracle(table, 500)
