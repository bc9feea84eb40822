"""Keyed windows aggregated incrementally (Flink's ``WindowOperator`` with an
``AggregateFunction``), on Arrow: each batch becomes partial results per key and
window at once (``Aggregation.partial``, as a batch aggregate's local step), merged
into the operator's state; a watermark fires every complete window and emits its
result. No row is kept, only each key and window's partial results.

State is a table of partial results with each row's key group, so a restore (and the
next issue's rescaling) takes exactly the rows of the key groups it owns from any
subtask's snapshot. With ``allowed_lateness``, a fired window keeps its state that
much longer and fires again, updated, for each late record; a record for a window
past it is dropped and counted (``late-records-dropped``).

Session windows (Flink's ``EventTimeSessionWindows``) keep each key's sessions as rows
with their end: a record opens a window ``[t, t + gap)``, and at each merge the
windows of a key that overlap or touch become one session, their partial results
merged (the sessions of every key in a few vectorised passes, not a loop per key). A
session fires when the watermark passes its end; a record that would have extended a
session already fired and still within ``allowed_lateness`` makes it fire again,
updated. A record whose own window ``[t, t + gap)`` is past the watermark and the
allowed lateness is late, even where an open session would have taken it in (Flink
merges before it judges): such a record came a whole gap behind the watermark.
"""
from __future__ import annotations

import json
from typing import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from yarnflow.core.operators.aggregate import Aggregation
from yarnflow.core.operators.base import PlanError, require_columns
from yarnflow.core.streaming.events import MIN_WATERMARK
from yarnflow.core.streaming.key_groups import key_groups_of
from yarnflow.core.streaming.operators import (OperatorRestore, SnapshotResult, StreamContext,
                                               StreamOperator, table_snapshot)
from yarnflow.core.streaming.watermarks import event_times_ms
from yarnflow.core.streaming.windows import (SessionWindows, SlidingWindows, TumblingWindows,
                                             WindowAssigner, assign, expired, fires)

START, END = "window_start", "window_end"
_START, _DIRTY, _GROUP = "__yarnflow_window", "__yarnflow_dirty", "__yarnflow_key_group"
_END = "__yarnflow_window_end"       # a session window's; the others' is start + size
MERGE_EVERY_ROWS = 200_000      # partial results held unmerged before a merge


class WindowAggregateOperator(StreamOperator):
    def __init__(self, keys: Sequence[str], assigner: WindowAssigner,
                 aggregations: Sequence[tuple[str, str]], time_column: str,
                 allowed_lateness_ms: int = 0, uid: str = "") -> None:
        self.keys = list(keys)
        self.assigner = assigner
        self.aggregations = [(str(c), str(f)) for c, f in aggregations]
        self.time_column = time_column
        self.allowed_lateness_ms = allowed_lateness_ms
        self.uid = uid
        self.sessions = isinstance(assigner, SessionWindows)
        self._window = [_START, _END] if self.sessions else [_START]
        self.aggregation = Aggregation([*self.keys, *self._window], self.aggregations)
        if not self.aggregation.decomposable:
            raise PlanError(f"a window aggregates incrementally, and {self.aggregations} has "
                            "a function that does not decompose",
                            "use sum, count, min, max, mean, any, all or product")

    @property
    def size_ms(self) -> int:
        assert isinstance(self.assigner, (TumblingWindows, SlidingWindows))
        return self.assigner.size_ms

    def schema(self, inputs: list[pa.Schema | None]) -> pa.Schema | None:
        if inputs[0] is None:
            return None
        require_columns(inputs[0], [*self.keys, self.time_column])
        given = inputs[0]
        for column in self._window:
            given = given.append(pa.field(column, pa.int64()))
        base = self.aggregation.check(given)
        time_type = self._time_type(inputs[0].field(self.time_column).type)
        fields = [base.field(k) for k in self.keys] + [pa.field(START, time_type),
                                                       pa.field(END, time_type)]
        return pa.schema(fields + [f for f in base
                                   if f.name not in (*self.keys, *self._window)])

    @staticmethod
    def _time_type(kind: pa.DataType) -> pa.DataType:
        if pa.types.is_timestamp(kind):
            return pa.timestamp("ms", tz=kind.tz)
        return pa.int64()

    # --- running --------------------------------------------------------------------
    def setup(self, ctx: StreamContext, restored: OperatorRestore | None) -> None:
        super().setup(ctx, restored)
        self._state: pa.Table | None = None
        self._pending: list[pa.Table] = []
        self._pending_rows = 0
        self._watermark = MIN_WATERMARK
        self._out_time: pa.DataType | None = None
        if restored is not None:
            if restored.inline:
                body = json.loads(restored.inline)
                self._watermark = int(body["watermark"])
            mine = [t.filter(pc.is_in(t.column(_GROUP), pa.array(list(ctx.key_groups),
                                                                  pa.int64())))
                    for t in restored.read_tables()]
            mine = [t for t in mine if t.num_rows]
            if mine:
                self._state = pa.concat_tables(mine).drop_columns([_GROUP])

    def process(self, batch: pa.RecordBatch) -> None:
        if not batch.num_rows:
            return
        if self._out_time is None:
            self._out_time = self._time_type(batch.schema.field(self.time_column).type)
        times = event_times_ms(batch.column(self.time_column))
        rows, starts, ends = assign(self.assigner, times)
        late = np.asarray(expired(ends, self.allowed_lateness_ms, self._watermark))
        if late.any():
            dropped = np.unique(rows[late])
            kept_rows = np.unique(rows[~late])
            self.ctx.count("late-records-dropped", int(len(np.setdiff1d(dropped, kept_rows))))
            rows, starts = rows[~late], starts[~late]
            if not len(rows):
                return
        table = pa.Table.from_batches([batch]).select([*self.keys, *{
            c for c, _ in self.aggregations if c not in self.keys}])
        if len(rows) != batch.num_rows or not (rows == np.arange(batch.num_rows)).all():
            table = table.take(pa.array(rows))
        table = table.append_column(_START, pa.array(starts, pa.int64()))
        if isinstance(self.assigner, SessionWindows):
            table = table.append_column(_END, pa.array(starts + self.assigner.gap_ms, pa.int64()))
        partial = self.aggregation.partial(table)
        self._pending.append(partial)
        self._pending_rows += partial.num_rows
        if self._pending_rows >= MERGE_EVERY_ROWS:
            self._merge()

    def _merge(self) -> None:
        if not self._pending:
            return
        fresh = pa.concat_tables(self._pending, promote_options="permissive")
        fresh = fresh.append_column(_DIRTY, pa.array(np.ones(fresh.num_rows, dtype=bool)))
        self._pending, self._pending_rows = [], 0
        if self._state is None or not self._state.num_rows:
            combined = fresh
        else:
            combined = pa.concat_tables([self._state, fresh], promote_options="permissive")
        if self.sessions:
            combined = self._sessions_of(combined)
        window = [*self.keys, *self._window]
        merged = self.aggregation.merge(combined.drop_columns([_DIRTY]))
        dirty = combined.group_by(window, use_threads=False).aggregate(
            [(_DIRTY, "any")]).rename_columns([*window, _DIRTY])
        self._state = merged.join(dirty, window, use_threads=False, coalesce_keys=True)

    def _sessions_of(self, table: pa.Table) -> pa.Table:
        """Each row's window widened to the session it belongs to: the windows of one
        key that overlap or touch, merged (their start the least, their end the most)."""
        order = pc.sort_indices(table, [(k, "ascending") for k in self.keys]
                                + [(_START, "ascending")])
        table = table.take(order)
        n = table.num_rows
        starts = table.column(_START).to_numpy()
        ends = table.column(_END).to_numpy()
        boundary = np.zeros(n, dtype=bool)
        boundary[0] = True
        for key in self.keys:        # where the key changes (null equals null here)
            values = table.column(key).combine_chunks()
            same = pc.fill_null(pc.equal(values[1:], values[:-1]), False).to_numpy(
                zero_copy_only=False)
            both_null = (pc.is_null(values[1:]).to_numpy(zero_copy_only=False)
                         & pc.is_null(values[:-1]).to_numpy(zero_copy_only=False))
            boundary[1:] |= ~(same | both_null)
        segment = np.cumsum(boundary) - 1
        running = _segmented_running_max(ends, segment)
        new = boundary.copy()
        new[1:] |= starts[1:] > running[:-1]
        session = np.cumsum(new) - 1
        first = np.flatnonzero(new)
        session_start = starts[first][session]
        session_end = np.maximum.reduceat(ends, first)[session]
        table = table.set_column(table.schema.get_field_index(_START), _START,
                                 pa.array(session_start, pa.int64()))
        return table.set_column(table.schema.get_field_index(_END), _END,
                                pa.array(session_end, pa.int64()))

    def _ends(self, state: pa.Table) -> np.ndarray:
        if self.sessions:
            ends: np.ndarray = state.column(_END).to_numpy()
            return ends
        sized: np.ndarray = state.column(_START).to_numpy() + self.size_ms
        return sized

    def on_watermark(self, watermark: int) -> None:
        self._merge()
        self._watermark = max(self._watermark, watermark)
        state = self._state
        if state is None or not state.num_rows:
            return
        ends = self._ends(state)
        complete = np.asarray(fires(ends, watermark))
        due = complete & state.column(_DIRTY).to_numpy(zero_copy_only=False)
        if due.any():
            fired = state.filter(pa.array(due))
            self._emit(fired)
        gone = np.asarray(expired(ends, self.allowed_lateness_ms, watermark))
        if gone.any() or due.any():
            keep = state.filter(pa.array(~gone))
            keep_due = due[~gone]
            dirty = keep.column(_DIRTY).to_numpy(zero_copy_only=False) & ~keep_due
            self._state = keep.set_column(keep.schema.get_field_index(_DIRTY), _DIRTY,
                                          pa.array(dirty))

    def _emit(self, fired: pa.Table) -> None:
        out = self.aggregation.finish(fired.drop_columns([_DIRTY]))
        starts = fired.column(_START)
        time_type = self._out_time or pa.int64()
        start_col = pc.cast(starts, time_type) if pa.types.is_timestamp(time_type) else starts
        end_values = fired.column(_END) if self.sessions else \
            pc.add(starts, pa.scalar(self.size_ms, pa.int64()))
        end_col = pc.cast(end_values, time_type) if pa.types.is_timestamp(time_type) else end_values
        out = out.drop_columns(self._window)
        position = len(self.keys)
        out = out.add_column(position, START, start_col).add_column(position + 1, END, end_col)
        self.ctx.emit(out.combine_chunks())

    def snapshot(self, checkpoint_id: int) -> SnapshotResult:
        self._merge()
        state = self._state
        inline = json.dumps({"watermark": self._watermark}).encode()
        if state is None or not state.num_rows:
            return SnapshotResult(inline=inline)
        batch = state.combine_chunks().to_batches()[0] if state.num_rows else None
        assert batch is not None
        groups = key_groups_of(batch, self.keys, self.ctx.max_parallelism)
        table = state.append_column(_GROUP, pa.array(groups, pa.int64()))
        return table_snapshot(self.ctx, self.uid, table, inline)


def _segmented_running_max(values: np.ndarray, segment: np.ndarray) -> np.ndarray:
    """The running maximum of ``values`` that starts afresh at each segment (``segment``
    ascending from 0): one accumulate over values lifted by segment, so that no
    segment's values reach the next's, where that fits in int64; else per segment."""
    if not len(values):
        return values
    low = int(values.min())
    width = int(values.max()) - low + 1
    if int(segment[-1]) * width < (1 << 62):
        lifted = (values - low) + segment * width
        running: np.ndarray = np.maximum.accumulate(lifted) - segment * width + low
        return running
    out = np.empty_like(values)
    bounds = np.flatnonzero(np.diff(segment)) + 1
    for part in np.split(np.arange(len(values)), bounds):
        out[part] = np.maximum.accumulate(values[part])
    return out
