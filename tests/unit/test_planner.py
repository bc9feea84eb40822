"""The planner: estimates from sources through every operator, and join strategies."""
from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import yarnflow.client as yf
from yarnflow.conf import Configuration
from yarnflow.client.planner.chaining import head_operator
from yarnflow.core.jobgraph import ShipStrategy
from yarnflow.client.planner import Estimate, JoinStrategy, plan_join
from yarnflow.core.operators.join import JoinType

SMALL = pa.table({"k": list(range(10)), "name": [f"n{i}" for i in range(10)]})


def big_parquet(tmp_path, rows: int = 200_000) -> str:
    path = tmp_path / "big"
    path.mkdir()
    table = pa.table({"k": pa.array([i % 10 for i in range(rows)], pa.int64()),
                      "v": pa.array(range(rows), pa.int64()),
                      "pad": pa.array([1.5] * rows)})
    pq.write_table(table, path / "part-0.parquet", row_group_size=rows // 4)
    return str(path)


# The planner estimates each operator; chaining, after planning, keeps only a chain's
# last. Tests of estimates look at the graph operator by operator.
UNCHAINED = "pipeline.operator-chaining.enabled=false"


def edge_into(graph, operator: str, input_index: int):
    vertex = graph.vertex_running(operator)
    return next(e for e in graph.inputs_of(vertex) if e.target_input == input_index)


def test_parquet_estimates_come_from_the_footer_and_survive_map_filter_flat_map_and_spark(tmp_path):
    p = yf.Pipeline("est")
    src = p.read_parquet(big_parquet(tmp_path), name="src")
    out = src.map(lambda b: b, name="m").filter(lambda b: b["v"], name="f") \
             .flat_map(lambda b: [b], name="fm").spark_sql("SELECT * FROM input", name="sql")
    out.write_parquet(str(tmp_path / "out"))
    graph = p.job_graph(Configuration.load(overrides=[UNCHAINED]))
    by_name = {v.name: v.estimate for v in graph.vertices.values()}
    want = by_name["src"]
    arrow = pq.read_table(tmp_path / "big").nbytes
    assert want.rows == 200_000 and abs(want.bytes - arrow) <= arrow / 4   # Arrow bytes
    assert by_name["m"] == by_name["f"] == by_name["fm"] == by_name["sql"] == want
    assert by_name["parquet-sink"] == want


def test_projected_columns_count_only_their_bytes(tmp_path):
    p = yf.Pipeline("proj")
    whole = p.read_parquet(big_parquet(tmp_path), name="whole")
    part = p.read_parquet(str(tmp_path / "big"), columns=["k"], name="part")
    whole.write_parquet(str(tmp_path / "o1"))
    part.write_parquet(str(tmp_path / "o2"))
    graph = p.job_graph(Configuration.load(overrides=[UNCHAINED]))
    est = {v.name: v.estimate for v in graph.vertices.values()}
    assert est["part"].rows == est["whole"].rows
    assert 0 < est["part"].bytes < est["whole"].bytes / 2


COLUMNS = {
    "numeric": lambda n: pa.array(range(n), pa.int64()),
    "string": lambda n: pa.array([f"unique-value-{i * 7919}" for i in range(n)]),
    "dictionary": lambda n: pa.array([f"category-{i % 7}-with-quite-a-long-name" for i in range(n)]),
    "with-nulls": lambda n: pa.array([None if i % 3 else float(i) for i in range(n)]),
}


@pytest.mark.parametrize("kind", sorted(COLUMNS))
def test_parquet_estimates_are_arrow_bytes_within_a_quarter(tmp_path, kind):
    """The broadcast threshold is in Arrow bytes: a dictionary-encoded column counts
    decoded, not as the few KB it is encoded (issue 15, item 3)."""
    table = pa.table({kind: COLUMNS[kind](100_000)})
    (tmp_path / "in").mkdir()
    pq.write_table(table, tmp_path / "in" / "part-0.parquet", row_group_size=30_000)
    p = yf.Pipeline("est")
    p.read_parquet(str(tmp_path / "in"), name="src").write_parquet(str(tmp_path / "out"))
    graph = p.job_graph(Configuration.load(overrides=[UNCHAINED]))
    estimated = next(v.estimate for v in graph.vertices.values() if v.name == "src").bytes
    actual = pq.read_table(tmp_path / "in").nbytes
    assert abs(estimated - actual) <= actual / 4, f"{kind}: estimated {estimated}, Arrow {actual}"


def test_a_side_small_when_encoded_but_big_in_arrow_is_hashed_not_broadcast(tmp_path):
    names = pa.table({"k": pa.array([i % 10 for i in range(200_000)], pa.int64()),
                      "name": pa.array([f"instrument-class-{i % 10}-of-the-big-family"
                                        for i in range(200_000)])})
    (tmp_path / "names").mkdir()
    pq.write_table(names, tmp_path / "names" / "part-0.parquet")
    encoded = pq.read_metadata(tmp_path / "names" / "part-0.parquet").row_group(0).total_byte_size
    arrow = names.nbytes
    assert encoded < 2**20 < arrow, (encoded, arrow)

    facts = big_parquet(tmp_path, rows=800_000)          # 19 MB in Arrow

    def plan(threshold: int):
        p = yf.Pipeline("auto", parallelism=2)
        big = p.read_parquet(facts, name="big")
        big.join(p.read_parquet(str(tmp_path / "names"), name="names"), on="k") \
           .write_parquet(str(tmp_path / "o"))
        graph = p.job_graph(Configuration.load(
            overrides=[f"planner.broadcast-threshold={threshold}b"]))
        return next(iter(graph.join_plans.values()))
    assert plan(2**20).strategy is JoinStrategy.HASH, "its encoded size is below 1 MB"
    broadcast = plan(arrow + 2**20)
    assert broadcast.strategy is JoinStrategy.BROADCAST and broadcast.broadcast_input == 1


def test_auto_broadcasts_the_small_side_behind_an_operator_and_forwards_the_big_one(tmp_path):
    p = yf.Pipeline("auto", parallelism=3)
    big = p.read_parquet(big_parquet(tmp_path), name="big")
    small = p.from_arrow(SMALL, name="small").set_parallelism(1).map(lambda b: b, name="codes") \
        .set_parallelism(1)
    big.join(small, on="k", name="join").write_parquet(str(tmp_path / "out"))
    graph = p.job_graph(Configuration.load())
    plan = next(iter(graph.join_plans.values()))
    assert plan.strategy is JoinStrategy.BROADCAST and plan.broadcast_input == 1
    assert edge_into(graph, "join", 0).ship is ShipStrategy.FORWARD
    assert edge_into(graph, "join", 1).ship is ShipStrategy.BROADCAST
    join = graph.vertex_running("join")
    assert join.operators == ("join", "parquet-sink")     # two inputs: it heads its chain
    assert join.parallelism == 3 and head_operator(join).build_input == 1
    assert "codes" in plan.reason and "planner.broadcast-threshold" in plan.reason


def test_auto_hashes_when_no_side_is_within_the_threshold_and_the_threshold_is_an_option(tmp_path):
    def plan(threshold: str):
        p = yf.Pipeline("auto", parallelism=2)
        big = p.read_parquet(big_parquet(tmp_path) if not (tmp_path / "big").exists()
                             else str(tmp_path / "big"), name="big")
        big.join(p.from_arrow(SMALL, name="small"), on="k").write_parquet(str(tmp_path / "o"))
        graph = p.job_graph(Configuration.load(overrides=[f"planner.broadcast-threshold={threshold}"]))
        return graph, next(iter(graph.join_plans.values()))
    graph, hashed = plan("10b")
    assert hashed.strategy is JoinStrategy.HASH
    assert edge_into(graph, "join", 0).ship is ShipStrategy.HASH
    assert edge_into(graph, "join", 1).keys == ("k",)
    assert hashed.build_input == 1          # the smaller side is held in memory
    _, broadcast = plan("1mb")
    assert broadcast.strategy is JoinStrategy.BROADCAST


def test_forced_strategies_and_left_outer_joins_never_broadcast_the_kept_side():
    tiny, huge = Estimate(10, 100), Estimate(10**8, 10**10)
    assert plan_join(JoinStrategy.HASH, huge, tiny, 2**20, ("a", "b")).strategy is JoinStrategy.HASH
    forced = plan_join(JoinStrategy.BROADCAST, tiny, huge, 2**20, ("a", "b"))
    assert forced.strategy is JoinStrategy.BROADCAST and forced.broadcast_input == 1
    # the left side is tiny, but a left outer join keeps each left row exactly once
    outer = plan_join(JoinStrategy.AUTO, tiny, huge, 2**20, ("a", "b"), how=JoinType.LEFT)
    assert outer.strategy is JoinStrategy.HASH and outer.build_input == 1
    inner = plan_join(JoinStrategy.AUTO, tiny, huge, 2**20, ("a", "b"))
    assert inner.broadcast_input == 0 and inner.build_input == 0
    unknown = plan_join(JoinStrategy.AUTO, Estimate(), Estimate(), 2**20, ("a", "b"))
    assert unknown.strategy is JoinStrategy.HASH and "? bytes" in unknown.reason


def test_each_join_type_broadcasts_and_builds_only_a_side_it_need_not_keep_whole():
    tiny, huge = Estimate(10, 100), Estimate(10**8, 10**10)
    for how, side in ((JoinType.RIGHT, 0), (JoinType.SEMI, 1), (JoinType.ANTI, 1)):
        small_kept = (huge, tiny) if side == 0 else (tiny, huge)   # the kept side is tiny
        plan = plan_join(JoinStrategy.AUTO, *small_kept, 2**20, ("a", "b"), how=how)
        assert plan.strategy is JoinStrategy.HASH and plan.build_input == side, (how, plan)
        forced = plan_join(JoinStrategy.BROADCAST, tiny, tiny, 2**20, ("a", "b"), how=how)
        assert forced.broadcast_input == side, (how, forced)
    full = plan_join(JoinStrategy.AUTO, tiny, huge, 2**20, ("a", "b"), how=JoinType.FULL)
    assert full.strategy is JoinStrategy.HASH and full.build_input == 0
    assert "keeps every row of both sides" in full.reason
    with pytest.raises(ValueError, match="neither can be broadcast"):
        plan_join(JoinStrategy.BROADCAST, tiny, huge, 2**20, ("a", "b"), how=JoinType.FULL)
    adaptive = plan_join(JoinStrategy.AUTO, tiny, huge, 2**20, ("a", "b"), how=JoinType.FULL,
                         at_run_time=True)
    assert adaptive.strategy is JoinStrategy.HASH and adaptive.buildable == (0, 1)


def test_an_unknown_strategy_is_refused_naming_the_choices():
    p = yf.Pipeline("bad")
    a = p.from_arrow(SMALL)
    with pytest.raises(ValueError, match="'auto', 'broadcast', 'hash'"):
        a.join(p.from_arrow(SMALL), on="k", strategy="sort-merge")


def test_planning_leaves_the_users_pipeline_untouched(tmp_path):
    """Two builds of one pipeline with different configurations each get their own
    parallelism, join strategy and paths: planning works on copies."""
    p = yf.Pipeline("twice")
    big = p.read_parquet(big_parquet(tmp_path), name="big")
    small = p.from_arrow(SMALL, name="small")
    big.join(small, on="k", name="j").write_parquet("out", name="sink")

    def build(*overrides: str):
        graph = p.job_graph(Configuration.load(overrides=list(overrides)))
        return graph, graph.join_plans[graph.vertex_running("j").id]

    def operator(graph, name: str):
        """The operator named so, alone in its vertex or one of its chain's."""
        vertex = graph.vertex_running(name)
        chained = vertex.operator.value
        return chained.operators[vertex.operators.index(name)] if len(vertex.operators) > 1 \
            else chained

    two, broadcast = build("parallelism.default=2")
    four, hashed = build("parallelism.default=4", "planner.broadcast-threshold=1")
    assert {v.parallelism for v in two.vertices.values()} == {2}
    assert {v.parallelism for v in four.vertices.values()} == {4}
    assert broadcast.broadcast_input == 1 and hashed.broadcast_input is None
    assert operator(two, "j") is not operator(four, "j")
    assert two.vertex_running("sink").committer.value is not \
        four.vertex_running("sink").committer.value
    # the pipeline's own vertices are as the user left them
    assert all(v.parallelism is None and v.estimate is None for v in p._vertices)
    assert all(v.operator.value is not operator(two, v.name) for v in p._vertices)
    assert p._vertices[-1].operator.value.committer.output.uris == []


def test_a_selectivity_hint_corrects_the_estimate_and_auto_uses_it(tmp_path):
    """A filter keeping 0.1 % of a big side makes it the one to broadcast (issue 15)."""
    def plan(**hint):
        p = yf.Pipeline("hint", parallelism=2)
        facts = p.read_parquet(big_parquet(tmp_path) if not (tmp_path / "big").exists()
                               else str(tmp_path / "big"), name="facts")
        few = facts.filter(lambda b: b["k"], name="few", **hint)
        names = p.from_arrow(pa.table({"k": list(range(100_000)),
                                       "name": [f"n{i}" for i in range(100_000)]}), name="names")
        names.join(few, on="k").write_parquet(str(tmp_path / "o"))
        graph = p.job_graph(Configuration.load(overrides=[UNCHAINED, "planner.broadcast-threshold=1mb"]))
        few_estimate = next(v.estimate for v in graph.vertices.values() if v.name == "few")
        return next(iter(graph.join_plans.values())), few_estimate
    unhinted, carried = plan()
    assert unhinted.strategy is JoinStrategy.HASH and carried.origin == "as its input"
    hinted, corrected = plan(selectivity=0.001)
    assert corrected.rows == 200 and corrected.origin == "the user's hint"
    assert hinted.strategy is JoinStrategy.BROADCAST and hinted.broadcast_input == 1
    _, sized = plan(size="2 mb")
    assert sized.bytes == 2 * 2**20


def test_a_bad_hint_is_refused_naming_the_vertex_and_the_fix():
    p = yf.Pipeline("hint")
    with pytest.raises(yf.InvalidPipelineError, match="vertex 'f'.*selectivity must be above 0.*Fix"):
        p.from_arrow(SMALL).filter(lambda b: b["k"], name="f", selectivity=0)


def test_csv_estimates_come_from_a_sample_in_arrow_bytes(tmp_path):
    import pyarrow.csv as pacsv
    table = pa.table({"id": pa.array(range(50_000), pa.int64()),
                      "price": pa.array([i * 0.25 for i in range(50_000)]),
                      "code": pa.array([f"C{i % 300:05d}" for i in range(50_000)])})
    (tmp_path / "csv").mkdir()
    for part in range(3):
        pacsv.write_csv(table, tmp_path / "csv" / f"part-{part}.csv")
    p = yf.Pipeline("csv")
    p.read_csv(str(tmp_path / "csv"), name="src").write_parquet(str(tmp_path / "o"))
    graph = p.job_graph(Configuration.load(overrides=[UNCHAINED]))
    estimate = next(v.estimate for v in graph.vertices.values() if v.name == "src")
    actual = table.nbytes * 3
    assert abs(estimate.rows - 150_000) <= 150_000 / 4
    assert abs(estimate.bytes - actual) <= actual / 4, (estimate, actual)
    assert estimate.origin.startswith("a CSV sample of")
