"""The relational operators of a DataSet (issue 56): aggregate, union, distinct, limit,
top-N, sort.

distinct, limit and top each plan two steps (``yarnflow.core.operators.relational``):
a local step chained to the DataSet's operator, then the final step past an
exchange. Kept apart from ``pipeline.py`` so that each module has one job.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from yarnflow.client.dataset_settings import DataSetState
from yarnflow.client.planner.estimates import estimate_hint
from yarnflow.core.jobgraph import InvalidPipelineError, PartitionType, ShipStrategy
from yarnflow.core.operators.aggregate import AggregateOperator
from yarnflow.core.operators.phase import Phase
from yarnflow.core.operators.join import CrossJoinOperator
from yarnflow.core.operators.sort import (RangeBoundariesOperator, RangePartitionOperator,
                                          RangeSampleOperator, SortOperator)
from yarnflow.core.operators.relational import (DistinctOperator, LimitOperator, TopOperator,
                                                UnionOperator, sort_keys)

if TYPE_CHECKING:
    from yarnflow.client.pipeline import DataSet


class RelationalOperators(DataSetState):
    """Mixed into ``DataSet``."""

    def _unary(self, operator: Any, name: str, **edge: Any) -> "DataSet":
        raise NotImplementedError      # DataSet's

    def _two_steps(self, local: Any, final: Any, name: str, ship: ShipStrategy,
                   keys: Sequence[str] = (), single: bool = False) -> "DataSet":
        """``local`` chained to this operator (at its parallelism), then ``final`` past
        an exchange: what this DataSet was shaped with (rebalanced, blocking) applies to
        that exchange. ``single``: the final step is one subtask, and so is what follows."""
        step = self.pipeline._add_vertex(f"{name}-local", local, 1)
        step.parallelism = self.vertex.parallelism
        shaped = self._derived(self.vertex, self._ship, self._keys)
        self.pipeline._connect(shaped, step)
        before = self._derived(step, ship, tuple(keys), self._partition_type)
        out = before._unary(final, name)
        self.pipeline._step_of[step.id] = out.vertex.name    # its errors name the operator
        if single:
            out.vertex.parallelism, out._single = 1, True
        return out

    def union(self, *others: "DataSet", name: str = "union") -> "DataSet":
        """Every row of this DataSet and of ``others`` (SQL's ``UNION ALL``, Spark's
        ``union``): their columns must agree, names and types in order. Use
        ``distinct()`` after it for SQL's ``UNION``."""
        if not others:
            raise InvalidPipelineError(name, "union names no other DataSet",
                                       "pass the DataSets to add: a.union(b, c)")
        inputs = (self._derived(self.vertex, self._ship, self._keys, self._partition_type),
                  *others)
        vertex = self.pipeline._add_vertex(name, UnionOperator(len(inputs)), len(inputs))
        for index, side in enumerate(inputs):
            if side.pipeline is not self.pipeline:
                raise InvalidPipelineError(name, f"union input {index + 1} belongs to another "
                                           "Pipeline", "build every input in the same Pipeline")
            self.pipeline._connect(side, vertex, target_input=index)
        return self._derived(vertex)

    def distinct(self, *columns: str, name: str = "distinct") -> "DataSet":
        """Each combination of ``columns`` once (SQL's ``SELECT DISTINCT``), only those
        columns; with none named, distinct whole rows (Spark's ``distinct()``: the
        input's columns must then be known, see ``map(output_schema=...)``). Each
        producer drops its repeats before the exchange, hash-partitioned on the columns."""
        return self._two_steps(DistinctOperator(columns, Phase.LOCAL),
                               DistinctOperator(columns, Phase.FINAL),
                               name, ShipStrategy.HASH, columns)

    def limit(self, n: int, name: str = "limit") -> "DataSet":
        """At most ``n`` rows, whichever come first (Spark's ``limit``): each producer
        sends on its first ``n``, one subtask keeps ``n`` of them."""
        return self._two_steps(LimitOperator(n, Phase.LOCAL), LimitOperator(n, Phase.FINAL), name,
                               ShipStrategy.REBALANCE, single=True)

    def top(self, n: int, by: str | Sequence[str], descending: bool | Sequence[bool] = False,
            name: str = "top") -> "DataSet":
        """The first ``n`` rows in the order of ``by`` (SQL's ``ORDER BY ... LIMIT n``),
        in that order; ``descending`` is one bool or one per column (nulls come last
        either way). Each producer keeps its own top ``n``; one subtask merges them, and
        what follows runs in one subtask too, so the order reaches the output."""
        columns = [by] if isinstance(by, str) else list(by)
        try:
            keys = sort_keys(columns, descending)
            return self._two_steps(TopOperator(n, keys, Phase.LOCAL),
                                   TopOperator(n, keys, Phase.FINAL), name,
                                   ShipStrategy.REBALANCE, single=True)
        except ValueError as err:
            raise InvalidPipelineError(name, str(err), "see help(DataSet.top)") from None

    def sort(self, *columns: str, descending: bool | Sequence[bool] = False,
             name: str = "sort") -> "DataSet":
        """All rows in the order of ``columns`` (Spark's ``orderBy``, SQL's ``ORDER BY``):
        ``descending`` is one bool or one per column (nulls come last either way).
        A global order: each subtask of the sort holds one range of the keys, in
        order, so the part files a sink after it writes, read in name order, are in
        order. The ranges are cut from a sample of the input so that each holds about
        as many bytes, rows of a value that fills several ranges dealt over them
        (``yarnflow.core.operators.sort``); the input is written whole before it is
        partitioned."""
        try:
            keys = sort_keys(list(columns), descending)
            sample = RangeSampleOperator(keys)
        except ValueError as err:
            raise InvalidPipelineError(name, str(err), "see help(DataSet.sort)") from None
        pipeline, parallelism = self.pipeline, self.vertex.parallelism
        sampled = pipeline._add_vertex(f"{name}-sample", sample, 1)
        sampled.parallelism = parallelism
        pipeline._connect(self._derived(self.vertex, ShipStrategy.FORWARD), sampled)
        cuts = pipeline._add_vertex(f"{name}-boundaries", RangeBoundariesOperator(keys), 1)
        cuts.parallelism = 1
        pipeline._connect(self._derived(sampled, ShipStrategy.REBALANCE), cuts)
        ranged = pipeline._add_vertex(f"{name}-partition", RangePartitionOperator(keys), 2)
        ranged.parallelism = parallelism
        pipeline._connect(self._derived(self.vertex, ShipStrategy.FORWARD,
                                        partition_type=PartitionType.BLOCKING), ranged)
        pipeline._connect(self._derived(cuts, ShipStrategy.BROADCAST), ranged, target_input=1)
        before = self._derived(ranged, ShipStrategy.RANGE, tuple(columns), self._partition_type)
        return before._unary(SortOperator(keys), name)

    def aggregate(self, keys: Sequence[str], aggregations: Sequence[tuple[str, str]],
                  name: str = "aggregate", *, selectivity: float | None = None,
                  size: int | str | None = None) -> "DataSet":
        """Each group of ``keys`` aggregated: ``aggregations`` are (column, function)
        pairs of pyarrow's ``group_by`` (sum, count, min, max, mean, any, all, product,
        count_distinct, stddev, ...); the output is the keys, then one column per pair
        named ``<column>_<function>``. ``mean`` is a float64. Without keys, one row
        of the whole input (an empty input too, as SQL's aggregates give).

        Where every function decomposes (all but count_distinct and the statistical
        ones), each producer aggregates its own rows first and only its groups' partial
        results are hash-partitioned on ``keys`` to the final step
        (``table.optimizer.agg-phase-strategy``). ``selectivity`` (groups per input
        row) or ``size`` (output bytes) correct the planner's estimate."""
        keys = [keys] if isinstance(keys, str) else list(keys)
        hint = estimate_hint(name, selectivity, size)
        final = AggregateOperator(keys, aggregations, Phase.FINAL, hint=hint)
        if final.aggregation.decomposable:
            return self._two_steps(AggregateOperator(keys, aggregations, Phase.LOCAL), final, name,
                                   ShipStrategy.HASH if keys else ShipStrategy.REBALANCE,
                                   keys, single=not keys)
        whole = AggregateOperator(keys, aggregations, Phase.WHOLE, hint=hint)
        if keys:
            return self._unary(whole, name, ship=ShipStrategy.HASH, keys=tuple(keys))
        out = self._unary(whole, name, ship=ShipStrategy.REBALANCE)
        out.vertex.parallelism, out._single = 1, True
        return out

    def cross_join(self, other: "DataSet", name: str = "cross-join") -> "DataSet":
        """Every row of this DataSet with every row of ``other`` (Spark's
        ``crossJoin``): ``other`` is sent whole to each subtask, so it must be small;
        this side stays where it is. Columns of ``other`` this side also has get the
        suffix ``_right``."""
        if other.pipeline is not self.pipeline:
            raise InvalidPipelineError(name, "cross_join's other side belongs to another "
                                       "Pipeline", "build both sides in the same Pipeline")
        vertex = self.pipeline._add_vertex(name, CrossJoinOperator(), 2)
        vertex.parallelism = self.vertex.parallelism
        self.pipeline._connect(self._derived(self.vertex, self._ship, self._keys,
                                             self._partition_type), vertex)
        self.pipeline._connect(other, vertex, target_input=1, ship=ShipStrategy.BROADCAST)
        return self._derived(vertex)
