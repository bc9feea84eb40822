"""Hash join: read the build input whole, then stream the probe input past it.

The same operator serves both plans: a hash join reads both inputs hash-partitioned
on the keys; a broadcast join reads the (small) broadcast side whole in every subtask
and the other side as it is already partitioned. Under adaptive execution the build
side is the one the run time measured smaller (``OperatorContext.build_input``).

Every join type Spark has (``JoinType``) streams its probe side batch by batch: a
side whose every row must come out (the preserved side of an outer join, the left of
a semi or anti join) is never the build side, so each of its rows meets the whole
build side once. A full outer join preserves both: it notes which build rows matched
and emits the others, with nulls, at the end; so it is hash-partitioned, never
broadcast, and no skewed partition of it is split.

A build side larger than the operator's share of its slot's memory is not held: both
sides are cut into spill buckets by their keys and joined bucket by bucket (a grace
hash join), every join type the same way, since a key's rows of both sides meet in
one bucket.
"""
from __future__ import annotations

import copy

import enum
from typing import Iterable, Iterator

import numpy as np
import pyarrow as pa

from yarnflow.core.estimates import Estimate
from yarnflow.core.memory import Held, OperatorMemory, fits_a_copy
from yarnflow.core.operators.base import Operator, PlanError, concat, require_columns
from yarnflow.core.operators.context import OperatorContext
from yarnflow.core.operators.spill import MAX_LEVEL, SPILL_FILES_PER_LEVEL, Buckets

_ROW = "__yarnflow_build_row"      # a full outer join's build row numbers, never emitted


class JoinType(enum.Enum):
    """pyarrow's join types, by Spark's names and their spellings."""
    INNER = "inner"
    LEFT = "left outer"
    RIGHT = "right outer"
    FULL = "full outer"
    SEMI = "left semi"
    ANTI = "left anti"

    @classmethod
    def parse(cls, how: str) -> "JoinType":
        key = how.strip().lower().replace(" ", "_")
        for kind, names in _NAMES.items():
            if key in names:
                return kind
        raise ValueError(f"join type {how!r} is not one of {', '.join(repr(n) for n in _SPARK)}")

    @property
    def broadcastable(self) -> tuple[int, ...]:
        """The inputs that may be sent whole to every subtask: those no row of which
        must come out unmatched."""
        return _BROADCASTABLE[self]

    @property
    def buildable(self) -> tuple[int, ...]:
        """The inputs that may be held whole as the build side."""
        return (0, 1) if self is JoinType.FULL else self.broadcastable

    @property
    def splittable(self) -> tuple[int, ...]:
        """The inputs whose skewed partition may be split over subtasks (the other
        side's rows of it copied to each): each row of a split side still meets every
        row of its key once, and no copied row has to come out unmatched."""
        return _SPLITTABLE[self]


_NAMES = {JoinType.INNER: {"inner"},
          JoinType.LEFT: {"left", "left_outer", "leftouter"},
          JoinType.RIGHT: {"right", "right_outer", "rightouter"},
          JoinType.FULL: {"full", "full_outer", "fullouter", "outer"},
          JoinType.SEMI: {"left_semi", "leftsemi", "semi"},
          JoinType.ANTI: {"left_anti", "leftanti", "anti"}}
_SPARK = ["inner", "left", "right", "full", "left_semi", "left_anti"]
_BROADCASTABLE = {JoinType.INNER: (0, 1), JoinType.LEFT: (1,), JoinType.RIGHT: (0,),
                  JoinType.FULL: (), JoinType.SEMI: (1,), JoinType.ANTI: (1,)}
_SPLITTABLE = {JoinType.INNER: (0, 1), JoinType.LEFT: (0,), JoinType.RIGHT: (1,),
               JoinType.FULL: (), JoinType.SEMI: (0,), JoinType.ANTI: (0,)}


class HashJoinOperator(Operator):
    num_inputs = 2

    def __init__(self, left_keys: list[str], right_keys: list[str], how: str = "inner",
                 build_input: int = 1, left_suffix: str = "", right_suffix: str = "_right") -> None:
        self.left_keys = left_keys
        self.right_keys = right_keys
        self.join_type = JoinType.parse(how)
        self.how = self.join_type.value          # pyarrow's name
        # the inputs' schemas as the client knew them: the columns of a side that sent
        # no rows, which an outer join still emits (as nulls)
        self.input_schemas: tuple[pa.Schema | None, pa.Schema | None] = (None, None)
        self.build_input = build_input
        self.left_suffix = left_suffix
        self.right_suffix = right_suffix

    def deferred_input(self) -> int | None:
        return 1 - self.build_input

    def estimate(self, inputs: list[Estimate]) -> Estimate:
        """A key join matches each row of the larger side about once: its rows, each
        as wide as a row of both sides."""
        left, right = inputs
        if self.join_type in (JoinType.SEMI, JoinType.ANTI):
            return super().estimate(inputs)          # at most the left side
        if left.rows is None or right.rows is None:
            return Estimate()
        rows = max(left.rows, right.rows)
        if left.bytes is None or right.bytes is None:
            return Estimate(rows, None, "the larger input's rows")
        width = sum((e.bytes or 0) / e.rows for e in (left, right) if e.rows)
        return Estimate(rows, int(rows * width), "the larger input's rows, both inputs' width")

    def planned(self, inputs: list[pa.Schema | None]) -> "HashJoinOperator":
        planned = copy.copy(self)
        planned.input_schemas = (inputs[0], inputs[1])
        return planned

    def building(self, build_input: int) -> "HashJoinOperator":
        """The same join holding input ``build_input`` whole (the join strategies pass)."""
        built = copy.copy(self)
        built.build_input = build_input
        return built

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
            return _left_first(left.empty_table().join(
                right.empty_table(), keys=self.left_keys, right_keys=self.right_keys,
                join_type=self.how, left_suffix=self.left_suffix,
                right_suffix=self.right_suffix, coalesce_keys=True), left.names,
                self.left_keys, self.right_keys).schema
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
        if build_input not in self.join_type.buildable:
            raise ValueError(f"a {self.how} join cannot hold input {build_input} whole")
        probe_input = 1 - build_input
        memory = ctx.memory()
        try:
            held, spilled = self._read_build(ctx, build_input, memory)
            if spilled is None:
                build = _table(held) if held else self.input_schemas[build_input]
                if isinstance(build, pa.Schema):
                    build = build.empty_table()
                self._join_all(ctx, build, ctx.input(probe_input), probe_input)
                return
            probe = Buckets(memory, "join-probe", self._keys(probe_input), 0, ctx.batch_rows)
            for batch in ctx.input(probe_input):
                probe.write(batch)
            probe.close()
            for index in range(SPILL_FILES_PER_LEVEL):
                self._grace(ctx, spilled, probe, index, probe_input, memory)
        finally:
            memory.release()

    def _keys(self, side: int) -> list[str]:
        return self.left_keys if side == 0 else self.right_keys

    def _read_build(self, ctx: OperatorContext, build_input: int, memory: OperatorMemory
                    ) -> tuple[list[pa.RecordBatch], Buckets | None]:
        """The build side held, or, once it outgrew the operator's memory, cut into spill
        buckets by its keys (a grace hash join: Flink's hybrid hash join spills the same
        way)."""
        held: Held[pa.RecordBatch] = Held(memory)
        spilled: Buckets | None = None
        for batch in ctx.input(build_input):
            if spilled is not None:
                spilled.write(batch)
                continue
            if batch.num_rows:
                held.add(batch)
            if held.too_big_to_copy():       # the hash table pyarrow builds beside it
                spilled = Buckets(memory, "join-build", self._keys(build_input), 0,
                                  ctx.batch_rows)
                for piece in held.take():
                    spilled.write(piece)
        if spilled is not None:
            spilled.close()
        return held.take(), spilled

    def _grace(self, ctx: OperatorContext, build: Buckets, probe: Buckets, index: int,
               probe_input: int, memory: OperatorMemory) -> None:
        """Bucket ``index`` of both sides joined: held whole when its build side fits,
        else cut again by other bits of the keys' hash (a bucket of rows of one key
        cannot be cut: after ``MAX_LEVEL`` cuts it is joined whole)."""
        if not fits_a_copy(build.size(index), memory) and build.level + 1 < MAX_LEVEL:
            inner_build, inner_probe = build.recut(index), probe.recut(index)
            for inner in range(SPILL_FILES_PER_LEVEL):
                self._grace(ctx, inner_build, inner_probe, inner, probe_input, memory)
            return
        rows = list(build.bucket(index))
        assert build.schema is not None
        table = _table(rows) if rows else build.schema.empty_table()
        build.delete(index)
        self._join_all(ctx, table, probe.bucket(index), probe_input)
        probe.delete(index)

    def _join_all(self, ctx: OperatorContext, build: pa.Table | None,
                  probe: Iterable[pa.RecordBatch], probe_input: int) -> None:
        """``build`` held whole, the probe side streamed past it in chunks."""
        if self.join_type is JoinType.FULL and build is not None:
            self._full_outer(ctx, build, probe, probe_input)
            return
        if build is None:          # nothing to match, and its columns are unknown
            for batch in probe:
                if self.join_type in (JoinType.LEFT, JoinType.RIGHT, JoinType.ANTI):
                    ctx.emit(batch)
            return
        for chunk in probe_chunks(probe, max(ctx.batch_rows, build.num_rows)):
            joined = self._join(chunk, build, probe_input, self.how)
            if joined.num_rows:
                ctx.emit(joined)

    def _full_outer(self, ctx: OperatorContext, build: pa.Table,
                    probe: Iterable[pa.RecordBatch], probe_input: int) -> None:
        """Each probe batch joined keeping its rows, the build rows it matched noted; the
        build rows none matched come last, with nulls for the probe side's columns."""
        matched = np.zeros(build.num_rows, dtype=bool)
        build = build.append_column(_ROW, pa.array(np.arange(build.num_rows), pa.int64()))
        keep = "left outer" if probe_input == 0 else "right outer"
        probe_schema = self.input_schemas[probe_input]
        names: list[str] | None = None
        for chunk in probe_chunks(probe, max(ctx.batch_rows, build.num_rows)):
            probe_schema = chunk.schema
            joined = self._join(chunk, build, probe_input, keep)
            matched[joined.column(_ROW).drop_null().to_numpy()] = True
            if names is None:    # pyarrow's full outer join's order of the columns
                names = self._join(chunk.schema.empty_table(), build.schema.empty_table(),
                                   probe_input, self.how).drop_columns([_ROW]).column_names
            if joined.num_rows:
                ctx.emit(joined.drop_columns([_ROW]).select(names))
        if matched.all():
            return
        rest = build.filter(pa.array(~matched)).drop_columns([_ROW])
        if probe_schema is None:   # the probe side sent nothing and its columns are unknown
            ctx.emit(rest)
            return
        ctx.emit(self._join(probe_schema.empty_table(), rest, probe_input, self.how))

    def _join(self, probe: pa.Table, build: pa.Table, probe_input: int, how: str) -> pa.Table:
        left, right = (probe, build) if probe_input == 0 else (build, probe)
        return _left_first(left.join(right, keys=self.left_keys, right_keys=self.right_keys,
                                     join_type=how, left_suffix=self.left_suffix,
                                     right_suffix=self.right_suffix, coalesce_keys=True),
                           left.column_names, self.left_keys, self.right_keys)


def _left_first(joined: pa.Table, left: list[str], left_keys: list[str],
                right_keys: list[str]) -> pa.Table:
    """The left side's columns first, in their order (its keys where they stand, under
    its names, holding either side's value), then the right side's: as the API
    documents for every join type. pyarrow puts a right outer join's keys after the
    left side's other columns, under the right side's names, so the columns of a right
    join depended on the join type (found by the differential run, tests/differential.py)."""
    names = joined.column_names
    if names[:len(left)] == left:
        return joined
    renamed = {r: k for k, r in zip(left_keys, right_keys) if k not in names and r in names}
    if renamed:
        names = [renamed.get(name, name) for name in names]
        joined = joined.rename_columns(names)
    kept = set(left)
    return joined.select([*left, *(name for name in names if name not in kept)])


def probe_chunks(batches: Iterable[pa.RecordBatch], rows: int) -> Iterator[pa.Table]:
    """The probe side in chunks of at least ``rows`` rows (the last may be fewer).
    pyarrow hashes the build side anew for every join it is asked for, so a chunk as
    large as the build side halves the work at worst, where batch by batch a build
    side of a million rows was hashed again for each of a hundred small batches
    (TPC-H Q9: 20 s of a 22 s job)."""
    held: list[pa.RecordBatch] = []
    count = 0
    for batch in batches:
        if batch.num_rows == 0:
            continue
        held.append(batch)
        count += batch.num_rows
        if count >= rows:
            yield _table(held)
            held, count = [], 0
    if held:
        yield _table(held)


def _table(batches: list[pa.RecordBatch]) -> pa.Table:
    try:
        return pa.Table.from_batches(batches)
    except pa.ArrowInvalid:     # the same columns, told apart by nullability or metadata
        return pa.concat_tables([pa.Table.from_batches([b]) for b in batches],
                                promote_options="permissive")


class CrossJoinOperator(Operator):
    """Every row of input 0 with every row of input 1 (SQL's ``CROSS JOIN``): input 1,
    the small one, is read whole (it is broadcast), input 0 streamed past it, in
    pieces of about ``batch_rows`` rows of output. A column input 1 shares with input
    0 gets ``right_suffix``."""
    num_inputs = 2

    def __init__(self, right_suffix: str = "_right") -> None:
        self.right_suffix = right_suffix

    def schema(self, inputs: list[pa.Schema | None]) -> pa.Schema | None:
        left, right = inputs
        if left is None or right is None:
            return None
        return pa.schema([*left, *(f.with_name(self._name(f.name, left)) for f in right)])

    def deferred_input(self) -> int | None:
        return 0

    def _name(self, name: str, left: pa.Schema) -> str:
        return name + self.right_suffix if name in left.names else name

    def estimate(self, inputs: list[Estimate]) -> Estimate:
        left, right = inputs
        if left.rows is None or right.rows is None:
            return Estimate()
        rows = left.rows * right.rows
        if left.bytes is None or right.bytes is None:
            return Estimate(rows, None, "both inputs' rows multiplied")
        width = sum((e.bytes or 0) / e.rows for e in (left, right) if e.rows)
        return Estimate(rows, int(rows * width), "both inputs' rows multiplied")

    def run(self, ctx: OperatorContext) -> None:
        small = concat(ctx.input(1))
        if small is None or small.num_rows == 0:
            for _ in ctx.input(0):    # read to its end: the producers finish
                pass
            return
        m = small.num_rows
        step = max(1, ctx.batch_rows // m)
        for batch in ctx.input(0):
            names = [*batch.schema.names, *(self._name(n, batch.schema) for n in small.column_names)]
            for start in range(0, batch.num_rows, step):
                piece = batch.slice(start, step)
                n = piece.num_rows
                left = pa.Table.from_batches([piece]).take(np.repeat(np.arange(n), m))
                right = small.take(np.tile(np.arange(m), n))
                ctx.emit(pa.Table.from_arrays([*left.columns, *right.columns], names=names))
