"""Hash join: read the build input whole, then stream the probe input past it.

The same operator serves both plans: a hash join reads both inputs hash-partitioned
on the keys; a broadcast join reads the (small) broadcast side whole in every subtask
and the other side as it is already partitioned. Under adaptive execution the build
side is the one the run time measured smaller (``OperatorContext.build_input``).
"""
from __future__ import annotations

import pyarrow as pa

from yarnflow.core.estimates import Estimate
from yarnflow.core.operators.base import (Operator, OperatorContext, PlanError, concat,
                                          require_columns)


class HashJoinOperator(Operator):
    num_inputs = 2

    def __init__(self, left_keys: list[str], right_keys: list[str], how: str = "inner",
                 build_input: int = 1, left_suffix: str = "", right_suffix: str = "_right") -> None:
        self.left_keys = left_keys
        self.right_keys = right_keys
        if how not in ("inner", "left outer"):
            raise ValueError(f"join type {how!r} is not supported; use 'inner' or 'left outer'")
        self.how = how
        self.build_input = build_input
        self.left_suffix = left_suffix
        self.right_suffix = right_suffix

    def estimate(self, inputs: list[Estimate]) -> Estimate:
        """A key join matches each row of the larger side about once: its rows, each
        as wide as a row of both sides."""
        left, right = inputs
        if left.rows is None or right.rows is None:
            return Estimate()
        rows = max(left.rows, right.rows)
        if left.bytes is None or right.bytes is None:
            return Estimate(rows, None, "the larger input's rows")
        width = sum((e.bytes or 0) / e.rows for e in (left, right) if e.rows)
        return Estimate(rows, int(rows * width), "the larger input's rows, both inputs' width")

    def schema(self, inputs: list[pa.Schema | None]) -> pa.Schema | None:
        """Each known side's keys checked; with both sides known, pyarrow's join of two
        empty tables gives the output columns (and refuses keys of unjoinable types)."""
        left, right = inputs
        if left is not None:
            require_columns(left, self.left_keys, "the left input")
        if right is not None:
            require_columns(right, self.right_keys, "the right input")
        if left is None or right is None:
            return None
        try:
            return left.empty_table().join(
                right.empty_table(), keys=self.left_keys, right_keys=self.right_keys,
                join_type=self.how, left_suffix=self.left_suffix,
                right_suffix=self.right_suffix, coalesce_keys=True).schema
        except (pa.ArrowException, TypeError, ValueError) as err:
            for lk, rk in zip(self.left_keys, self.right_keys):
                if left.field(lk).type != right.field(rk).type:
                    raise PlanError(
                        f"the join's key '{lk}' is {left.field(lk).type} on the left and "
                        f"'{rk}' {right.field(rk).type} on the right",
                        "cast one side's key (a map with pyarrow.compute.cast) so both "
                        "have the same type") from None
            raise PlanError(f"pyarrow cannot join these inputs: {err}",
                            "join on keys of the same type on both sides") from None

    def run(self, ctx: OperatorContext) -> None:
        build_input = self.build_input if ctx.build_input < 0 else ctx.build_input
        build = concat(ctx.input(build_input))
        probe_input = 1 - build_input
        for batch in ctx.input(probe_input):
            if build is None:      # nothing to match: an inner join emits nothing
                if self.how == "left outer" and probe_input == 0:
                    ctx.emit(batch)
                continue
            probe = pa.Table.from_batches([batch])
            left, right = (probe, build) if probe_input == 0 else (build, probe)
            joined = left.join(right, keys=self.left_keys, right_keys=self.right_keys,
                               join_type=self.how, left_suffix=self.left_suffix,
                               right_suffix=self.right_suffix, coalesce_keys=True)
            if joined.num_rows:
                ctx.emit(joined)
