"""Grouped aggregation, in two phases where the functions allow it (issue 56).

As Spark's partial/final ``HashAggregate`` and Flink's local/global aggregate
(``table.optimizer.agg-phase-strategy``) plan it: a local step chained to each producer
turns its rows into partial results per group (a sum, a count, a min...), so that the
exchange carries a few rows per group and producer instead of every row; the final
step merges the partial results of a group, which the hash exchange brought to one
subtask. ``mean`` travels as a sum and a count and is their quotient at the end, a
float64 whatever the column's type (as SQL engines give ``AVG``). A function that does
not decompose (``count_distinct``, ``stddev``, ``first``...) makes the aggregate one
phase: every row crosses the exchange.

A local step whose groups hardly repeat (after ``sampling_rows`` rows it kept more
than ``distinct_rate`` of them as groups) stops holding its groups and passes each
batch's partial results on (Flink's ``table.exec.local-hash-agg.adaptive.*``). An
aggregate without keys has one group: its final step is one subtask, and it gives one
row even of an empty input (a count of 0, a sum of null), as SQL does.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import pyarrow as pa
import pyarrow.compute as pc

from yarnflow.core.estimates import Estimate, EstimateHint
from yarnflow.core.memory import Held, OperatorMemory
from yarnflow.core.operators.base import (BatchProcessor, OneInputOperator, PlanError,
                                          require_columns)
from yarnflow.core.operators.context import OperatorContext
from yarnflow.core.operators.phase import Phase
from yarnflow.core.operators.spill import MAX_LEVEL, SPILL_FILES_PER_LEVEL, Buckets

# How a function's partial results merge; mean is carried as a sum and a count.
MERGE = {"sum": "sum", "count": "sum", "min": "min", "max": "max", "any": "any",
         "all": "all", "product": "product"}
# A local step that holds more groups than this emits them and starts again: it never
# holds more than a bounded table (the final step merges them all the same).
FLUSH_ROWS = 1_000_000


@dataclass(frozen=True)
class LocalAggregation:
    """How local steps adapt (``table.exec.local-hash-agg.adaptive.*``); the planner
    sets it from the configuration on every local aggregate and local distinct (a step
    it did not set, one run by a test, does not adapt)."""
    adaptive: bool
    sampling_rows: int
    distinct_rate: float


NOT_ADAPTIVE = LocalAggregation(adaptive=False, sampling_rows=0, distinct_rate=1.0)


class Aggregation:
    """``aggregations`` over ``keys`` as partial results: what each phase computes."""

    def __init__(self, keys: Sequence[str], aggregations: Sequence[tuple[str, str]]) -> None:
        self.keys = list(keys)
        self.aggregations = [(str(c), str(f)) for c, f in aggregations]
        self.decomposable = all(f in MERGE or f == "mean" for _, f in self.aggregations)
        partials: dict[tuple[str, str], str] = {}
        for column, function in self.aggregations:
            for part in (("sum", "count") if function == "mean" else (function,)):
                partials.setdefault((column, part), f"__yarnflow_{len(partials)}_{part}")
        self.partials = partials         # (column, function) -> its partial result's column

    def partial(self, table: pa.Table) -> pa.Table:
        """Each group's partial results of ``table``'s rows."""
        grouped = table.group_by(self.keys, use_threads=False).aggregate(list(self.partials))
        names = [f"{c}_{f}" for c, f in self.partials]
        return grouped.select([*self.keys, *names]).rename_columns(
            [*self.keys, *self.partials.values()])

    def merge(self, table: pa.Table) -> pa.Table:
        """Each group's partial results, merged."""
        merges = [(name, MERGE[f]) for (_, f), name in self.partials.items()]
        grouped = table.group_by(self.keys, use_threads=False).aggregate(merges)
        return grouped.select([*self.keys, *(f"{n}_{m}" for n, m in merges)]).rename_columns(
            [*self.keys, *self.partials.values()])

    def finish(self, table: pa.Table) -> pa.Table:
        """The output from merged partial results: the keys, then ``<column>_<function>``
        per aggregation, in the order given."""
        columns: list[pa.ChunkedArray] = [table.column(k) for k in self.keys]
        for column, function in self.aggregations:
            if function == "mean":
                total = pc.cast(table.column(self.partials[(column, "sum")]), pa.float64())
                count = table.column(self.partials[(column, "count")])
                columns.append(pc.if_else(pc.equal(count, 0), pa.scalar(None, pa.float64()),
                                          pc.divide(total, pc.cast(count, pa.float64()))))
            elif function == "count":
                columns.append(pc.fill_null(table.column(self.partials[(column, function)]), 0))
            else:
                columns.append(table.column(self.partials[(column, function)]))
        names = [*self.keys, *(f"{c}_{f}" for c, f in self.aggregations)]
        return pa.Table.from_arrays(columns, names=names)

    def check(self, schema: pa.Schema) -> pa.Schema:
        """The output schema for an input of ``schema``: pyarrow's own answer on an empty
        table, so a function or column type it does not take is refused on the client."""
        require_columns(schema, [*self.keys, *(column for column, _ in self.aggregations)])
        try:
            return self.finish(self.partial(schema.empty_table())).schema
        except (pa.ArrowException, TypeError, ValueError) as err:
            raise PlanError(f"pyarrow cannot compute {self.aggregations} grouped by "
                            f"{self.keys}: {err}",
                            "use an aggregation pyarrow's group_by has (sum, mean, min, "
                            "max, count, count_distinct, ...) on a column of a type it "
                            "takes") from None


class AggregateOperator(OneInputOperator):
    """``aggregations``: (column, function) pairs as ``pyarrow.Table.group_by`` takes
    them, e.g. ``[("amount", "sum"), ("amount", "count")]``; outputs are named
    ``amount_sum``. ``phase``: a LOCAL step, chained to its producer, gives partial
    results per group of what its subtask read, adapting as ``settings`` say; the FINAL
    step merges them; a WHOLE aggregate takes rows and gives the result. Each key's
    rows (or partial results) reach one subtask of a FINAL or WHOLE step."""

    def __init__(self, keys: Sequence[str], aggregations: Sequence[tuple[str, str]],
                 phase: Phase = Phase.WHOLE, hint: EstimateHint | None = None,
                 settings: LocalAggregation | None = None) -> None:
        self.aggregation = Aggregation(keys, aggregations)
        self.phase = phase
        self.hint = hint
        self.settings = settings or NOT_ADAPTIVE
        # what its input's columns were planned as: an aggregate without keys gives a
        # row even when no input arrives
        self.input_schema: pa.Schema | None = None

    def with_settings(self, settings: LocalAggregation) -> "AggregateOperator":
        """The same step adapting as ``settings`` say (the planner's, from conf/)."""
        return AggregateOperator(self.keys, self.aggregations, self.phase, self.hint, settings)

    def in_phase(self, phase: Phase) -> "AggregateOperator":
        return AggregateOperator(self.keys, self.aggregations, phase, self.hint, self.settings)

    @property
    def keys(self) -> list[str]:
        return self.aggregation.keys

    @property
    def aggregations(self) -> list[tuple[str, str]]:
        return self.aggregation.aggregations

    def planned(self, inputs: list[pa.Schema | None]) -> "AggregateOperator":
        planned = AggregateOperator(self.keys, self.aggregations, self.phase, self.hint,
                                    self.settings)
        planned.input_schema = inputs[0]
        return planned

    def schema(self, inputs: list[pa.Schema | None]) -> pa.Schema | None:
        if inputs[0] is None:
            return None
        if self.phase is Phase.FINAL:
            return self.aggregation.finish(self.aggregation.merge(inputs[0].empty_table())).schema
        checked = self.aggregation.check(inputs[0])
        if self.phase is Phase.LOCAL:
            return self.aggregation.partial(inputs[0].empty_table()).schema
        return checked

    def estimate(self, inputs: list[Estimate]) -> Estimate:
        if self.phase is Phase.LOCAL:
            return super().estimate(inputs)
        if not self.keys:
            return Estimate(1, 64, "one group")
        carried = super().estimate(inputs)
        return self.hint.apply(carried) if self.hint is not None else carried

    def open(self, ctx: OperatorContext) -> BatchProcessor:
        if self.phase is Phase.LOCAL:
            return _Grouping(ctx, self.aggregation, Phase.LOCAL, settings=self.settings)
        return _Grouping(ctx, self.aggregation, self.phase, empty=self.input_schema)


def grouping(ctx: OperatorContext, aggregation: Aggregation, phase: Phase,
             settings: LocalAggregation) -> BatchProcessor:
    """A step over rows (a distinct's): LOCAL, partial results chained to their
    producer, adapting as ``settings`` say; else the final results, all its input held
    (a distinct's FINAL step reads rows too: its partial results are rows)."""
    return _Grouping(ctx, aggregation, Phase.LOCAL if phase is Phase.LOCAL else Phase.WHOLE,
                     settings=settings)


class _Grouping(BatchProcessor):
    """Partial results held per group, merged as they grow. A LOCAL step emits them at
    the end, or in pieces once they pass ``FLUSH_ROWS`` or its
    memory, or batch by batch once its groups prove not to repeat; a final step
    finishes them. A final step whose groups outgrow its memory cuts them into spill
    buckets by their keys and finishes bucket by bucket (a bucket that is still too
    big is cut again, ``level`` counting the cuts)."""

    def __init__(self, ctx: OperatorContext, aggregation: Aggregation, phase: Phase,
                 settings: LocalAggregation | None = None,
                 empty: pa.Schema | None = None, memory: OperatorMemory | None = None,
                 level: int = 0) -> None:
        self._ctx = ctx
        self._aggregation = aggregation
        self._raw = phase.reads_rows         # its input is rows, not partial results
        self._final = phase.finishes
        self._settings = settings or NOT_ADAPTIVE
        self._empty = empty
        self._memory = memory or ctx.memory()
        self._level = level
        self._held: Held[pa.Table] = Held(self._memory)
        self._merge_at = max(2 * ctx.batch_rows, 1)   # held rows that make a merge due
        self._seen = 0
        self._passing = False
        self._spilled: Buckets | None = None

    def process(self, batch: pa.RecordBatch) -> None:
        if batch.num_rows == 0:
            return
        table = pa.Table.from_batches([batch])
        if not self._aggregation.decomposable:     # one phase, a function that needs all rows
            self._held.add(table)
            if self._held.over_limit():
                self._spill()
            return
        part = self._aggregation.partial(table) if self._raw else table
        if self._passing:
            self._ctx.emit(part)
            return
        self._seen += batch.num_rows
        self._held.add(part)
        # a merge copies what is held into its hash table: due once it would not fit
        # beside it, or once enough rows came
        if self._held.rows <= self._merge_at and not self._held.too_big_to_copy():
            return
        merged = self._aggregation.merge(pa.concat_tables(self._held.take()))
        self._held.add(merged)
        # Twice what the merge left, before the next: merging all groups again for
        # each batch once they outnumber a batch made a step of millions of groups
        # quadratic (TPC-H Q18 at scale factor 10: 380 s, 5x PySpark's whole run).
        self._merge_at = max(2 * self._ctx.batch_rows, 2 * merged.num_rows, 1)
        settings = self._settings
        if self._final:
            if self._held.more_than_kept():       # it would merge again at once
                self._spill()
            return
        if settings.adaptive and self._seen >= settings.sampling_rows and \
                merged.num_rows > settings.distinct_rate * self._seen:
            self._passing = True
            self._flush()
        elif merged.num_rows > FLUSH_ROWS or self._held.more_than_kept():
            self._flush()

    def _spill(self) -> None:
        """What is held, into the spill buckets; holding starts again from nothing."""
        if self._spilled is None:
            self._spilled = Buckets(self._memory, "aggregate", self._aggregation.keys,
                                    self._level, self._ctx.batch_rows)
        for table in self._held.take():
            self._spilled.write(table)
        self._merge_at = max(2 * self._ctx.batch_rows, 1)

    def _flush(self) -> None:
        held = self._held.take()
        if held:
            self._ctx.emit(self._aggregation.merge(pa.concat_tables(held)))
        self._merge_at = max(2 * self._ctx.batch_rows, 1)

    def finish(self) -> None:
        if not self._final:
            self._flush()
            return
        if self._spilled is not None:
            self._finish_spilled(self._spilled)
            return
        aggregation = self._aggregation
        held = pa.concat_tables(self._held.take()) if self._held else None
        if held is None:
            if aggregation.keys or self._empty is None:
                return
            held = self._empty.empty_table()          # SQL: no rows make one row
            if self._raw and aggregation.decomposable:
                held = aggregation.partial(held)
        if not aggregation.decomposable:              # its rows, held whole
            self._ctx.emit(aggregation.finish(aggregation.partial(held)))
            return
        self._ctx.emit(aggregation.finish(aggregation.merge(held)))

    def _finish_spilled(self, spilled: Buckets) -> None:
        """Each bucket on its own: its groups are no other bucket's. A bucket that fits
        is finished whole; a bigger one goes through a grouping of its own, one level
        down, which holds, merges and (if it must) spills it again."""
        self._spill()
        spilled.close()
        # partial results once merged; a one-phase aggregate's buckets hold rows
        raw = not self._aggregation.decomposable
        for index in range(SPILL_FILES_PER_LEVEL):
            if spilled.size(index) > self._memory.limit and self._level + 1 < MAX_LEVEL:
                inner = _Grouping(self._ctx, self._aggregation,
                                  Phase.WHOLE if raw else Phase.FINAL,
                                  memory=self._memory, level=self._level + 1)
                for batch in spilled.bucket(index):
                    inner.process(batch)
                spilled.delete(index)
                inner.finish()
                continue
            rows = list(spilled.bucket(index))
            spilled.delete(index)
            if rows:
                held = pa.Table.from_batches(rows)
                self._ctx.emit(self._aggregation.finish(
                    self._aggregation.partial(held) if raw else self._aggregation.merge(held)))

    def close(self) -> None:
        self._held.take()
        if self._spilled is not None:
            self._spilled.delete_all()
        if self._level == 0:
            self._memory.release()
