"""Record-batch-at-a-time transforms: map, filter, flat_map."""
from __future__ import annotations

from typing import Any, Callable

import pyarrow as pa

from yarnflow.core.estimates import Estimate, EstimateHint
from yarnflow.core.operators.base import Operator, OperatorContext, to_batches


class _Transform(Operator):
    """User code over each batch: the planner keeps its input's estimate unless the
    user's hint corrects it."""

    def __init__(self, fn: Callable[[pa.RecordBatch], Any], name: str,
                 hint: EstimateHint | None = None) -> None:
        self.fn = fn
        self.name = name
        self.hint = hint

    def estimate(self, inputs: list[Estimate]) -> Estimate:
        carried = super().estimate(inputs)
        return self.hint.apply(carried) if self.hint is not None else carried


class MapOperator(_Transform):

    def run(self, ctx: OperatorContext) -> None:
        for batch in ctx.input(0):
            for out in to_batches(self.fn(batch), f"map function '{self.name}'"):
                ctx.emit(out)


class FilterOperator(_Transform):
    """``fn(batch)`` returns a boolean mask (an Arrow array or expression result)."""

    def run(self, ctx: OperatorContext) -> None:
        for batch in ctx.input(0):
            mask = self.fn(batch)
            if not isinstance(mask, (pa.Array, pa.ChunkedArray)):
                raise TypeError(f"filter function '{self.name}' must return a boolean Arrow "
                                f"array (e.g. pyarrow.compute.greater(...)), got "
                                f"{type(mask).__name__}")
            out = batch.filter(mask)
            if out.num_rows:
                ctx.emit(out)


class FlatMapOperator(_Transform):
    """``fn(batch)`` yields any number of batches or tables."""

    def run(self, ctx: OperatorContext) -> None:
        for batch in ctx.input(0):
            for item in self.fn(batch) or ():
                for out in to_batches(item, f"flat_map function '{self.name}'"):
                    ctx.emit(out)
