"""Grouped aggregation over a hash-partitioned input (each key in one subtask)."""
from __future__ import annotations

from typing import Sequence

import pyarrow as pa

from yarnflow.core.operators.base import (Operator, OperatorContext, PlanError, concat,
                                          require_columns)


class AggregateOperator(Operator):
    """``aggregations``: (column, function) pairs as ``pyarrow.Table.group_by`` takes them,
    e.g. ``[("amount", "sum"), ("amount", "count")]``; outputs are named ``amount_sum``."""

    def __init__(self, keys: Sequence[str], aggregations: Sequence[tuple[str, str]]) -> None:
        self.keys = list(keys)
        self.aggregations = list(aggregations)

    def schema(self, inputs: list[pa.Schema | None]) -> pa.Schema | None:
        """pyarrow's own answer on an empty table of the input's schema: the output
        columns exactly as the subtasks will make them, and an aggregation function or
        column type pyarrow does not support refused here rather than in every subtask."""
        if inputs[0] is None:
            return None
        require_columns(inputs[0], [*self.keys, *(column for column, _ in self.aggregations)])
        try:
            return inputs[0].empty_table().group_by(self.keys, use_threads=False) \
                .aggregate(self.aggregations).schema
        except (pa.ArrowException, TypeError, ValueError) as err:
            raise PlanError(f"pyarrow cannot compute {self.aggregations} grouped by "
                            f"{self.keys}: {err}",
                            "use an aggregation pyarrow's group_by has (sum, mean, min, "
                            "max, count, count_distinct, ...) on a column of a type it "
                            "takes") from None

    def run(self, ctx: OperatorContext) -> None:
        table = concat(ctx.input(0))
        if table is None or table.num_rows == 0:
            return
        ctx.emit(table.group_by(self.keys, use_threads=False).aggregate(self.aggregations))
