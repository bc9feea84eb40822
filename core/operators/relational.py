"""Relational operators over whole rows: union, distinct, limit and top-N (issue 56).

Each of distinct, limit and top runs in two steps, as Spark plans them (``LocalLimit``
then ``GlobalLimit``, a partial then a final ``HashAggregate``): a local step chained
to its producer that keeps only what can still matter (the distinct rows it saw, the
first n rows, its own top n), then the final step past the exchange. So an exchange
carries a producer's few surviving rows, not its input.
"""
from __future__ import annotations

import queue
import threading
from typing import Iterator, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from yarnflow.core.estimates import Estimate
from yarnflow.core.failures import ContractError
from yarnflow.core.operators.aggregate import NOT_ADAPTIVE, Aggregation, LocalAggregation, grouping
from yarnflow.core.operators.phase import Phase
from yarnflow.core.operators.base import (BatchProcessor, OneInputOperator, Operator, PlanError,
                                          require_columns)
from yarnflow.core.operators.context import OperatorContext



def sort_keys(by: Sequence[str], descending: bool | Sequence[bool]) -> list[tuple[str, str]]:
    """pyarrow's sort keys for ``by``; ``descending`` is one bool for every column or
    one per column (Spark's ``orderBy(..., ascending=[...])`` rule)."""
    if isinstance(descending, bool):
        flags = [descending] * len(by)
    else:
        flags = list(descending)
        if len(flags) != len(by):
            raise ValueError(f"descending names {len(flags)} directions for {len(by)} columns "
                             f"{list(by)}: give one bool, or one per column")
    return [(column, "descending" if down else "ascending") for column, down in zip(by, flags)]


class UnionOperator(Operator):
    """Every row of each input, input by input. The inputs' columns must agree (names
    and types, in order): a union that would mix them is refused on the client where
    the schemas are known, and a batch that differs is refused where they were not."""

    def __init__(self, num_inputs: int) -> None:
        self.num_inputs = num_inputs

    def schema(self, inputs: list[pa.Schema | None]) -> pa.Schema | None:
        known = [(i, s) for i, s in enumerate(inputs) if s is not None]
        if not known:
            return None
        first, expected = known[0]
        for index, schema in known[1:]:
            problem = schema_difference(expected, schema)
            if problem:
                raise PlanError(f"union input {index + 1} differs from input {first + 1}: "
                                f"{problem}",
                                "select or cast the columns so that every input has the same "
                                "names and types in the same order")
        return expected if len(known) == len(inputs) else None

    def estimate(self, inputs: list[Estimate]) -> Estimate:
        if any(e.rows is None for e in inputs):
            return Estimate()
        size = None if any(e.bytes is None for e in inputs) else sum(e.bytes or 0 for e in inputs)
        return Estimate(sum(e.rows or 0 for e in inputs), size, "its inputs together")

    def run(self, ctx: OperatorContext) -> None:
        """Batches as they come from any input: reading the inputs one after another
        would leave a producer that feeds two of them (``a.filter(x).union(a.filter(y))``)
        blocked on the later one's full buffer while the earlier one waits for it."""
        expected: pa.Schema | None = None
        for index, batch in _interleaved(ctx, self.num_inputs):
            if expected is None:
                expected = batch.schema
            elif not batch.schema.equals(expected):
                raise ContractError(f"union input {index + 1} has other columns than the "
                                    f"input before it: "
                                    f"{schema_difference(expected, batch.schema)}")
            ctx.emit(batch)


_ENDED = object()


def _interleaved(ctx: OperatorContext, inputs: int) -> Iterator[tuple[int, pa.RecordBatch]]:
    """(input, batch) from every input at once, each read on a thread of its own; the
    first input that fails ends the reading with its error."""
    handed: queue.Queue[tuple[int, object]] = queue.Queue(maxsize=2 * inputs)
    stop = threading.Event()

    def read(index: int) -> None:
        item: object = _ENDED
        try:
            for batch in ctx.input(index):
                while not stop.is_set():
                    try:
                        handed.put((index, batch), timeout=0.2)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    return
        except BaseException as err:  # noqa: BLE001 - handed to the task thread
            item = err
        while not stop.is_set():
            try:
                handed.put((index, item), timeout=0.2)
                return
            except queue.Full:
                continue

    readers = [threading.Thread(target=read, args=(i,), daemon=True,
                                name=f"{ctx.vertex_name}-input-{i}") for i in range(inputs)]
    for reader in readers:
        reader.start()
    open_inputs = inputs
    try:
        while open_inputs:
            try:
                index, item = handed.get(timeout=0.2)
            except queue.Empty:
                if ctx.cancelled:
                    return
                continue
            if item is _ENDED:
                open_inputs -= 1
            elif isinstance(item, BaseException):
                raise item
            else:
                assert isinstance(item, pa.RecordBatch)
                yield index, item
    finally:
        stop.set()


def schema_difference(expected: pa.Schema, got: pa.Schema) -> str:
    """The columns where ``got`` differs from ``expected``, named; '' when none does."""
    missing = [n for n in expected.names if n not in got.names]
    extra = [n for n in got.names if n not in expected.names]
    typed = [f"{f.name} ({f.type} against {got.field(f.name).type})" for f in expected
             if f.name in got.names and not got.field(f.name).type.equals(f.type)]
    parts = [f"missing {', '.join(missing)}" if missing else "",
             f"extra {', '.join(extra)}" if extra else "",
             f"other types: {', '.join(typed)}" if typed else ""]
    if not any(parts) and expected.names != got.names:
        parts.append(f"the columns in another order ({', '.join(got.names)})")
    return "; ".join(p for p in parts if p)


class DistinctOperator(OneInputOperator):
    """The distinct rows of ``columns`` (SQL's ``SELECT DISTINCT``): only those columns,
    each combination once, a null a value like any other. A LOCAL step (before the
    exchange) stops deduplicating once it sees that its input hardly repeats
    (``settings``, Flink's adaptive local hash aggregation: the final step deduplicates
    what it passes on all the same)."""

    def __init__(self, columns: Sequence[str], phase: Phase = Phase.WHOLE,
                 settings: LocalAggregation | None = None) -> None:
        self.columns = list(columns)
        self.phase = phase
        self.settings = settings or NOT_ADAPTIVE

    def with_settings(self, settings: LocalAggregation) -> "DistinctOperator":
        """The same step adapting as ``settings`` say (the planner's, from conf/)."""
        return DistinctOperator(self.columns, self.phase, settings)

    def schema(self, inputs: list[pa.Schema | None]) -> pa.Schema | None:
        if inputs[0] is None or not self.columns:
            return inputs[0]
        require_columns(inputs[0], self.columns)
        return pa.schema([inputs[0].field(c) for c in self.columns])

    def open(self, ctx: OperatorContext) -> BatchProcessor:
        return _Distinct(ctx, self.columns, self.phase, self.settings)


class _Distinct(BatchProcessor):
    """A grouping without aggregations (``aggregate.py``): its groups are the distinct
    rows. Made with the first batch when the columns are its whole rows."""

    def __init__(self, ctx: OperatorContext, columns: list[str], phase: Phase,
                 settings: LocalAggregation) -> None:
        self._ctx = ctx
        self._phase = phase
        self._settings = settings
        self._grouping = self._grouped(columns) if columns else None

    def _grouped(self, columns: list[str]) -> BatchProcessor:
        return grouping(self._ctx, Aggregation(columns, []), self._phase, self._settings)

    def process(self, batch: pa.RecordBatch) -> None:
        if self._grouping is None:          # distinct() of whole rows
            self._grouping = self._grouped(batch.schema.names)
        self._grouping.process(batch)

    def finish(self) -> None:
        if self._grouping is not None:
            self._grouping.finish()

    def close(self) -> None:
        if self._grouping is not None:
            self._grouping.close()


class LimitOperator(OneInputOperator):
    """The first ``n`` rows it is given (which ones, without an order before it, is
    whichever arrive first: Spark's and SQL's ``LIMIT``). Its LOCAL step and its FINAL
    step do the same, on a producer's rows and on what the local steps kept."""

    def __init__(self, n: int, phase: Phase = Phase.WHOLE) -> None:
        if n < 0:
            raise ValueError(f"limit({n}): n must be 0 or more")
        self.n = n
        self.phase = phase

    def schema(self, inputs: list[pa.Schema | None]) -> pa.Schema | None:
        return inputs[0]

    def estimate(self, inputs: list[Estimate]) -> Estimate:
        carried = super().estimate(inputs)
        if carried.rows is None or carried.rows <= self.n:
            return carried
        size = None if carried.bytes is None else carried.bytes * self.n // max(carried.rows, 1)
        return Estimate(self.n, size, f"at most {self.n} rows")

    def open(self, ctx: OperatorContext) -> BatchProcessor:
        return _Limit(ctx, self.n)


class _Limit(BatchProcessor):
    def __init__(self, ctx: OperatorContext, n: int) -> None:
        self._ctx = ctx
        self._left = n

    def process(self, batch: pa.RecordBatch) -> None:
        if self._left <= 0:
            return
        taken = batch if batch.num_rows <= self._left else batch.slice(0, self._left)
        self._left -= taken.num_rows
        if taken.num_rows:
            self._ctx.emit(taken)


class TopOperator(OneInputOperator):
    """The ``n`` first rows in the order of ``keys`` (pyarrow sort keys), emitted in that
    order; nulls sort last either way, as pyarrow sorts them. Its LOCAL step keeps its
    producer's own top n, its FINAL step the top n of those."""

    def __init__(self, n: int, keys: list[tuple[str, str]], phase: Phase = Phase.WHOLE) -> None:
        if n < 0:
            raise ValueError(f"top({n}): n must be 0 or more")
        if not keys:
            raise ValueError("top needs the columns to order by: top(10, by=['amount'])")
        self.n = n
        self.keys = keys
        self.phase = phase

    def schema(self, inputs: list[pa.Schema | None]) -> pa.Schema | None:
        if inputs[0] is not None:
            require_columns(inputs[0], [column for column, _ in self.keys])
        return inputs[0]

    def estimate(self, inputs: list[Estimate]) -> Estimate:
        return LimitOperator(self.n).estimate(inputs)

    def open(self, ctx: OperatorContext) -> BatchProcessor:
        return _Top(ctx, self.n, self.keys)


class _Top(BatchProcessor):
    def __init__(self, ctx: OperatorContext, n: int, keys: list[tuple[str, str]]) -> None:
        self._ctx = ctx
        self._n = n
        self._keys = keys
        self._best: pa.Table | None = None     # at most n rows: the best so far

    def process(self, batch: pa.RecordBatch) -> None:
        if self._n == 0 or batch.num_rows == 0:
            return
        table = pa.Table.from_batches([batch])
        if self._best is not None:
            table = pa.concat_tables([self._best, table])
        self._best = _first(table, self._n, self._keys)

    def finish(self) -> None:
        if self._best is not None and self._best.num_rows:
            self._ctx.emit(self._best.sort_by(self._keys))
        self._best = None


def _first(table: pa.Table, n: int, keys: list[tuple[str, str]]) -> pa.Table:
    if table.num_rows <= n:
        return table
    return table.take(pc.select_k_unstable(table, k=n, sort_keys=keys))
