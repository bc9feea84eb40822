"""A global sort: sampled range boundaries, a range exchange, a sort per range (issue 56).

As Spark's ``RangePartitioner`` and Flink's range partitioning plan it, a sort of a
DataSet runs in four operators:

1. ``RangeSampleOperator``, chained to the producer: a reservoir sample of its rows'
   sort keys, each sampled row weighted by the bytes it stands for;
2. ``RangeBoundariesOperator``, one subtask: ``RANGE_BUCKETS - 1`` boundaries that cut the
   weighted samples into buckets of about equal bytes;
3. ``RangePartitionOperator``, beside the producer: reads the boundaries, then the
   producer's rows (written whole first: a BLOCKING input), and gives each row its
   place in the order as a fraction in [0, 1) (``RANGE_COLUMN``), which the RANGE
   exchange turns into a subpartition however many there are (the sort's parallelism
   may be decided at run time);
4. ``SortOperator``: each subtask sorts its range (an external merge sort past its
   memory). Range i holds keys no later than range i + 1's, so the sort's subtasks,
   read in order, are the global order.

A value held by many rows (a skewed sort column) equals several consecutive
boundaries: its rows may go to any bucket from the first to the last of those, and
are dealt over them at random, so no one range gets all of them.
"""
from __future__ import annotations

from typing import Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from yarnflow.core.estimates import Estimate
from yarnflow.core.jobgraph import RANGE_COLUMN
from yarnflow.core.operators.base import (BatchProcessor, OneInputOperator, Operator, concat,
                                          require_columns)
from yarnflow.core.operators.context import OperatorContext
from yarnflow.core.memory import Held, run_batch_bytes
from yarnflow.core.operators.spill import SpilledRun, merge_sorted

# Sampled rows per producer (Spark samples 20 per output partition, 3x over); the
# boundaries cut the samples into this many buckets, far more than any sort has
# subtasks, so the exchange can make ranges of any count from them.
SAMPLE_ROWS = 2048
RANGE_BUCKETS = 1024
FAN_IN = 32         # sorted runs an external sort merges at once
KEY_TEXT = 60       # characters of a range's first or last key in the job's details
_WEIGHT = "__yarnflow_weight"        # the bytes a sampled row stands for, never emitted
_BOUNDARY = "__yarnflow_boundary"    # marks the boundary rows among a batch's


def _columns(keys: Sequence[tuple[str, str]]) -> list[str]:
    return [column for column, _ in keys]


class _SortKeyed(OneInputOperator):
    def __init__(self, keys: list[tuple[str, str]]) -> None:
        if not keys:
            raise ValueError("sort needs the columns to order by: sort('amount')")
        self.keys = keys

    def schema(self, inputs: list[pa.Schema | None]) -> pa.Schema | None:
        if inputs[0] is not None:
            require_columns(inputs[0], _columns(self.keys))
        return inputs[0]


class RangeSampleOperator(_SortKeyed):
    """A uniform sample of at most ``SAMPLE_ROWS`` of its input's rows (reservoir
    sampling, seeded by the subtask so a rerun draws the same), their sort keys only,
    each with the bytes it stands for: the input's rows over the sample's, times its
    batch's bytes per row."""

    def schema(self, inputs: list[pa.Schema | None]) -> pa.Schema | None:
        if inputs[0] is None:
            return None
        require_columns(inputs[0], _columns(self.keys))
        return pa.schema([*(inputs[0].field(c) for c in _columns(self.keys)),
                          pa.field(_WEIGHT, pa.float64())])

    def estimate(self, inputs: list[Estimate]) -> Estimate:
        return Estimate(SAMPLE_ROWS, SAMPLE_ROWS * 64, "a sample of its input")

    def open(self, ctx: OperatorContext) -> BatchProcessor:
        return _Sample(ctx, _columns(self.keys))


class _Sample(BatchProcessor):
    def __init__(self, ctx: OperatorContext, columns: list[str]) -> None:
        self._ctx = ctx
        self._columns = columns
        self._random = np.random.default_rng(ctx.subtask_index)
        self._kept: pa.Table | None = None     # the reservoir, with each row's bytes
        self._seen = 0

    def process(self, batch: pa.RecordBatch) -> None:
        if batch.num_rows == 0:
            return
        rows = batch.num_rows
        table = pa.Table.from_batches([batch]).select(self._columns)
        table = table.append_column(_WEIGHT, pa.array(np.full(rows, batch.nbytes / rows)))
        kept = 0 if self._kept is None else self._kept.num_rows
        # row t (0-based over the whole input) fills the reservoir while it has room,
        # then replaces a random slot with probability SAMPLE_ROWS / (t + 1)
        t = np.arange(self._seen, self._seen + rows)
        slots = np.where(t < SAMPLE_ROWS, t, self._random.integers(0, t + 1))
        taken = np.flatnonzero(slots < SAMPLE_ROWS)
        self._seen += rows
        if not len(taken):
            return
        source = np.arange(kept)             # which row of (reservoir, batch) each slot holds
        grown = max(kept, int(slots[taken].max()) + 1)
        source = np.concatenate([source, np.zeros(grown - kept, dtype=np.int64)])
        source[slots[taken]] = kept + taken  # a later row in the same slot wins
        both = table if self._kept is None else pa.concat_tables([self._kept, table])
        self._kept = both.take(pa.array(source))

    def finish(self) -> None:
        if self._kept is None or self._kept.num_rows == 0:
            return
        scale = self._seen / self._kept.num_rows
        weights = pc.multiply(self._kept.column(_WEIGHT), scale)
        self._ctx.emit(self._kept.set_column(self._kept.schema.get_field_index(_WEIGHT),
                                             _WEIGHT, weights))


class RangeBoundariesOperator(Operator):
    """Every producer's sample in one subtask: sorted, and cut where the bytes the rows
    stand for reach each ``1/RANGE_BUCKETS`` of their sum, so each bucket holds about as
    many bytes. Emits at most ``RANGE_BUCKETS - 1`` boundary rows of the sort keys (repeats
    kept: a value that spans buckets is how a skewed value is seen)."""

    def __init__(self, keys: list[tuple[str, str]]) -> None:
        self.keys = keys

    def schema(self, inputs: list[pa.Schema | None]) -> pa.Schema | None:
        if inputs[0] is None:
            return None
        return pa.schema([inputs[0].field(c) for c in _columns(self.keys)])

    def estimate(self, inputs: list[Estimate]) -> Estimate:
        return Estimate(RANGE_BUCKETS - 1, (RANGE_BUCKETS - 1) * 64, "the range boundaries")

    def run(self, ctx: OperatorContext) -> None:
        samples = concat(ctx.input(0))
        if samples is None or samples.num_rows == 0:
            return
        ctx.emit(boundaries(samples, self.keys))


def boundaries(samples: pa.Table, keys: list[tuple[str, str]]) -> pa.Table:
    """The boundary rows of weighted ``samples`` (sort keys and ``_WEIGHT``)."""
    ordered = samples.sort_by(keys)
    cumulative = np.cumsum(ordered.column(_WEIGHT).to_numpy(zero_copy_only=False))
    total = float(cumulative[-1]) if len(cumulative) else 0.0
    cuts = min(RANGE_BUCKETS - 1, ordered.num_rows)
    if total <= 0 or cuts == 0:
        return ordered.select(_columns(keys)).slice(0, 0)
    targets = total * np.arange(1, cuts + 1) / (cuts + 1)
    at = np.minimum(np.searchsorted(cumulative, targets, side="left"), ordered.num_rows - 1)
    return ordered.select(_columns(keys)).take(pa.array(at))


class RangePartitionOperator(Operator):
    """Input 1: the boundaries (broadcast), read first; input 0: the rows to sort, each
    emitted with its place in the order (``RANGE_COLUMN``)."""
    num_inputs = 2

    def __init__(self, keys: list[tuple[str, str]]) -> None:
        self.keys = keys

    def schema(self, inputs: list[pa.Schema | None]) -> pa.Schema | None:
        if inputs[0] is None:
            return None
        require_columns(inputs[0], _columns(self.keys))
        return inputs[0].append(pa.field(RANGE_COLUMN, pa.float64()))

    def deferred_input(self) -> int | None:
        return 0

    def estimate(self, inputs: list[Estimate]) -> Estimate:
        return super().estimate(inputs[:1])

    def run(self, ctx: OperatorContext) -> None:
        cuts = concat(ctx.input(1))
        buckets = 1 if cuts is None else cuts.num_rows + 1
        # seeded by the subtask: a rerun deals its rows as the first run did
        spread = np.random.default_rng(ctx.subtask_index)
        for batch in ctx.input(0):
            if batch.num_rows == 0:
                continue
            lo, hi = bucket_span(batch, cuts, self.keys)
            bucket = lo + (spread.random(batch.num_rows) * (hi - lo + 1)).astype(np.int64)
            ctx.emit(batch.append_column(RANGE_COLUMN, pa.array((bucket + 0.5) / buckets)))


def bucket_span(batch: pa.RecordBatch, cuts: pa.Table | None,
                keys: list[tuple[str, str]]) -> tuple[np.ndarray, np.ndarray]:
    """For each row, the first and last bucket it may go to: the boundaries that sort
    before it, and those that sort before it or equal it. Found by sorting the rows
    with the boundaries (pyarrow's sort is stable: boundaries put first sort before the
    rows equal to them, put last after them)."""
    rows = batch.num_rows
    if cuts is None or cuts.num_rows == 0:
        zero = np.zeros(rows, dtype=np.int64)
        return zero, zero
    columns = _columns(keys)
    data = pa.Table.from_batches([batch]).select(columns)
    data = data.append_column(_BOUNDARY, pa.array(np.zeros(rows, dtype=np.int8)))
    marked = cuts.select(columns).cast(data.select(columns).schema)
    marked = marked.append_column(_BOUNDARY, pa.array(np.ones(cuts.num_rows, dtype=np.int8)))

    def before(first: pa.Table, second: pa.Table, offset: int) -> np.ndarray:
        both = pa.concat_tables([first, second])
        order = pc.sort_indices(both, sort_keys=keys).to_numpy()
        flags = both.column(_BOUNDARY).to_numpy()[order]
        counts = np.cumsum(flags)
        is_row = flags == 0
        out = np.empty(rows, dtype=np.int64)
        out[order[is_row] - offset] = counts[is_row]
        return out
    lo = before(data, marked, 0)                 # equal boundaries after the row
    hi = before(marked, data, cuts.num_rows)     # equal boundaries before it
    return lo, hi


def key_text(table: pa.Table, keys: list[tuple[str, str]], row: int) -> str:
    """A row's sort key as the job's details show it: the value, or a tuple of them."""
    values = [table.column(c)[row].as_py() for c in _columns(keys)]
    text = str(values[0]) if len(values) == 1 else "(" + ", ".join(map(str, values)) + ")"
    return text if len(text) <= KEY_TEXT else text[:KEY_TEXT - 1] + "…"


class SortOperator(_SortKeyed):
    """Its whole input in the order of ``keys`` (pyarrow sort keys); nulls last."""

    def schema(self, inputs: list[pa.Schema | None]) -> pa.Schema | None:
        """Its input's, less the place in the order that the RANGE exchange read off."""
        schema = super().schema(inputs)
        if schema is not None and RANGE_COLUMN in schema.names:
            schema = schema.remove(schema.get_field_index(RANGE_COLUMN))
        return schema

    def open(self, ctx: OperatorContext) -> BatchProcessor:
        return _Sort(ctx, self.keys)


def _in_order(table: pa.Table, order: pa.Array, rows: int) -> Iterator[pa.Table]:
    for start in range(0, len(order), rows):
        yield table.take(order.slice(start, rows))


class _Sort(BatchProcessor):
    """Its input held and sorted; past the operator's memory, an external merge sort:
    each time the held rows pass what it can copy (sorting copies them) they are sorted and
    spilled as a run, and the runs are merged at the end, ``FAN_IN`` at a time."""

    def __init__(self, ctx: OperatorContext, keys: list[tuple[str, str]]) -> None:
        self._ctx = ctx
        self._keys = keys
        self._memory = ctx.memory()
        self._held: Held[pa.RecordBatch] = Held(self._memory)
        self._runs: list[SpilledRun] = []
        self._first: str | None = None
        self._last = ""

    def process(self, batch: pa.RecordBatch) -> None:
        if not batch.num_rows:
            return
        self._held.add(batch)
        if self._held.too_big_to_copy():        # sorting copies what it holds: a run
            self._spill_held()

    def _spill_held(self) -> None:
        table, order = self._sorted_held()
        rows = self._run_batch_rows(table)
        run = SpilledRun(self._memory, "sort-run", table.schema)
        for piece in _in_order(table, order, rows):
            run.write(piece, rows)
        run.close()
        self._runs.append(run)

    def _sorted_held(self) -> tuple[pa.Table, pa.Array]:
        """The held rows as one table (the batches let go) and their order. Taken whole,
        a table of many chunks is concatenated first and then copied again (three times
        its bytes at the peak); taken in pieces from its chunks, ten to twenty times
        slower; concatenated first, then taken in pieces: twice."""
        table = pa.Table.from_batches(self._held.take()).combine_chunks()
        return table, pc.sort_indices(table, sort_keys=self._keys)

    def _run_batch_rows(self, table: pa.Table) -> int:
        """Rows per batch of a run: a merge holds a batch of each of ``FAN_IN`` runs, and
        copies them once (``core/memory.py``'s ``READ_SHARE``)."""
        row_bytes: int = max(1, int(table.nbytes) // max(1, int(table.num_rows)))
        fits: int = run_batch_bytes(self._memory, FAN_IN) // row_bytes
        return max(1024, min(int(self._ctx.batch_rows), fits))

    def finish(self) -> None:
        if not self._runs:
            if self._held:
                table, order = self._sorted_held()
                for piece in _in_order(table, order, max(1, self._ctx.batch_rows)):
                    self._emit(piece)
            self._report()
            return
        while len(self._runs) + 1 > FAN_IN:         # merge passes, FAN_IN runs into one
            first, self._runs = self._runs[:FAN_IN], self._runs[FAN_IN:]
            merged: SpilledRun | None = None
            for piece in merge_sorted([run.read() for run in first], self._keys):
                if merged is None:
                    merged = SpilledRun(self._memory, "sort-run", piece.schema)
                merged.write(piece, self._run_batch_rows(piece))
            for run in first:
                run.delete()
            if merged is not None:
                merged.close()
                self._runs.append(merged)
        if self._held:           # the last run: on disk too, the merge holds a batch of it
            self._spill_held()
        for piece in merge_sorted([run.read() for run in self._runs], self._keys):
            self._emit(piece)
        self._report()

    def _emit(self, table: pa.Table) -> None:
        if self._first is None:
            self._first = key_text(table, self._keys, 0)
        self._last = key_text(table, self._keys, -1)
        step = max(1, self._ctx.batch_rows)
        for start in range(0, table.num_rows, step):
            self._ctx.emit(table.slice(start, step))

    def _report(self) -> None:
        if self._first is not None:
            self._ctx.key_range(self._first, self._last)

    def close(self) -> None:
        self._held.take()
        for run in self._runs:
            run.delete()
        self._runs = []
        self._memory.release()
