"""Aggregates in two phases (issue 56): local partial results merged by a final step
give pyarrow's one-pass answer (nulls in keys and values, empty inputs, an aggregate
without keys), a local step that does not reduce passes its input on, and the client
plans one phase where a function does not decompose or the configuration says so."""
from __future__ import annotations

import decimal

import numpy as np
import pyarrow as pa
import pytest

from yarnflow.conf import Configuration
from yarnflow.core.jobgraph import InvalidPipelineError
from yarnflow.core.operators import aggregate as aggregating
from yarnflow.core.operators.aggregate import NOT_ADAPTIVE, AggregateOperator, LocalAggregation
from yarnflow.core.operators.phase import Phase
from yarnflow.core.operators.transforms import IdentityOperator
from tests.unit.fakes import TestingOperatorContext as Context
from tests.unit.test_relational import pipeline, rows, shape

RNG = np.random.default_rng(3)
N = 3_000
DATA = pa.table({
    "g": pa.array([None if i % 13 == 0 else int(RNG.integers(0, 20)) for i in range(N)], pa.int64()),
    "h": pa.array([f"h{i % 3}" for i in range(N)]),
    "x": pa.array([None if i % 7 == 0 else float(RNG.random()) for i in range(N)]),
    "n": pa.array(RNG.integers(-50, 50, N), pa.int32())})
# the defaults of table.exec.local-hash-agg.adaptive.*
ADAPTIVE = LocalAggregation(adaptive=True, sampling_rows=500_000, distinct_rate=0.5)
AGGS = [("x", "sum"), ("x", "mean"), ("x", "count"), ("n", "min"), ("n", "max"), ("n", "sum"),
        ("x", "max")]


def two_phase(keys, aggs, data, producers=3, settings=None, chunk=100):
    partials = []
    for i in range(producers):
        start = i * len(data) // producers
        share = data.slice(start, (i + 1) * len(data) // producers - start)
        ctx = Context(share.to_batches(max_chunksize=chunk), batch_rows=64)
        local = AggregateOperator(keys, aggs, Phase.LOCAL, settings=settings or ADAPTIVE)
        local.run(ctx)
        partials += ctx.out
    final = AggregateOperator(keys, aggs, Phase.FINAL)
    schema = final.schema([AggregateOperator(keys, aggs, Phase.LOCAL).schema([data.schema])])
    ctx = Context(partials, batch_rows=64)
    final.run(ctx)
    return ctx.table(schema), len(partials), sum(b.num_rows for b in partials)


def one_pass(keys, aggs, data):
    """pyarrow's answer, mean as a float64 sum over count."""
    got = data.group_by(keys, use_threads=False).aggregate(aggs)
    return got.select([*keys, *(f"{c}_{f}" for c, f in aggs)])


def close(got, want):
    assert got.column_names == want.column_names and got.num_rows == want.num_rows
    key = got.column_names[:len(got.column_names) - len(AGGS)] or None
    for a, b in zip(rows(got), rows(want)):
        for name in a:
            if isinstance(a[name], float) and b[name] is not None:
                assert a[name] == pytest.approx(b[name], rel=1e-9), (key, name)
            else:
                assert a[name] == b[name], (key, name)


@pytest.mark.parametrize("keys", [["g"], ["g", "h"], []])
def test_partial_results_merged_give_pyarrows_answer(keys):
    got, _, crossed = two_phase(keys, AGGS, DATA)
    close(got, one_pass(keys, AGGS, DATA))
    assert crossed < 3 * 21 * 3 + 3, "each producer sent its groups, not its rows"


def test_an_aggregate_without_keys_gives_one_row_of_an_empty_input():
    empty = DATA.slice(0, 0)
    for phase in (Phase.FINAL, Phase.WHOLE):
        operator = AggregateOperator([], [("x", "sum"), ("x", "count"), ("x", "mean")], phase)
        input_schema = AggregateOperator([], operator.aggregations, Phase.LOCAL).schema(
            [empty.schema]) if phase is Phase.FINAL else empty.schema
        schema = operator.schema([input_schema])
        ctx = Context([])
        unplanned = Context([])
        operator.run(unplanned)
        assert unplanned.out == [], "schema() keeps nothing: only the plan's copy knows"
        operator.planned([input_schema]).run(ctx)
        assert ctx.table(schema).to_pylist() == [{"x_sum": None, "x_count": 0, "x_mean": None}]
    keyed = AggregateOperator(["g"], [("x", "sum")])
    keyed.schema([empty.schema])
    ctx = Context([])
    keyed.run(ctx)
    assert ctx.out == []


def test_a_mean_is_a_float64_of_decimals_too():
    table = pa.table({"k": [1, 1, 2], "d": pa.array([decimal.Decimal("1.10"), decimal.Decimal("2.15"),
                                                     None], pa.decimal128(15, 2))})
    got, _, _ = two_phase(["k"], [("d", "mean"), ("d", "sum")], table, producers=2, chunk=1)
    assert got.schema.field("d_mean").type == pa.float64()
    assert rows(got) == [{"k": 1, "d_mean": pytest.approx(1.625), "d_sum": decimal.Decimal("3.25")},
                         {"k": 2, "d_mean": None, "d_sum": None}]


def test_a_local_step_that_does_not_reduce_passes_on_and_one_that_grows_flushes(monkeypatch):
    unique = pa.table({"g": pa.array(range(2_000), pa.int64()), "x": pa.array([1.0] * 2_000)})
    got, batches, crossed = two_phase(["g"], [("x", "sum")], unique, producers=1,
                                      settings=LocalAggregation(adaptive=True, sampling_rows=300, distinct_rate=0.5))
    assert got.num_rows == 2_000 and batches > 5, "it stopped holding and passed batches on"
    monkeypatch.setattr(aggregating, "FLUSH_ROWS", 500)
    got, batches, _ = two_phase(["g"], [("x", "sum")], pa.concat_tables([unique, unique]),
                                producers=1, settings=NOT_ADAPTIVE)
    assert batches >= 4 and got.column("x_sum").to_pylist() == [2.0] * 2_000


def test_the_client_plans_two_phases_where_functions_decompose():
    vertices, edges = shape(pipeline(lambda ds: ds.aggregate(["k"], [("v", "sum")])))
    assert vertices == [("rows", 3), ("aggregate-local", 3), ("aggregate", 3), ("sink", 3)]
    assert edges[1] == ("aggregate-local", "aggregate", "HASH", ("k",))
    vertices, edges = shape(pipeline(lambda ds: ds.aggregate([], [("v", "mean")])))
    assert vertices == [("rows", 3), ("aggregate-local", 3), ("aggregate", 1), ("sink", 1)]
    assert edges[1][2] == "REBALANCE"
    vertices, edges = shape(pipeline(lambda ds: ds.aggregate(["k"], [("v", "count_distinct")])))
    assert vertices == [("rows", 3), ("aggregate", 3), ("sink", 3)]
    with pytest.raises(InvalidPipelineError, match="pyarrow cannot compute"):
        pipeline(lambda ds: ds.aggregate(["k"], [("v", "no_such_function")]))


def test_one_phase_configured_passes_rows_to_the_final_step():
    import yarnflow.client as yf
    from tests.unit.test_relational import ROWS
    p = yf.Pipeline("one-phase", parallelism=2)
    p.from_arrow(ROWS, name="rows").aggregate(["k"], [("v", "sum")]) \
        .write_parquet("/tmp/yarnflow-never-written", name="sink")
    graph = p.job_graph(Configuration.load(overrides=[
        "table.optimizer.agg-phase-strategy=ONE_PHASE", "pipeline.operator-chaining.enabled=false"]))
    local = next(v for v in graph.vertices.values() if v.name == "aggregate-local").operator.value
    final = next(v for v in graph.vertices.values() if v.name == "aggregate").operator.value
    assert isinstance(local, IdentityOperator) and final.phase is Phase.WHOLE
    # the plan's operators are new ones: the pipeline's own are as the user built them
    own = {v.name: v.operator.value for v in p._vertices}
    assert own["aggregate-local"].phase is Phase.LOCAL and own["aggregate"].phase is Phase.FINAL
    ctx = Context(ROWS.to_batches(max_chunksize=3))
    local.run(ctx)
    assert sum(b.num_rows for b in ctx.out) == ROWS.num_rows
    out = Context(ctx.out)
    final.run(out)
    assert rows(out.table(final.schema([ROWS.schema]))) == rows(one_pass(["k"], [("v", "sum")], ROWS))


def test_a_step_of_many_groups_merges_them_a_logarithmic_number_of_times(monkeypatch):
    """Groups that outnumber a batch many times over are merged again only once they
    doubled, not for every batch (which made a final step of millions of groups
    quadratic); the answer is the one-pass one."""
    merges = []
    merge = aggregating.Aggregation.merge

    def counted(self, table):
        merges.append(table.num_rows)
        return merge(self, table)
    monkeypatch.setattr(aggregating.Aggregation, "merge", counted)
    data = pa.table({"g": pa.array(np.arange(20_000) % 5_000, pa.int64()),
                     "x": pa.array(np.ones(20_000))})
    final = AggregateOperator(["g"], [("x", "sum")], Phase.WHOLE)
    ctx = Context(data.to_batches(max_chunksize=50), batch_rows=16)
    final.run(ctx)
    assert rows(ctx.table(final.schema([data.schema]))) == rows(one_pass(["g"], [("x", "sum")], data))
    assert len(merges) < 40, len(merges)           # batch by batch: about 400
