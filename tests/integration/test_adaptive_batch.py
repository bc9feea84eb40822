"""Adaptive batch execution on the local target (issue 36): an operator after a BLOCKING
exchange gets its parallelism from the bytes its finished producers measured, with real
TaskExecutor subprocesses and real exchanges; the output is exact either way."""
from __future__ import annotations

import json
import urllib.request

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import yarnflow.client as yf
from tests.conftest import FAST
from yarnflow.appmaster.jobmaster.executiongraph import JobStatus
from yarnflow.client.targets.local import LocalCluster
from yarnflow.conf import Configuration

ROWS = 200_000
TABLE = pa.table({"k": [i % 1000 for i in range(ROWS)], "v": list(range(ROWS))})


def _config(*extra: str) -> Configuration:
    """Adaptive execution; aggregates in one phase, so that every row crosses the
    exchange and the bytes measured there are the rows'."""
    return Configuration.load(overrides=FAST + ["execution.batch.adaptive.enabled=true",
                                                "parallelism.default=4",
                                                "table.optimizer.agg-phase-strategy=ONE_PHASE",
                                                *extra])


def _filter_then_aggregate(out: str, keep_below: int) -> yf.Pipeline:
    p = yf.Pipeline("adaptive")
    p.from_arrow(TABLE).filter(lambda b: pc.less(b["v"], keep_below), name="keep") \
     .aggregate(["k"], [("v", "sum"), ("v", "count")]).write_parquet(out)
    return p


def _expected(keep_below: int) -> pa.Table:
    kept = TABLE.filter(pc.less(TABLE["v"], keep_below))
    return kept.group_by("k").aggregate([("v", "sum"), ("v", "count")]) \
               .select(["k", "v_sum", "v_count"]).sort_by("k")


def _run(config: Configuration, pipeline: yf.Pipeline, rest: dict | None = None):
    """The finished job's details; ``rest`` gets the web UI's answer for the job."""
    graph = pipeline.job_graph(config)
    with LocalCluster(config) as cluster:
        client = cluster.submit(graph)
        result = client.wait(180)
        if rest is not None:
            with urllib.request.urlopen(f"{cluster.web.url}jobs/{client.job_id}", timeout=10) as answer:
                rest.update(json.loads(answer.read()))
    assert result.status is JobStatus.FINISHED, result.failure
    return result.details


def test_a_99_percent_filter_leaves_the_aggregate_the_minimum_parallelism(tmp_path):
    out = str(tmp_path / "out")
    rest: dict = {}
    job = _run(_config("local.web-ui=true"), _filter_then_aggregate(out, ROWS // 100), rest)
    aggregate, keep = job.vertex_running("aggregate"), job.vertex_running("keep")
    assert aggregate.operators == ["aggregate", "parquet-sink"]   # a chain, decided as one
    assert keep.operators == ["arrow-source", "keep", "aggregate-local"]   # passing rows on
    assert keep.parallelism == 4              # before the exchange: configured
    assert aggregate.parallelism == 1 and len(aggregate.subtasks) == 1
    assert "parallelism 1 decided at run time (configured 4)" in aggregate.decision
    assert "measured" in aggregate.decision
    assert keep.decision == ""
    shown = {v["name"]: v["decision"] for v in rest["vertices"]}   # the web UI's REST API
    assert shown == {v.name: v.decision for v in job.vertices}
    got = pq.read_table(out).select(["k", "v_sum", "v_count"]).sort_by("k")
    assert got.equals(_expected(ROWS // 100))


def test_the_measured_bytes_decide_more_subtasks_and_each_reads_its_own_range(tmp_path):
    """The same pipeline without the filter's cut, at 200 KB per subtask: several
    aggregate subtasks, every key in exactly one of them, each row counted once."""
    out = str(tmp_path / "out")
    config = _config("execution.batch.adaptive.auto-parallelism.avg-data-volume-per-task=200 kb",
                     "execution.batch.adaptive.auto-parallelism.max-parallelism=16")
    job = _run(config, _filter_then_aggregate(out, ROWS))
    aggregate = job.vertex_running("aggregate")
    measured = sum(sum(sum(sizes) for sizes in s.metrics.produced_bytes)
                   for s in job.vertex_running("keep").subtasks)
    assert measured >= ROWS * 16          # two int64 columns, every row kept
    expected = min(16, -(-measured // (200 * 1024)))
    assert 1 < aggregate.parallelism <= expected, (aggregate.parallelism, measured)
    per_subtask = [s.metrics.records_in for s in aggregate.subtasks]
    assert sum(per_subtask) == ROWS and min(per_subtask) > 0
    got = pq.read_table(out).select(["k", "v_sum", "v_count"]).sort_by("k")
    assert got.equals(_expected(ROWS))


def test_a_vertex_whose_parallelism_the_user_set_keeps_it(tmp_path):
    out = str(tmp_path / "out")
    p = yf.Pipeline("fixed")
    p.from_arrow(TABLE).filter(lambda b: pc.less(b["v"], ROWS // 100), name="keep") \
     .aggregate(["k"], [("v", "sum"), ("v", "count")]).set_parallelism(3).write_parquet(out)
    job = _run(_config(), p)
    assert job.vertex_running("aggregate").parallelism == 3 and job.vertex_running("aggregate").decision == ""
    got = pq.read_table(out).select(["k", "v_sum", "v_count"]).sort_by("k")
    assert got.equals(_expected(ROWS // 100))


# --- joins ---------------------------------------------------------------------------------
def _joined(left: pa.Table, right: pa.Table) -> pa.Table:
    out = left.join(right, keys="k", join_type="inner", right_suffix="_right",
                    coalesce_keys=True)
    return out.select(sorted(out.column_names)).sort_by([(c, "ascending")
                                                          for c in sorted(out.column_names)])


def _read_sorted(out: str) -> pa.Table:
    got = pq.read_table(out)
    got = got.select(sorted(got.column_names))
    return got.sort_by([(c, "ascending") for c in got.column_names])


FACTS = pa.table({"k": [i % 5000 for i in range(ROWS)], "v": list(range(ROWS))})
OTHER = pa.table({"k": [i % 5000 for i in range(ROWS)], "w": [i * 2 for i in range(ROWS)]})


def test_a_join_side_estimated_large_that_measured_small_is_broadcast(tmp_path):
    out = str(tmp_path / "out")
    config = _config("planner.broadcast-threshold=1 mb")
    p = yf.Pipeline("switch")
    small = p.from_arrow(OTHER, name="other").filter(lambda b: pc.less(b["w"], 4000),
                                                     name="few")
    p.from_arrow(FACTS, name="facts").join(small, on="k").write_parquet(out)
    graph = p.job_graph(config)
    [plan] = graph.join_plans.values()
    assert plan.strategy.name == "AUTO"          # the estimates said: both over 1 MB
    join = _run(config, p).vertex_running("join")
    assert "join switched to broadcast: few measured" in join.decision, join.decision
    # every subtask read the whole small side, and its own share of the facts
    assert [s.metrics.records_in_per_input[1] for s in join.subtasks] == [2000] * join.parallelism
    assert sum(s.metrics.records_in_per_input[0] for s in join.subtasks) == ROWS
    kept = OTHER.filter(pc.less(OTHER["w"], 4000))
    assert _read_sorted(out).equals(_joined(FACTS, kept))


def test_a_join_side_estimated_small_that_measured_large_is_hashed(tmp_path):
    out = str(tmp_path / "out")
    config = _config("planner.broadcast-threshold=1 mb",
                     "execution.batch.adaptive.auto-parallelism.avg-data-volume-per-task=1 mb")
    p = yf.Pipeline("reverse")
    large = p.from_arrow(OTHER, name="other").map(lambda b: b, name="many",
                                                  selectivity=0.001)
    p.from_arrow(FACTS, name="facts").join(large, on="k").write_parquet(out)
    join = _run(config, p).vertex_running("join")
    assert join.decision.count("hash join: facts measured") == 1, join.decision
    assert join.parallelism > 1
    # each subtask read only its share of both sides: no side went whole to all
    assert sum(s.metrics.records_in_per_input[1] for s in join.subtasks) == ROWS
    assert sum(s.metrics.records_in_per_input[0] for s in join.subtasks) == ROWS
    assert _read_sorted(out).equals(_joined(FACTS, OTHER))


@pytest.mark.parametrize("layout", ["spread", "bunched"])
def test_a_zipf_skewed_key_is_split_and_the_join_stays_balanced_and_exact(tmp_path, layout):
    """The top key holds 35 % of the facts, spread through the input as a real key's
    rows are, or bunched at its start (sorted by key): its partition is split among
    subtasks by producer, a producer's share that alone is too large by batch, each
    reading the dimension's matching rows whole."""
    out = str(tmp_path / "out")
    hot = [(i * 7919) % 100 < 35 for i in range(ROWS)] if layout == "spread" else \
        [i < ROWS * 35 // 100 for i in range(ROWS)]
    facts = pa.table({"k": [0 if h else 1 + i % 4999 for i, h in enumerate(hot)],
                      "v": list(range(ROWS))})
    assert pc.sum(pc.equal(facts["k"], 0)).as_py() >= ROWS * 0.3
    dims = pa.table({"k": list(range(5000)), "name": [f"d{i}" for i in range(5000)]})
    config = _config("execution.batch.adaptive.auto-parallelism.avg-data-volume-per-task=400 kb",
                     "table.optimizer.skewed-join-optimization.skewed-threshold=100 kb")
    p = yf.Pipeline("skew")
    p.from_arrow(facts, name="facts").join(p.from_arrow(dims, name="dims"), on="k",
                                           strategy="hash").write_parquet(out)
    join = _run(config, p).vertex_running("join")
    assert "skewed partition(s) split" in join.decision, join.decision
    records = [s.metrics.records_in for s in join.subtasks]
    assert max(records) / (sum(records) / len(records)) <= 1.3, \
        [s.metrics.records_in_per_input for s in join.subtasks]
    assert sum(s.metrics.records_in_per_input[0] for s in join.subtasks) == ROWS
    assert _read_sorted(out).equals(_joined(facts, dims))


# --- slot profiles -------------------------------------------------------------------------
def two_stages(out_big: str, out_small: str, rows: int = 400_000) -> yf.Pipeline:
    """Two stages after a rebalance, one reading ten times the bytes of the other; the
    sources in slots of the smallest size (an executor a later stage may reuse: a free
    slot of the very profile asked for goes first)."""
    p = yf.Pipeline("two-stages")
    big = pa.table({"k": list(range(rows)), "v": list(range(rows))})
    small = big.slice(0, rows // 10)
    light = yf.ResourceSpec(1, "64m")
    p.from_arrow(big, name="big").resources(light).rebalance() \
     .map(lambda b: b, name="big-stage").write_parquet(out_big, name="big-sink")
    p.from_arrow(small, name="small").resources(light).rebalance() \
     .map(lambda b: b, name="small-stage").write_parquet(out_small, name="small-sink")
    return p


SIZED = ["execution.batch.adaptive.auto-parallelism.avg-data-volume-per-task=64 mb",
         "execution.batch.adaptive.slot-memory.read-factor=100"]


def test_stages_that_read_ten_times_apart_get_slots_and_executors_of_different_memory(tmp_path):
    config = _config(*SIZED)
    graph = two_stages(str(tmp_path / "big"), str(tmp_path / "small")).job_graph(config)
    with LocalCluster(config) as cluster:
        result = cluster.submit(graph).wait(180)
        started = dict(cluster.overview().workers_started_per_spec)
    assert result.status is JobStatus.FINISHED, result.failure
    job = result.details
    big = {s.slot_profile.memory_mb for s in job.vertex_running("big-stage").subtasks}
    small = {s.slot_profile.memory_mb for s in job.vertex_running("small-stage").subtasks}
    assert big == {1024} and small == {64}, (big, small)   # 6.1 MB and 625 KB read, x100
    assert "slots of 1c-1024m for the 6.1 MB" in job.vertex_running("big-stage").decision
    assert {s.worker_spec for s in job.vertex_running("big-sink").subtasks} == {"1x1c-1024m"}
    assert started.get("1x1c-1024m") and started.get("1x1c-64m"), started
    assert pq.read_table(tmp_path / "big").num_rows == 400_000
    assert pq.read_table(tmp_path / "small").num_rows == 40_000


def test_a_resource_spec_the_user_set_wins_over_sizing(tmp_path):
    config = _config(*SIZED)
    p = yf.Pipeline("explicit")
    p.from_arrow(TABLE).rebalance().map(lambda b: b, name="set").resources(yf.ResourceSpec(1, "768m")) \
     .write_parquet(str(tmp_path / "out"))
    job = _run(config, p)
    assert {s.slot_profile.memory_mb for s in job.vertex_running("set").subtasks} == {768}
    assert "slots of" not in job.vertex_running("set").decision and job.vertex_running("set").parallelism == 1


def test_the_web_page_shows_each_decision_with_its_bytes(tmp_path, chromium):
    from tests.conftest import artifacts_dir, browse
    config = _config("local.web-ui=true")
    graph = _filter_then_aggregate(str(tmp_path / "out"), ROWS // 100).job_graph(config)
    with LocalCluster(config) as cluster:
        client = cluster.submit(graph)
        assert client.wait(180).status is JobStatus.FINISHED
        dom = browse(chromium, f"{cluster.web.url}#/jobs/{client.job_id}",
                     artifacts_dir() / "web-ui-adaptive.png")
    chain = "aggregate -&gt; parquet-sink"      # the aggregate chained to its sink, as HTML
    assert "Decided at run time" in dom and f'data-decision="{chain}"' in dom, dom[-2000:]
    assert "parallelism 1 decided at run time (configured 4): its inputs measured" in dom
    assert f"{chain} ×1" in dom and "FINISHED · 1c-64m" in dom     # its slots as sized


def test_a_session_job_decides_with_its_own_adaptive_options_not_the_sessions(tmp_path):
    """The session runs without adaptive execution; one job turns it on with a minimum of
    2 subtasks. Its JobMaster decides with the job's options (Flink's job-level
    configuration): the aggregate gets 2 subtasks, its slots sized, the output exact."""
    out = str(tmp_path / "out")
    session_config = Configuration.load(overrides=FAST)
    job_config = _config("execution.batch.adaptive.auto-parallelism.min-parallelism=2")
    graph = _filter_then_aggregate(out, ROWS // 100).job_graph(job_config)
    with LocalCluster(session_config, session=True) as session:
        details = session.dispatcher.wait(session.dispatcher.submit(graph), 180)
    assert details.status is JobStatus.FINISHED, details.failure
    aggregate = details.vertex_running("aggregate")
    assert aggregate.parallelism == 2 and "configured 4" in aggregate.decision
    assert "slots of" in aggregate.decision, aggregate.decision
    got = pq.read_table(out).select(["k", "v_sum", "v_count"]).sort_by("k")
    assert got.equals(_expected(ROWS // 100))
