"""The keyed process function (Flink's ``KeyedProcessFunction``): per-key value, list
and map state, event- and processing-time timers, and a restore that takes its keys'
state and timers from any subtask's snapshot."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from tests.unit.fakes import TestingStreamContext
from yarnflow.core.fs import FileSystemSettings
from yarnflow.core.fs.opening import open_filesystem
from yarnflow.core.operators.base import PlanError
from yarnflow.core.streaming.key_groups import key_groups_of, operator_index_of
from yarnflow.core.streaming.keyed_process import (Collector, KeyedProcessFunction,
                                                   KeyedProcessOperator, ProcessContext)
from yarnflow.core.streaming.operators import OperatorRestore

OUT = pa.schema([("user", pa.string()), ("first_ts", pa.int64()), ("seen", pa.int64()),
                 ("fired_at", pa.int64())])


class FirstThenTimeout(KeyedProcessFunction):
    """Emits a user's first record's time once no record came for 1 s after it (an
    event-time timer, moved on by every record), with how many it saw."""

    def open(self, ctx: ProcessContext) -> None:
        self.first = ctx.value_state("first")
        self.count = ctx.value_state("count")
        self.timer = ctx.value_state("timer")
        self.amounts = ctx.list_state("amounts")
        self.by_amount = ctx.map_state("by_amount")

    def process_element(self, row: dict[str, Any], ctx: ProcessContext, out: Collector) -> None:
        if self.first.value() is None:
            self.first.update(ctx.timestamp)
        self.count.update((self.count.value() or 0) + 1)
        self.amounts.add(row["amount"])
        self.by_amount.put(row["amount"], self.by_amount.get(row["amount"], 0) + 1)
        if self.timer.value() is not None:
            ctx.delete_event_time_timer(self.timer.value())
        assert ctx.timestamp is not None
        self.timer.update(ctx.timestamp + 1_000)
        ctx.register_event_time_timer(ctx.timestamp + 1_000)

    def on_timer(self, timestamp: int, ctx: ProcessContext, out: Collector) -> None:
        assert ctx.time_domain == ProcessContext.EVENT_TIME
        assert len(self.amounts.get()) == self.count.value()
        assert sum(n for _, n in self.by_amount.items()) == self.count.value()
        out.collect({"user": ctx.current_key[0], "first_ts": self.first.value(),
                     "seen": self.count.value(), "fired_at": timestamp})
        for state in (self.first, self.count, self.timer, self.amounts, self.by_amount):
            state.clear()


def batch(rows: list[tuple[str, int, int]]) -> pa.RecordBatch:
    users, ts, amounts = zip(*rows)
    return pa.record_batch([pa.array(users), pa.array(ts, pa.int64()), pa.array(amounts)],
                           names=["user", "ts", "amount"])


def operator() -> KeyedProcessOperator:
    return KeyedProcessOperator(["user"], FirstThenTimeout(), OUT, "ts", uid="p")


def emitted(ctx: TestingStreamContext) -> list[tuple]:
    return sorted(tuple(r.values()) for r in ctx.table().to_pylist()) if ctx.out else []


def test_state_is_per_key_and_event_timers_fire_when_the_watermark_passes_them(
        tmp_path: Path) -> None:
    op, ctx = operator(), TestingStreamContext(tmp_path)
    op.setup(ctx, None)
    op.process(batch([("a", 100, 1), ("b", 150, 2), ("a", 900, 1), ("a", 1_500, 3)]))
    op.on_watermark(1_149)                    # b's timer (1150) not yet
    assert ctx.out == []
    op.on_watermark(1_150)
    assert emitted(ctx) == [("b", 150, 1, 1_150)]
    op.on_watermark(2_499)
    assert emitted(ctx) == [("b", 150, 1, 1_150)]    # a's timer moved on to 2500
    op.on_watermark(2_500)
    assert emitted(ctx) == [("a", 100, 3, 2_500), ("b", 150, 1, 1_150)]
    op.process(batch([("a", 3_000, 5)]))     # a's state was cleared: a new first
    op.on_watermark(4_000)
    assert emitted(ctx)[1] == ("a", 3_000, 1, 4_000)


class Heartbeat(KeyedProcessFunction):
    def process_element(self, row: dict[str, Any], ctx: ProcessContext, out: Collector) -> None:
        ctx.register_processing_time_timer(ctx.current_processing_time() + 500)

    def on_timer(self, timestamp: int, ctx: ProcessContext, out: Collector) -> None:
        assert ctx.time_domain == ProcessContext.PROCESSING_TIME
        out.collect({"user": ctx.current_key[0], "first_ts": 0, "seen": 0,
                     "fired_at": timestamp})


def test_processing_time_timers_fire_on_the_clock_once_each(tmp_path: Path) -> None:
    op = KeyedProcessOperator(["user"], Heartbeat(), OUT, None, uid="h")
    ctx = TestingStreamContext(tmp_path)
    op.setup(ctx, None)
    ctx.now = 1_000.0
    op.process(batch([("a", 0, 0), ("a", 0, 0), ("b", 0, 0)]))   # a's two timers are one
    op.on_processing_time(1_499)
    assert ctx.out == []
    op.on_processing_time(1_500)
    op.on_processing_time(9_999)
    assert emitted(ctx) == [("a", 0, 0, 1_500), ("b", 0, 0, 1_500)]


def test_state_and_timers_restore_into_the_subtask_that_owns_their_key_groups(
        tmp_path: Path) -> None:
    """Two subtasks snapshot (keys routed as the keyed exchange routes them); restored
    at parallelism 1 the one subtask fires every key's timer with its state, and at
    parallelism 2 each fires only its own keys'."""
    rows = [(f"user-{i % 9}", 100 + i, i) for i in range(60)]
    whole = batch(rows)
    groups = key_groups_of(whole, ["user"], 128)
    owner = operator_index_of(groups, 128, 2)
    files = []
    for index in (0, 1):
        op, ctx = operator(), TestingStreamContext(tmp_path, index, 2)
        op.setup(ctx, None)
        op.process(whole.filter(pa.array(owner == index)))
        result = op.snapshot(1)
        assert result.write is not None
        names, _ = result.write()
        files += [f"file://{tmp_path}/{n}" for n in names]
    fs = open_filesystem(f"file://{tmp_path}", FileSystemSettings())
    one, ctx = operator(), TestingStreamContext(tmp_path, 0, 1)
    one.setup(ctx, OperatorRestore(b'{"watermark": 0}', tuple(files), fs))
    one.on_watermark(10**6)
    want = {}
    for user, ts, _ in rows:
        first, seen, last = want.get(user, (ts, 0, ts))
        want[user] = (first, seen + 1, ts)
    assert emitted(ctx) == sorted((u, f, n, last + 1_000) for u, (f, n, last) in want.items())
    half, ctx = operator(), TestingStreamContext(tmp_path, 1, 2)
    half.setup(ctx, OperatorRestore(b'{"watermark": 0}', tuple(files), fs))
    half.on_watermark(10**6)
    mine = {u for u, o in zip(whole.column(0).to_pylist(), owner) if o == 1}
    assert {row[0] for row in emitted(ctx)} == mine


def test_process_refuses_what_is_not_a_keyed_process_function_in_one_line() -> None:
    with pytest.raises(PlanError, match="subclass yf.KeyedProcessFunction"):
        KeyedProcessOperator(["user"], lambda row: row, OUT, "ts")   # type: ignore[arg-type]
