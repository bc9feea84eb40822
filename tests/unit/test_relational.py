"""Union, distinct, limit and top-N (issue 56): each operator's subtask logic against
pyarrow's own answer on small tables (empty inputs, nulls in keys, all-equal keys), and
how the client plans them: a local step chained to its producer, then the final step
past an exchange; a limit or top and what follows it in one subtask."""
from __future__ import annotations

import pyarrow as pa
import pytest

import yarnflow.client as yf
from yarnflow.conf import Configuration
from yarnflow.core.jobgraph import InvalidPipelineError
from yarnflow.core.operators.aggregate import LocalAggregation
from yarnflow.core.operators.base import PlanError
from yarnflow.core.operators.phase import Phase
from yarnflow.core.operators.relational import (DistinctOperator, LimitOperator, TopOperator,
                                                UnionOperator, sort_keys)
from tests.unit.fakes import TestingOperatorContext as Context
from yarnflow.core.failures import ContractError

ROWS = pa.table({"k": pa.array([3, None, 1, 3, 2, None, 1, 3], pa.int64()),
                 "v": pa.array([1.0, 2.0, None, 1.0, 5.0, 2.0, 7.0, 0.5])})


def ran(operator, *tables, chunk=3):
    ctx = Context(*[t.to_batches(max_chunksize=chunk) for t in tables])
    operator.run(ctx)
    return ctx.table(operator.schema([t.schema for t in tables]) or tables[0].schema)


def rows(table):
    return sorted(table.to_pylist(), key=lambda r: [(v is None, v) for v in r.values()])


@pytest.mark.parametrize("phase", [Phase.WHOLE, Phase.LOCAL, Phase.FINAL])
@pytest.mark.parametrize("columns", [("k",), ("k", "v"), ()])
def test_distinct_gives_each_combination_once_with_null_a_value(columns, phase):
    got = ran(DistinctOperator(columns, phase), ROWS)
    names = list(columns) or ROWS.column_names
    assert rows(got) == rows(ROWS.group_by(names).aggregate([]).select(names))
    assert ran(DistinctOperator(columns), ROWS.slice(0, 0)).num_rows == 0


def test_a_local_distinct_whose_input_hardly_repeats_passes_it_on():
    unique = pa.table({"k": pa.array(range(40), pa.int64())})
    ctx = Context(unique.to_batches(max_chunksize=5), batch_rows=2)
    local = DistinctOperator(["k"], Phase.LOCAL)
    local = local.with_settings(LocalAggregation(adaptive=True, sampling_rows=4, distinct_rate=0.5))
    local.run(ctx)
    # it stopped holding rows after the first merge: later batches went on one by one
    assert len(ctx.out) > 2 and sorted(ctx.table(unique.schema)["k"].to_pylist()) == list(range(40))


def test_limit_keeps_the_first_n_rows_and_nothing_of_an_empty_input():
    assert ran(LimitOperator(5), ROWS).equals(ROWS.slice(0, 5))
    assert ran(LimitOperator(0), ROWS).num_rows == 0
    assert ran(LimitOperator(100), ROWS).equals(ROWS)
    assert ran(LimitOperator(3), ROWS.slice(0, 0)).num_rows == 0
    with pytest.raises(ValueError, match="n must be 0 or more"):
        LimitOperator(-1)


@pytest.mark.parametrize("descending", [False, True, [True, False], [False, True]])
def test_top_gives_the_first_rows_in_order_with_nulls_last(descending):
    keys = sort_keys(["k", "v"], descending)
    got = ran(TopOperator(4, keys), ROWS)
    assert got.to_pylist() == ROWS.sort_by(keys).slice(0, 4).to_pylist()


def test_top_of_all_equal_keys_and_of_an_empty_input():
    same = pa.table({"k": pa.array([1] * 9, pa.int64()), "i": pa.array(range(9), pa.int64())})
    got = ran(TopOperator(3, [("k", "descending")]), same)
    assert got.num_rows == 3 and set(got["k"].to_pylist()) == {1}
    assert ran(TopOperator(3, [("k", "ascending")]), same.slice(0, 0)).num_rows == 0


def test_sort_keys_take_one_direction_or_one_per_column():
    assert sort_keys(["a", "b"], True) == [("a", "descending"), ("b", "descending")]
    assert sort_keys(["a", "b"], [False, True]) == [("a", "ascending"), ("b", "descending")]
    with pytest.raises(ValueError, match="one per column"):
        sort_keys(["a", "b"], [True])


def test_union_reads_every_input_and_refuses_other_columns_by_name():
    assert rows(ran(UnionOperator(2), ROWS, ROWS.slice(0, 2))) == \
        rows(pa.concat_tables([ROWS, ROWS.slice(0, 2)]))
    other = ROWS.rename_columns(["k", "w"]).set_column(0, "k", ROWS["k"].cast(pa.int32()))
    with pytest.raises(PlanError, match=r"missing v; extra w; other types: k \(int64 against int32\)"):
        UnionOperator(2).schema([ROWS.schema, other.schema])
    assert UnionOperator(2).schema([ROWS.schema, None]) is None      # unknown: checked at run time
    with pytest.raises(ContractError, match="union input [12] has other columns"):
        UnionOperator(2).run(Context(ROWS.to_batches(), other.to_batches()))


def pipeline(build, parallelism=3):
    p = yf.Pipeline("relational", parallelism=parallelism)
    build(p.from_arrow(ROWS, name="rows")).write_parquet("/tmp/yarnflow-never-written", name="sink")
    return p.job_graph(Configuration.load(overrides=["pipeline.operator-chaining.enabled=false"]))


def shape(graph):
    return [(v.name, v.parallelism) for v in graph.vertices.values()], \
        [(e.source.name, e.target.name, e.ship.name, e.keys) for e in graph.edges]


def test_distinct_is_a_local_step_then_a_hash_exchange_on_its_columns():
    vertices, edges = shape(pipeline(lambda ds: ds.distinct("k")))
    assert vertices == [("rows", 3), ("distinct-local", 3), ("distinct", 3), ("sink", 3)]
    assert edges == [("rows", "distinct-local", "FORWARD", ()),
                     ("distinct-local", "distinct", "HASH", ("k",)),
                     ("distinct", "sink", "FORWARD", ())]
    _, whole = shape(pipeline(lambda ds: ds.distinct()))
    assert whole[1] == ("distinct-local", "distinct", "HASH", ("k", "v"))


def test_limit_and_top_end_in_one_subtask_and_so_does_what_follows():
    for build, name in ((lambda ds: ds.limit(2), "limit"),
                        (lambda ds: ds.top(2, by="v", descending=True).select("v"), "top")):
        vertices, edges = shape(pipeline(build))
        assert vertices[:3] == [("rows", 3), (f"{name}-local", 3), (name, 1)]
        assert all(p == 1 for _, p in vertices[3:]), vertices
        assert edges[1][:3] == (f"{name}-local", name, "REBALANCE")


def test_the_local_steps_chain_into_their_producer():
    p = yf.Pipeline("chained", parallelism=2)
    p.from_arrow(ROWS, name="rows").distinct("k").write_parquet("/tmp/yarnflow-never", name="sink")
    graph = p.job_graph(Configuration.load())
    assert [v.name for v in graph.vertices.values()] == ["rows -> distinct-local", "distinct -> sink"]


def test_mistakes_are_refused_in_one_line_on_the_client():
    with pytest.raises(InvalidPipelineError, match="distinct.. of whole rows needs its input's columns"):
        pipeline(lambda ds: ds.map(lambda b: b, name="opaque").distinct())
    with pytest.raises(InvalidPipelineError, match="union names no other DataSet"):
        pipeline(lambda ds: ds.union())
    with pytest.raises(InvalidPipelineError, match="its input has no column .nope."):
        pipeline(lambda ds: ds.top(3, by="nope"))
    with pytest.raises(InvalidPipelineError, match="one per column"):
        pipeline(lambda ds: ds.top(3, by=["k", "v"], descending=[True]))
    with pytest.raises(InvalidPipelineError, match=r"the columns in another order \(v, k\)"):
        p = yf.Pipeline("mixed")
        p.from_arrow(ROWS).union(p.from_arrow(ROWS.select(["v", "k"]))).write_parquet("/tmp/x")
        p.job_graph(Configuration.load())


def test_a_probe_exchange_that_could_wait_on_its_own_build_input_is_blocking():
    """A join reads its build input whole first: a probe producer that also feeds
    others, or one that shares a source with the build input (a self join), would wait
    on the probe's full buffer while the build input waits on it."""
    def partition_types(build):
        p = yf.Pipeline("breakers", parallelism=2)
        build(p)
        graph = p.job_graph(Configuration.load(overrides=["pipeline.operator-chaining.enabled=false"]))
        return {(e.source.name, e.target.name): e.partition_type.name for e in graph.edges
                if e.target.name.startswith("join")}

    def self_join(p):
        rows = p.from_arrow(ROWS, name="rows")
        rows.join(rows.distinct("k"), on="k", strategy="hash").write_parquet("/tmp/x1", name="s")
    # both sides estimated alike: the left one is built, the right one probes
    assert partition_types(self_join) == {("rows", "join"): "PIPELINED",
                                          ("distinct", "join"): "BLOCKING"}

    def opposite_orders(p):
        facts, dims = p.from_arrow(ROWS, name="facts"), p.from_arrow(ROWS.slice(0, 2), name="dims")
        facts.join(dims, on="k", how="right", name="join-right").write_parquet("/tmp/x2", name="s1")
        facts.join(dims, on="k", name="join-inner").write_parquet("/tmp/x3", name="s2")
    assert partition_types(opposite_orders) == {
        ("facts", "join-right"): "PIPELINED", ("dims", "join-right"): "BLOCKING",
        ("facts", "join-inner"): "BLOCKING", ("dims", "join-inner"): "PIPELINED"}

    def apart(p):
        p.from_arrow(ROWS, name="facts").join(p.from_arrow(ROWS, name="dims"), on="k") \
         .write_parquet("/tmp/x4", name="s")
    assert set(partition_types(apart).values()) == {"PIPELINED"}, "nothing to break"
