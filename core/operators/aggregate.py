"""Grouped aggregation over a hash-partitioned input (each key in one subtask)."""
from __future__ import annotations

from typing import Sequence

from yarnflow.core.operators.base import Operator, OperatorContext, concat


class AggregateOperator(Operator):
    """``aggregations``: (column, function) pairs as ``pyarrow.Table.group_by`` takes them,
    e.g. ``[("amount", "sum"), ("amount", "count")]``; outputs are named ``amount_sum``."""

    def __init__(self, keys: Sequence[str], aggregations: Sequence[tuple[str, str]]) -> None:
        self.keys = list(keys)
        self.aggregations = list(aggregations)

    def run(self, ctx: OperatorContext) -> None:
        table = concat(ctx.input(0))
        if table is None or table.num_rows == 0:
            return
        ctx.emit(table.group_by(self.keys, use_threads=False).aggregate(self.aggregations))
