"""Every join type Spark has (issue 56): the hash join's subtask, fed its build side
whole and its probe side batch by batch, gives what pyarrow's join of the two whole
tables gives (nulls in keys, repeated keys, empty sides), whichever side is built where
the type allows it; the cross join; Spark's names for each type."""
from __future__ import annotations

import pyarrow as pa
import pytest

from yarnflow.core.operators.join import CrossJoinOperator, HashJoinOperator, JoinType
from tests.unit.fakes import TestingOperatorContext

LEFT = pa.table({"k": pa.array([1, 2, 2, None, 5, 7, 7], pa.int64()),
                 "a": pa.array(["p", "q", "r", "s", "t", "u", "v"])})
RIGHT = pa.table({"k": pa.array([2, 2, 3, None, 7, 9], pa.int64()),
                  "b": pa.array([20.0, 21.0, 30.0, 0.0, 70.0, 90.0])})


def task(left, right, build_input=-1, batch_rows=4):
    """A task joining ``left`` (in batches of 2) and ``right`` (in batches of 3)."""
    return TestingOperatorContext(left.to_batches(max_chunksize=2),
                                  right.to_batches(max_chunksize=3),
                                  build_input=build_input, batch_rows=batch_rows,
                                  vertex_name="join")


def rows(table):
    return sorted(table.to_pylist(), key=lambda r: [(v is None, str(v)) for v in r.values()])


def joined(how, build_input, left=LEFT, right=RIGHT, known=True):
    operator = HashJoinOperator(["k"], ["k"], how, build_input=build_input)
    inputs = [left.schema, right.schema] if known else [None, None]
    schema = operator.schema(inputs)
    ctx = task(left, right, build_input)
    operator.planned(inputs).run(ctx)
    return pa.Table.from_batches(ctx.out, schema=schema) if ctx.out else schema.empty_table()


CASES = [(how, build) for how in JoinType for build in how.buildable]


@pytest.mark.parametrize("how,build", CASES, ids=[f"{h.name}-build{b}" for h, b in CASES])
def test_each_join_type_gives_pyarrows_answer_whichever_side_it_may_build(how, build):
    want = LEFT.join(RIGHT, keys="k", join_type=how.value, right_suffix="_right", coalesce_keys=True)
    got = joined(how.value, build)
    # the left side's columns first, its key among them, for every type (DataSet.join's
    # contract); pyarrow puts a right join's key after the left side's other columns
    assert got.column_names == (["k", "a"] if how in (JoinType.SEMI, JoinType.ANTI)
                                else ["k", "a", "b"])
    assert rows(got.select(want.column_names)) == rows(want)


def test_a_right_join_on_keys_of_two_names_keeps_the_left_name_where_the_left_has_it():
    right = RIGHT.rename_columns(["key", "b"])
    operator = HashJoinOperator(["k"], ["key"], "right", build_input=0)
    schema = operator.schema([LEFT.schema, right.schema])
    ctx = task(LEFT, right, 0)
    operator.run(ctx)
    got = pa.Table.from_batches(ctx.out, schema=schema)
    assert got.column_names == ["k", "a", "b"]
    assert sorted(got.column("k").to_pylist(), key=lambda v: (v is None, v or 0)) == \
        [2, 2, 2, 2, 3, 7, 7, 9, None]


@pytest.mark.parametrize("how,build", CASES, ids=[f"{h.name}-build{b}" for h, b in CASES])
def test_an_empty_side_gives_what_sql_gives(how, build):
    for left, right in ((LEFT.slice(0, 0), RIGHT), (LEFT, RIGHT.slice(0, 0))):
        want = left.join(right, keys="k", join_type=how.value, right_suffix="_right",
                         coalesce_keys=True)
        assert rows(joined(how.value, build, left, right)) == rows(want), (how, build)


def test_a_side_that_must_come_out_whole_is_never_held_whole():
    for how in JoinType:
        for side in (0, 1):
            if side not in how.buildable:
                with pytest.raises(ValueError, match="cannot hold input"):
                    joined(how.value, side)
    assert JoinType.FULL.broadcastable == () and JoinType.FULL.splittable == ()
    assert JoinType.RIGHT.broadcastable == (0,) and JoinType.RIGHT.splittable == (1,)


def test_sparks_names_for_each_type():
    assert [JoinType.parse(n) for n in ("left", "left_outer", "left outer", "leftouter")] == \
        [JoinType.LEFT] * 4
    assert JoinType.parse("outer") is JoinType.FULL and JoinType.parse("full_outer") is JoinType.FULL
    assert JoinType.parse("left_semi") is JoinType.SEMI and JoinType.parse("anti") is JoinType.ANTI
    assert JoinType.parse("RIGHT") is JoinType.RIGHT
    with pytest.raises(ValueError, match="is not one of 'inner', 'left', 'right', 'full'"):
        JoinType.parse("sideways")


def test_a_cross_join_pairs_every_row_with_every_row_in_pieces():
    operator = CrossJoinOperator()
    ctx = task(LEFT, RIGHT.slice(0, 3), batch_rows=4)
    operator.run(ctx)
    got = pa.Table.from_batches(ctx.out)
    assert got.column_names == ["k", "a", "k_right", "b"]
    assert got.schema == operator.schema([LEFT.schema, RIGHT.schema])
    want = [{**left, "k_right": right["k"], "b": right["b"]}
            for left in LEFT.to_pylist() for right in RIGHT.slice(0, 3).to_pylist()]
    assert rows(got) == rows(pa.Table.from_pylist(want))
    assert max(b.num_rows for b in ctx.out) <= 4
    empty = task(LEFT, RIGHT.slice(0, 0))
    operator.run(empty)
    assert empty.out == []


def test_the_probe_side_is_joined_in_chunks_as_large_as_the_build_side():
    """pyarrow hashes the build side again for each join: a chunk of at least the build
    side's rows (or a batch's), never one join per small batch; an empty batch is none."""
    from yarnflow.core.operators.join import probe_chunks
    batches = LEFT.to_batches(max_chunksize=2) + [LEFT.to_batches()[0].slice(0, 0)]
    chunks = list(probe_chunks(batches, 5))
    assert [c.num_rows for c in chunks] == [6, 1]
    assert pa.concat_tables(chunks).equals(LEFT)
    assert list(probe_chunks([], 5)) == []
