"""Operator chaining (issue 55): Flink's rules, each breaking a chain on its own; the
chained vertex the JobGraph gets; one task running a chain's operators in a line."""
from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import yarnflow.client as yf
from yarnflow.client.explain import plan_json
from yarnflow.conf import Configuration
from yarnflow.core.errors import TaskCancelled
from yarnflow.client.planner.chaining import chain_operators, chains, why_not_chained
from yarnflow.core.jobgraph import (ChainingStrategy, JobGraph, JobVertex, ShipStrategy)
from yarnflow.core.operators import FilterOperator, MapOperator, SelectOperator, TableSource
from yarnflow.core.operators.base import BatchProcessor, OneInputOperator
from yarnflow.core.operators.chain import ChainedOperator, failed_operator
from tests.unit.fakes import TestingOperatorContext
from yarnflow.appmaster.webmonitor import views
from rich.console import Console

from yarnflow.client.display import progress_table, summary_table
from yarnflow.core.details import JobDetails, SubtaskDetails, VertexDetails
from yarnflow.core.ids import JobID
from yarnflow.core.status import JobStatus
from yarnflow.core.messages import OperatorMetrics, TaskMetrics
from yarnflow.core.resources import ResourceSpec
from yarnflow.core.status import ExecutionState
from yarnflow.rpc.codec import fill_metrics, jobgraph_from_proto, jobgraph_to_proto, metrics_from_proto
from yarnflow.rpc.generated import common_pb2
from yarnflow.core.user_code import UserCode

ROWS = pa.table({"k": pa.array(range(10), pa.int64()), "v": pa.array(range(10, 20), pa.int64())})
ON = Configuration.load(overrides=["pipeline.operator-chaining.enabled=true"])
OFF = Configuration.load(overrides=["pipeline.operator-chaining.enabled=false"])


def names(graph: JobGraph) -> list[str]:
    return [v.name for v in graph.topological_order()]


def line(tmp_path: Path, between=lambda ds: ds, first=lambda ds: ds) -> yf.Pipeline:
    """rows -> plus-one -> positive -> sink, all parallelism 2; ``between`` shapes what
    comes out of plus-one, ``first`` the source."""
    p = yf.Pipeline("line", parallelism=2)
    mapped = first(p.from_arrow(ROWS, name="rows")).map(
        lambda b: b.set_column(1, "v", pc.add(b["v"], 1)), name="plus-one")
    between(mapped).filter(lambda b: pc.greater(b["v"], 0), name="positive") \
        .write_parquet(str(tmp_path / "out"), name="sink")
    return p


def test_a_line_of_forward_edges_is_one_chained_vertex(tmp_path):
    graph = line(tmp_path).job_graph(ON)
    assert names(graph) == ["rows -> plus-one -> positive -> sink"]
    (vertex,) = graph.vertices.values()
    assert vertex.operators == ("rows", "plus-one", "positive", "sink")
    assert vertex.parallelism == 2 and vertex.is_source and vertex.committer is not None
    assert isinstance(vertex.operator.value, ChainedOperator)


def test_chaining_is_an_option_and_off_leaves_every_operator_a_vertex(tmp_path):
    assert names(line(tmp_path).job_graph(OFF)) == ["rows", "plus-one", "positive", "sink"]


@pytest.mark.parametrize("shape, expected", [
    (lambda ds: ds.rebalance(), "REBALANCE edge"),
    (lambda ds: ds.key_by("k"), "HASH edge"),
    (lambda ds: ds.forward().blocking(), "BLOCKING edge"),
])
def test_an_edge_that_redistributes_or_blocks_breaks_the_chain(tmp_path, shape, expected):
    graph = line(tmp_path, between=shape).job_graph(ON)
    assert names(graph) == ["rows -> plus-one", "positive -> sink"]
    assert len(graph.edges) == 1
    unchained = line(tmp_path, between=shape).job_graph(OFF)
    cut = next(e for e in unchained.edges if e.source.name == "plus-one")
    assert why_not_chained(unchained, cut) == expected


def test_the_users_settings_break_the_chain_where_they_say(tmp_path):
    disabled = line(tmp_path, between=lambda ds: ds.disable_chaining()).job_graph(ON)
    assert names(disabled) == ["rows", "plus-one", "positive -> sink"]
    new_chain = line(tmp_path, between=lambda ds: ds.start_new_chain()).job_graph(ON)
    assert names(new_chain) == ["rows", "plus-one -> positive -> sink"]


def test_another_slot_sharing_group_breaks_the_chain(tmp_path):
    graph = line(tmp_path, between=lambda ds: ds.slot_sharing_group("heavy")).job_graph(ON)
    # the filter and sink inherit the map's group: they chain with it, not with the source
    assert names(graph) == ["rows", "plus-one -> positive -> sink"]


def graph_of(*specs: dict, edges=()) -> JobGraph:
    """A JobGraph built by hand (for rules the pipeline API cannot break alone)."""
    graph = JobGraph("by hand")
    vertices = []
    for i, spec in enumerate(specs):
        operator = spec.pop("operator", None) or (TableSource(ROWS) if i == 0 else
                                                  MapOperator(lambda b: b, f"m{i}"))
        vertices.append(graph.add_vertex(JobVertex(
            name=f"v{i}", operator=UserCode.of(operator),
            **{"num_inputs": 0 if i == 0 else 1, "parallelism": 2, "slot_sharing_group": "default",
               **spec})))
    for source, target in edges or [(i, i + 1) for i in range(len(specs) - 1)]:
        graph.connect(vertices[source], vertices[target], ShipStrategy.FORWARD)
    return graph


@pytest.mark.parametrize("second, expected", [
    ({"parallelism": 3}, "parallelism 2 to 3"),
    ({"co_location_group": "c"}, "another co-location group"),
    ({"adaptive": True}, "one end's parallelism decided at run time"),
    ({"chaining": ChainingStrategy.HEAD}, "'v1' starts a chain"),
    ({"operator": TableSource(ROWS)}, "'v1' starts a chain"),      # an operator that reads itself
])
def test_each_rule_on_a_forward_edge_breaks_it_on_its_own(second, expected):
    graph = graph_of({}, second)
    assert why_not_chained(graph, graph.edges[0]) == expected
    assert [len(c) for c in chains(graph)] == [1, 1]
    whole = graph_of({}, {})
    assert why_not_chained(whole, whole.edges[0]) is None


def test_a_producer_never_chained_and_a_consumer_of_two_inputs_keep_their_edges():
    never = graph_of({"chaining": ChainingStrategy.NEVER}, {})
    assert why_not_chained(never, never.edges[0]) == "'v0' is never chained"
    joined = graph_of({}, {}, {"num_inputs": 2}, edges=[(0, 2), (1, 2)])
    joined.edges[1].target_input = 1
    assert why_not_chained(joined, joined.edges[0]) == "'v2' has 2 inputs"


def test_a_chained_vertex_keeps_its_heads_id_and_sums_its_operators_resources():
    graph = graph_of({"resources": ResourceSpec(cpu=1, memory="300m")}, {},
                     {"resources": ResourceSpec(cpu=0.5, memory="200m")})
    head = next(iter(graph.vertices.values()))
    chained = chain_operators(graph)
    (vertex,) = chained.vertices.values()
    assert vertex.id == head.id and vertex.name == "v0 -> v1 -> v2"
    assert vertex.resources == ResourceSpec(cpu=1.5, memory="500m")
    assert not chained.edges


def test_a_producer_with_two_forward_consumers_heads_a_tree_and_a_second_sink_its_own_chain(
        tmp_path):
    """Flink's chains are trees: a fork chains both branches; each edge leaving the chain
    is fed by the operator it leaves from; a chain commits one output, so the second
    sink (of a forked source) is a chain of its own."""
    p = yf.Pipeline("fork", parallelism=2)
    rows = p.from_arrow(ROWS, name="rows")
    rows.filter(lambda b: pc.less(b["k"], 5), name="low").write_parquet(str(tmp_path / "a"),
                                                                         name="sink-a")
    high = rows.filter(lambda b: pc.greater_equal(b["k"], 5), name="high")
    high.key_by("k").write_parquet(str(tmp_path / "b"), name="hashed-sink")
    high.map(lambda b: b, name="copy").write_parquet(str(tmp_path / "c"), name="sink-c")
    graph = p.job_graph(ON)
    assert names(graph) == ["rows -> (low -> sink-a, high -> copy)", "hashed-sink", "sink-c"]
    tree = graph.vertex_running("high")
    chain = tree.operator.value
    assert tree.operators == ("rows", "low", "sink-a", "high", "copy")
    assert chain.parents == [-1, 0, 1, 0, 3]
    assert tree.committer is not None and tree.committer.value.output.uris == [(tmp_path / "a").as_uri()]
    by_key = {key: chain.names[i] for key, i in chain.routes.items()}
    assert by_key == {f"{graph.vertex_running('hashed-sink').id}.0": "high",
                      f"{graph.vertex_running('sink-c').id}.0": "copy"}


def test_a_tree_hands_each_batch_to_every_branch_and_each_edge_what_its_operator_emits():
    low = FilterOperator(lambda b: pc.less(b["k"], 5), "low")
    high = FilterOperator(lambda b: pc.greater_equal(b["k"], 5), "high")
    keys = SelectOperator(["k"])
    ctx = task(ROWS.to_batches(max_chunksize=4))
    ChainedOperator([MapOperator(lambda b: b, "rows"), low, high, keys], ["rows", "low", "high", "keys"],
                    parents=[-1, 0, 0, 2], routes={"a.0": 1, "b.0": 3, "c.1": 3}).run(ctx)
    got = {tuple(sorted(k)): pa.Table.from_batches(v) for k, v in ctx.routed.items()}
    assert sorted(got) == [("a.0",), ("b.0", "c.1")]
    assert got[("a.0",)].column("k").to_pylist() == [0, 1, 2, 3, 4]
    assert got[("b.0", "c.1")].column_names == ["k"]
    assert got[("b.0", "c.1")].column("k").to_pylist() == [5, 6, 7, 8, 9]
    counted = [(c.name, c.records_in, c.records_out, c.finished) for c in ctx.counters]
    assert counted == [("rows", 10, 10, True), ("low", 10, 5, True), ("high", 10, 5, True),
                       ("keys", 5, 5, True)]
    with pytest.raises(ValueError, match="after their producers"):
        ChainedOperator([TableSource(ROWS), low, high], ["rows", "low", "high"], parents=[-1, 2, 0])


def task(batches):
    """A task of one input, 4 rows to a batch."""
    return TestingOperatorContext(batches, batch_rows=4)


def test_a_chain_hands_each_batch_down_the_line_and_gives_what_each_operator_would():
    plus = MapOperator(lambda b: b.set_column(1, "v", pc.add(b["v"], 1)), "plus")
    odd = FilterOperator(lambda b: pc.equal(pc.bit_wise_and(b["v"], 1), 1), "odd")
    keys = SelectOperator(["k"])
    batches = ROWS.to_batches(max_chunksize=3)
    alone = task(batches)
    for operator in (plus, odd, keys):
        alone = (operator.run(alone), alone)[1]
        alone = task(alone.out)
    chained = task(batches)
    ChainedOperator([plus, odd, keys], ["plus", "odd", "keys"]).run(chained)
    assert pa.Table.from_batches(chained.out).equals(pa.Table.from_batches(alone.inputs[0]))
    assert pa.Table.from_batches(chained.out).column("k").to_pylist() == [0, 2, 4, 6, 8]
    counted = [(c.name, c.records_in, c.records_out) for c in chained.counters]
    assert counted == [("plus", 10, 10), ("odd", 10, 5), ("keys", 5, 5)]
    assert chained.counters[1].bytes_out == chained.counters[2].bytes_in > 0


def test_each_operators_figures_travel_with_the_task_and_the_vertex_sums_them():
    ops = (OperatorMetrics("rows", 0, 10, 0, 80, finished=True),
           OperatorMetrics("sink", 10, 0, 80, 0))
    metrics = TaskMetrics(records_out=0, operators=ops)
    message = common_pb2.TaskMetrics()
    fill_metrics(metrics, message)
    assert metrics_from_proto(common_pb2.TaskMetrics.FromString(
        message.SerializeToString())).operators == ops
    vertex = VertexDetails("v", "rows -> sink", 2, [SubtaskDetails(i, ExecutionState.FINISHED,
                                                                   metrics=metrics) for i in (0, 1)],
                           operators=["rows", "sink"])
    assert vertex.operator_totals() == [OperatorMetrics("rows", 0, 20, 0, 160),
                                        OperatorMetrics("sink", 20, 0, 160, 0)]
    rest = views._vertex(vertex, None)["operators"]
    assert [(o["name"], o["metrics"]["read-records"], o["metrics"]["write-records"]) for o in rest] \
        == [("rows", 0, 20), ("sink", 20, 0)]
    shown = Console(width=200, record=True)
    shown.print(summary_table(JobDetails(JobID("j"), "job", JobStatus.FINISHED, 0.0, 1.0, [vertex])))
    lines = [line.strip("│ ") for line in shown.export_text().splitlines()]
    assert any(line.startswith("rows -> sink") for line in lines)
    assert any(line.startswith("sink") and "20" in line for line in lines), lines
    alone = VertexDetails("w", "map", 1, [SubtaskDetails(0, ExecutionState.FINISHED, metrics=TaskMetrics(
        records_in=3, records_out=2))])
    assert views._vertex(alone, None)["operators"] == [{"name": "map", "metrics": {
        "read-records": 3, "write-records": 2, "read-bytes": 0, "write-bytes": 0,
        "progress": 1.0}}]


def test_each_operator_of_a_chain_has_its_own_progress():
    """The head finished in both subtasks (its input ended), the aggregate after it
    still flushes in one: the head is done, the aggregate is not, whatever the input says."""
    def subtask(i: int, tail_finished: bool) -> SubtaskDetails:
        ops = (OperatorMetrics("read", 0, 10, finished=True),
               OperatorMetrics("agg", 10, 0, finished=tail_finished))
        return SubtaskDetails(i, ExecutionState.RUNNING, metrics=TaskMetrics(
            inputs_done=4, inputs_total=4, operators=ops))
    vertex = VertexDetails("v", "read -> agg", 2, [subtask(0, True), subtask(1, False)],
                           operators=["read", "agg"])
    assert vertex.progress() == 1.0                   # every input channel ended
    assert vertex.operator_progress("read") == 1.0
    assert vertex.operator_progress("agg") == 0.99
    rest = {o["name"]: o["metrics"]["progress"] for o in views._vertex(vertex, None)["operators"]}
    assert rest == {"read": 1.0, "agg": 0.99}
    shown = Console(width=200, record=True)
    shown.print(progress_table(JobDetails(JobID("j"), "job", JobStatus.RUNNING, 0.0, 0.0, [vertex])))
    rows = {line.strip("│ ").split()[0]: line for line in shown.export_text().splitlines()
            if line.strip("│ ")[:3] in ("rea", "agg")}
    assert rows["read"].rstrip("│ ").endswith("100 %") and rows["agg"].rstrip("│ ").endswith("99 %")


def test_a_chained_vertex_keeps_its_operators_names_over_the_wire(tmp_path):
    graph = line(tmp_path).job_graph(ON)
    (received,) = jobgraph_from_proto(jobgraph_to_proto(graph), load_operators=False).vertices.values()
    assert received.operators == ("rows", "plus-one", "positive", "sink")
    # an edge leaving a chain names the operator that feeds it, for what the run time says
    forked = line(tmp_path, between=lambda ds: ds.rebalance()).job_graph(ON)
    (edge,) = jobgraph_from_proto(jobgraph_to_proto(forked), load_operators=False).edges
    assert (edge.source.name, edge.source_operator, edge.producer_name) == \
        ("rows -> plus-one", "plus-one", "plus-one")


class Holding(OneInputOperator):
    """Holds every batch until its input ends; records how its run ended."""
    ended: list[str] = []

    def open(self, ctx):
        held: list[pa.RecordBatch] = []
        ended = self.ended

        class Run(BatchProcessor):
            def process(self, batch):
                held.append(batch)

            def finish(self):
                ctx.emit(pa.Table.from_batches(held))
                ended.append("finish")

            def close(self):
                ended.append("close")
        return Run()


def test_what_an_operator_holds_reaches_the_next_before_that_one_finishes():
    Holding.ended = []
    out = task(ROWS.to_batches(max_chunksize=4))
    ChainedOperator([MapOperator(lambda b: b, "m"), Holding(), Holding()], ["m", "h1", "h2"]).run(out)
    assert pa.Table.from_batches(out.out).equals(ROWS.combine_chunks())
    assert Holding.ended == ["finish", "finish", "close", "close"]


def test_a_failure_names_the_chained_operator_that_raised_it_and_every_operator_closes():
    Holding.ended = []

    def broken(batch):
        raise ValueError("no such currency")
    chain = ChainedOperator([MapOperator(lambda b: b, "m"), MapOperator(broken, "lookup"), Holding()],
                            ["m", "lookup", "h"])
    with pytest.raises(ValueError, match="no such currency") as raised:
        chain.run(task(ROWS.to_batches()))
    assert failed_operator(raised.value) == "lookup"
    assert Holding.ended == ["close"]


def test_a_cancelled_chain_stops_before_its_next_batch_though_its_last_operator_holds_all():
    """A source's split read into a map and a chained partial aggregate emits nothing
    until the split ends, so nothing left the chain to notice a cancel: a restart
    waited for the whole split (bench/failover.py's recover_ms 1.4 -> 5.4 s, issue 81)."""
    Holding.ended = []
    seen: list[int] = []
    ctx = task(ROWS.to_batches(max_chunksize=2))

    def work(batch):
        seen.append(batch.num_rows)
        ctx.cancelled = len(seen) == 2      # the JobMaster cancels during the second batch
        return batch
    chain = ChainedOperator([MapOperator(lambda b: b, "read"), MapOperator(work, "work"), Holding()],
                            ["read", "work", "aggregate-local"])
    with pytest.raises(TaskCancelled):
        chain.run(ctx)
    assert len(seen) == 2, "no batch went into the chain after the cancel"
    assert Holding.ended == ["close"] and ctx.out == []


def test_only_an_operator_that_takes_its_input_pushed_follows_another():
    with pytest.raises(ValueError, match="operator 'again' cannot follow its producer"):
        ChainedOperator([TableSource(ROWS), TableSource(ROWS)], ["rows", "again"])
    assert MapOperator(lambda b: b, "m").chaining is ChainingStrategy.ALWAYS
    assert TableSource(ROWS).chaining is ChainingStrategy.HEAD


def test_the_readme_examples_plan_chains_its_join_and_sink(tmp_path):
    import examples.skewed_join as example
    data = tmp_path / "data"
    for name, table in [("instruments", pa.table({"InstrumentId": [1, 2], "CurrencyId": [7, 7]})),
                        ("currencies", pa.table({"CurrencyId": [7], "ISOCode": ["EUR"],
                                                 "ISOExtended": ["EUR"]}))]:
        (data / name).mkdir(parents=True)
        pq.write_table(table, data / name / "part-0.parquet")
    plan = plan_json(example.build(str(data), str(tmp_path / "out")).job_graph(ON), ON)
    assert [v["name"] for v in plan["vertices"]] == ["instruments", "currencies", "currency-code",
                                                     "join -> sink"]
    text = explained(example.build(str(data), str(tmp_path / "out")))     # by default
    assert "join -> sink" in text and "join: BROADCAST join" in text


def explained(pipeline: yf.Pipeline) -> str:
    """What `yarnflow explain` prints for it, with the default configuration."""
    from yarnflow.client.explain import plan_renderable
    config = Configuration.load()
    console = Console(record=True, width=300)
    console.print(plan_renderable(pipeline.job_graph(config), config))
    return console.export_text()


def test_explain_shows_a_q1_like_pipeline_as_two_chains_by_default(tmp_path):
    """TPC-H Q1's shape: read, filter, map, aggregate, write is 5 vertices unchained; by
    default the filter and map follow the source, the sink follows the aggregate."""
    (tmp_path / "lineitem").mkdir()
    pq.write_table(pa.table({"flag": ["A", "N"], "qty": [1.0, 2.0], "day": [1, 2]}),
                   tmp_path / "lineitem" / "part-0.parquet")
    p = yf.Pipeline("q1", parallelism=2)
    p.read_parquet(str(tmp_path / "lineitem"), name="parquet-source") \
     .filter(lambda b: pc.less_equal(b["day"], 1), name="shipdate") \
     .map(lambda b: b, name="prep") \
     .aggregate(["flag"], [("qty", "sum")]).write_parquet(str(tmp_path / "out"))
    text = explained(p)
    assert "parquet-source -> shipdate -> prep -> aggregate-local" in text
    assert "aggregate -> parquet-sink" in text and "HASH(flag) <- parquet-source -> shipdate -> prep" in text
    graph = p.job_graph(Configuration.load())
    assert sum(v.parallelism for v in graph.vertices.values()) == 4
    assert sum(v.parallelism for v in p.job_graph(OFF).vertices.values()) == 12   # with aggregate-local



def test_a_chains_figures_survive_the_job_event_log():
    """Job recovery reads finished subtasks back from the event log (JSON on the
    cluster's file system): each chained operator's figures come back as they were."""
    import json
    from yarnflow.appmaster.jobmaster.job_events import FinishedSubtask
    metrics = TaskMetrics(records_out=5, records_in_per_input=(3,), produced_bytes=((1, 2),),
                          operators=(OperatorMetrics("a", 0, 5, finished=True),
                                     OperatorMetrics("b", 5, 5, 40, 40)))
    done = FinishedSubtask("v", 0, 1, {"RUNNING": 1.0}, metrics)
    assert FinishedSubtask.from_json(json.loads(json.dumps(done.to_json()))) == done
