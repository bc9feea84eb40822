"""Operator chains on the local target (issue 55): a chain headed by a source whose
splits the JobMaster hands out runs as one task per subtask and writes what the
unchained pipeline writes; a failure in the middle of a chain names its operator and
the user's line. (The README example chained: tests/integration/test_skewed_join.py.)"""
from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import yarnflow.client as yf
from tests.conftest import FAST, NO_RESTART
from yarnflow.appmaster.jobmaster.executiongraph import JobStatus
from yarnflow.conf import Configuration
from yarnflow.client.targets.local import LocalCluster

CHAINED = ["pipeline.operator-chaining.enabled=true", "pipeline.batch-rows=1000"]
ROWS = pa.table({"k": pa.array([i % 97 for i in range(20_000)], pa.int64()),
                 "v": pa.array(range(20_000), pa.int64())})


@pytest.fixture(scope="module")
def cluster():
    with LocalCluster(Configuration.load(overrides=FAST + NO_RESTART + CHAINED)) as local:
        yield local


def pipeline(source: str, out: str, lookup=lambda b: b) -> yf.Pipeline:
    p = yf.Pipeline("chained", parallelism=2)
    p.read_parquet(source, name="facts") \
     .map(lambda b: b.set_column(1, "v", pc.multiply(b["v"], 3)), name="triple") \
     .filter(lambda b: pc.equal(pc.bit_wise_and(b["k"], 1), 0), name="even-keys") \
     .map(lookup, name="lookup") \
     .select("k", "v").write_parquet(out, name="sink")
    return p


@pytest.fixture(scope="module")
def facts(tmp_path_factory):
    directory = tmp_path_factory.mktemp("facts")
    for i in range(4):
        pq.write_table(ROWS.slice(i * 5_000, 5_000), directory / f"part-{i}.parquet")
    return directory


def test_a_source_headed_chain_runs_as_one_task_per_subtask_and_writes_the_unchained_output(
        cluster, facts, tmp_path):
    config = Configuration.load(overrides=FAST + CHAINED)
    graph = pipeline(str(facts), str(tmp_path / "chained")).job_graph(config)
    result = cluster.submit(graph).wait(120)
    assert result.status is JobStatus.FINISHED, result.failure
    (vertex,) = result.details.vertices
    assert vertex.name == "facts -> triple -> even-keys -> lookup -> select -> sink"
    assert len(vertex.subtasks) == 2
    splits = sum(s.metrics.inputs_done for s in vertex.subtasks)
    # each operator its own figures, summed over the subtasks: (name, in, out)
    assert [(op.name, op.records_in, op.records_out) for op in vertex.operator_totals()] == [
        ("facts", 0, 20_000), ("triple", 20_000, 20_000), ("even-keys", 20_000, 10_103),
        ("lookup", 10_103, 10_103), ("select", 10_103, 10_103), ("sink", 10_103, 0)]
    assert sum(s.metrics.records_out for s in vertex.subtasks) == 0    # a sink's chain: no output

    unchained = pipeline(str(facts), str(tmp_path / "alone")).job_graph(
        Configuration.load(overrides=FAST + ["pipeline.operator-chaining.enabled=false"]))
    assert len(unchained.vertices) == 6
    result = cluster.submit(unchained).wait(120)
    assert result.status is JobStatus.FINISHED, result.failure
    # the JobMaster handed the chain's head every split it hands the source alone
    source = next(v for v in result.details.vertices if v.name == "facts")
    assert splits == sum(s.metrics.inputs_done for s in source.subtasks) >= 4
    got, want = (pq.read_table(tmp_path / d).sort_by([("k", "ascending"), ("v", "ascending")])
                 for d in ("chained", "alone"))
    even = ROWS.filter(pc.equal(pc.bit_wise_and(ROWS["k"], 1), 0))
    reference = pa.table({"k": even["k"], "v": pc.multiply(even["v"], 3)}).sort_by(
        [("k", "ascending"), ("v", "ascending")])
    assert got.num_rows == 10_103 and got.equals(want) and got.equals(reference)


def test_a_failure_inside_a_chain_names_the_operator_and_the_users_line(cluster, facts, tmp_path):
    def lookup(batch: pa.RecordBatch) -> pa.RecordBatch:
        raise KeyError("no rate for currency 7")      # the line the failure shows
    graph = pipeline(str(facts), str(tmp_path / "out"), lookup).job_graph(
        Configuration.load(overrides=FAST + CHAINED))
    result = cluster.submit(graph).wait(120)
    assert result.status is JobStatus.FAILED
    assert "operator 'lookup' of facts -> triple -> even-keys -> lookup -> select -> sink (" \
        in result.failure, result.failure
    assert "KeyError: 'no rate for currency 7'" in result.failure
    assert 'raise KeyError("no rate for currency 7")' in result.failure, result.failure
    assert not (tmp_path / "out").exists()


def test_a_forked_source_runs_both_branches_in_one_task_and_each_edge_gets_its_operators_rows(
        cluster, facts, tmp_path):
    """A tree: the source feeds a filter chained with its sink and another filter whose
    rows leave the chain through a hash exchange; both outputs are exact."""
    p = yf.Pipeline("fork", parallelism=2)
    source = p.read_parquet(str(facts), name="facts")
    source.filter(lambda b: pc.less(b["k"], 10), name="low") \
        .write_parquet(str(tmp_path / "low"), name="low-sink")
    source.filter(lambda b: pc.greater_equal(b["k"], 90), name="high") \
        .aggregate(["k"], [("v", "sum")]).write_parquet(str(tmp_path / "high"), name="high-sink")
    result = cluster.submit(p.job_graph(Configuration.load(overrides=FAST + CHAINED))).wait(120)
    assert result.status is JobStatus.FINISHED, result.failure
    assert [v.name for v in result.details.vertices] == [
        "facts -> (low -> low-sink, high -> aggregate-local)", "aggregate -> high-sink"]
    low = ROWS.filter(pc.less(ROWS["k"], 10))
    high = ROWS.filter(pc.greater_equal(ROWS["k"], 90)).group_by("k").aggregate([("v", "sum")])
    got_low = pq.read_table(tmp_path / "low").sort_by([("k", "ascending"), ("v", "ascending")])
    assert got_low.equals(low.sort_by([("k", "ascending"), ("v", "ascending")]))
    got_high = pq.read_table(tmp_path / "high").select(["k", "v_sum"]).sort_by("k")
    assert got_high.equals(high.select(["k", "v_sum"]).sort_by("k"))
    tree = {op.name: (op.records_in, op.records_out)
            for op in result.details.vertex_running("facts").operator_totals()}
    local_in, local_out = tree.pop("aggregate-local")     # each subtask's 10 keys' partial sums
    assert local_in == 1_442 and 10 <= local_out <= 20, (local_in, local_out)
    assert tree == {"facts": (0, 20_000), "low": (20_000, low.num_rows),
                    "low-sink": (low.num_rows, 0), "high": (20_000, 1_442)}


@pytest.mark.parametrize("chained, extra", [
    (True, []), (False, ["pipeline.operator-chaining.enabled=false"]),
    (True, ["execution.batch.adaptive.enabled=true"])])
def test_a_source_feeding_one_consumer_twice_ends_when_one_branch_keeps_nothing(
        cluster, facts, tmp_path, chained, extra):
    """Stage by stage, a consumer waits for its inputs to be consumable. The source
    feeds the union both at once and through a filter that keeps no row (and a select
    after it, its own vertex unchained): the source stops at its full output to the
    union until the union reads it, so the union must not wait for the filter's first
    batch or end (which never come), and a task must end (and so announce) an empty
    output before it waits for another to be read."""
    p = yf.Pipeline("union-of-a-fork", parallelism=2, schedule_mode="LAZY_FROM_SOURCES")
    source = p.read_parquet(str(facts), name="facts")
    none = source.filter(lambda b: pc.less(b["k"], 0), name="none").select("k", "v")
    source.union(none).aggregate(["k"], [("v", "count")]) \
        .write_parquet(str(tmp_path / "out"), name="sink")
    config = Configuration.load(overrides=FAST + CHAINED + extra)
    result = cluster.submit(p.job_graph(config)).wait(60)
    assert result.status is JobStatus.FINISHED, result.failure
    assert (result.details.vertices[0].name == "facts -> none -> select") is chained
    got = pq.read_table(tmp_path / "out").select(["k", "v_count"]).sort_by("k")
    assert got.equals(ROWS.group_by("k").aggregate([("v", "count")]).select(["k", "v_count"])
                      .sort_by("k"))
