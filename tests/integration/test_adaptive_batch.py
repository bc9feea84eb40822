"""Adaptive batch execution on the local target (issue 36): an operator after a BLOCKING
exchange gets its parallelism from the bytes its finished producers measured, with real
TaskExecutor subprocesses and real exchanges; the output is exact either way."""
from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

import yarnflow.client as yf
from tests.conftest import FAST
from yarnflow.appmaster.jobmaster.executiongraph import JobStatus
from yarnflow.client.targets.local import LocalCluster
from yarnflow.conf import Configuration

ROWS = 200_000
TABLE = pa.table({"k": [i % 1000 for i in range(ROWS)], "v": list(range(ROWS))})


def _config(*extra: str) -> Configuration:
    return Configuration.load(overrides=FAST + ["execution.batch.adaptive.enabled=true",
                                                "parallelism.default=4", *extra])


def _filter_then_aggregate(out: str, keep_below: int) -> yf.Pipeline:
    p = yf.Pipeline("adaptive")
    p.from_arrow(TABLE).filter(lambda b: pc.less(b["v"], keep_below), name="keep") \
     .aggregate(["k"], [("v", "sum"), ("v", "count")]).write_parquet(out)
    return p


def _expected(keep_below: int) -> pa.Table:
    kept = TABLE.filter(pc.less(TABLE["v"], keep_below))
    return kept.group_by("k").aggregate([("v", "sum"), ("v", "count")]) \
               .select(["k", "v_sum", "v_count"]).sort_by("k")


def _run(config: Configuration, pipeline: yf.Pipeline):
    graph = pipeline.job_graph(config)
    with LocalCluster(config) as cluster:
        result = cluster.submit(graph).wait(180)
    assert result.status is JobStatus.FINISHED, result.failure
    return {v.name: v for v in result.details.vertices}


def test_a_99_percent_filter_leaves_the_aggregate_the_minimum_parallelism(tmp_path):
    out = str(tmp_path / "out")
    vertices = _run(_config(), _filter_then_aggregate(out, ROWS // 100))
    aggregate, sink = vertices["aggregate"], vertices["parquet-sink"]
    assert vertices["keep"].parallelism == 4              # before the exchange: configured
    assert aggregate.parallelism == 1 and len(aggregate.subtasks) == 1
    assert sink.parallelism == 1                          # FORWARD after it: follows
    assert "parallelism 1 decided at run time (configured 4)" in aggregate.decision
    assert "measured" in aggregate.decision and "FORWARD input 'aggregate'" in sink.decision
    assert vertices["keep"].decision == ""
    got = pq.read_table(out).select(["k", "v_sum", "v_count"]).sort_by("k")
    assert got.equals(_expected(ROWS // 100))


def test_the_measured_bytes_decide_more_subtasks_and_each_reads_its_own_range(tmp_path):
    """The same pipeline without the filter's cut, at 200 KB per subtask: several
    aggregate subtasks, every key in exactly one of them, each row counted once."""
    out = str(tmp_path / "out")
    config = _config("execution.batch.adaptive.auto-parallelism.avg-data-volume-per-task=200 kb",
                     "execution.batch.adaptive.auto-parallelism.max-parallelism=16")
    vertices = _run(config, _filter_then_aggregate(out, ROWS))
    aggregate = vertices["aggregate"]
    measured = sum(sum(sum(sizes) for sizes in s.metrics.produced_bytes)
                   for s in vertices["keep"].subtasks)
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
    vertices = _run(_config(), p)
    assert vertices["aggregate"].parallelism == 3 and vertices["aggregate"].decision == ""
    got = pq.read_table(out).select(["k", "v_sum", "v_count"]).sort_by("k")
    assert got.equals(_expected(ROWS // 100))
