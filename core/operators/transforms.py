"""Record-batch-at-a-time transforms: map, filter, flat_map, select, and the identity."""
from __future__ import annotations

from typing import Any, Callable, Sequence

import pyarrow as pa

from yarnflow.core.estimates import Estimate, EstimateHint
from yarnflow.core.failures import ContractError
from yarnflow.core.operators.base import (BatchProcessor, EachBatch, OneInputOperator,
                                          check_declared, declared_schema, require_columns,
                                          to_batches)
from yarnflow.core.operators.context import OperatorContext


class _Transform(OneInputOperator):
    """User code over each batch: the planner keeps its input's estimate unless the
    user's hint corrects it. Its output's columns are unknown unless the user declared
    them (``output_schema``); then every batch it returns must have them."""

    kind = "function"

    def __init__(self, fn: Callable[[pa.RecordBatch], Any], name: str,
                 hint: EstimateHint | None = None, output_schema: Any = None) -> None:
        self.fn = fn
        self.name = name
        self.hint = hint
        self.declared = declared_schema(output_schema, f"{self.kind} function '{name}'")

    def estimate(self, inputs: list[Estimate]) -> Estimate:
        carried = super().estimate(inputs)
        return self.hint.apply(carried) if self.hint is not None else carried

    def schema(self, inputs: list[pa.Schema | None]) -> pa.Schema | None:
        return self.declared

    def _emit(self, ctx: OperatorContext, data: Any) -> None:
        what = f"{self.kind} function '{self.name}'"
        for out in to_batches(data, what):
            check_declared(out, self.declared, what)
            ctx.emit(out)


class MapOperator(_Transform):
    kind = "map"

    def open(self, ctx: OperatorContext) -> BatchProcessor:
        return EachBatch(lambda batch: self._emit(ctx, self.fn(batch)))


class FilterOperator(_Transform):
    """``fn(batch)`` returns a boolean mask (an Arrow array or expression result)."""
    kind = "filter"

    def schema(self, inputs: list[pa.Schema | None]) -> pa.Schema | None:
        return inputs[0]

    def open(self, ctx: OperatorContext) -> BatchProcessor:
        def keep(batch: pa.RecordBatch) -> None:
            mask = self.fn(batch)
            if not isinstance(mask, (pa.Array, pa.ChunkedArray)):
                raise ContractError(f"filter function '{self.name}' must return a boolean "
                                    "Arrow array (e.g. pyarrow.compute.greater(...)), got "
                                    f"{type(mask).__name__}")
            out = batch.filter(mask)
            if out.num_rows:
                ctx.emit(out)
        return EachBatch(keep)


class FlatMapOperator(_Transform):
    """``fn(batch)`` yields any number of batches or tables."""
    kind = "flat_map"

    def open(self, ctx: OperatorContext) -> BatchProcessor:
        def each(batch: pa.RecordBatch) -> None:
            for item in self.fn(batch) or ():
                self._emit(ctx, item)
        return EachBatch(each)


class SelectOperator(OneInputOperator):
    """The named columns, in that order (Spark's ``select``, pyarrow's ``select``)."""

    def __init__(self, columns: Sequence[str]) -> None:
        self.columns = list(columns)

    def schema(self, inputs: list[pa.Schema | None]) -> pa.Schema | None:
        if inputs[0] is None:
            return None
        require_columns(inputs[0], self.columns)
        return pa.schema([inputs[0].field(c) for c in self.columns])

    def open(self, ctx: OperatorContext) -> BatchProcessor:
        def pick(batch: pa.RecordBatch) -> None:
            missing = [c for c in self.columns if c not in batch.schema.names]
            if missing:          # an input whose schema was unknown on the client
                raise ContractError(f"select: the input has no column '{missing[0]}' (it has: "
                                    f"{', '.join(batch.schema.names)})")
            ctx.emit(batch.select(self.columns))
        return EachBatch(pick)


class IdentityOperator(OneInputOperator):
    """Its input as it is: the step a plan left out where the vertex stays for its
    edges (a local aggregate under ``table.optimizer.agg-phase-strategy: ONE_PHASE``)."""

    def schema(self, inputs: list[pa.Schema | None]) -> pa.Schema | None:
        return inputs[0]

    def open(self, ctx: OperatorContext) -> BatchProcessor:
        return EachBatch(ctx.emit)
