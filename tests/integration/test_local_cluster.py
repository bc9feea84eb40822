"""The runtime on the local target: real TaskExecutor subprocesses, real gRPC with
mutual TLS, real Arrow Flight exchange."""
from __future__ import annotations

import os
import shutil
import signal
import time

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import yarnflow.client as yf
from tests.conftest import FAST, NO_RESTART, wait_until
from yarnflow.appmaster.jobmaster.executiongraph import JobStatus
from yarnflow.conf import Configuration
from yarnflow.core.jobgraph import InvalidPipelineError
from yarnflow.core.status import ExecutionState
from yarnflow.client.targets.local import LocalCluster


def _slow(batch: pa.RecordBatch) -> pa.RecordBatch:
    time.sleep(0.2)   # workload: keeps the job running while the test acts on it
    return batch


def test_hash_shuffle_and_aggregate_match_pyarrow(fast_config, tmp_path):
    table = pa.table({"k": [i % 37 for i in range(50_000)], "v": list(range(50_000))})
    p = yf.Pipeline("agg", parallelism=3)
    p.from_arrow(table).filter(lambda b: pc.greater(b["v"], 10)) \
     .aggregate(["k"], [("v", "sum"), ("v", "count")]).write_parquet(str(tmp_path / "out"))
    with LocalCluster(fast_config) as cluster:
        result = cluster.submit(p.job_graph(fast_config)).wait(120)
    assert result.status is JobStatus.FINISHED, result.failure
    got = pq.read_table(tmp_path / "out").sort_by("k")
    want = table.filter(pc.greater(table["v"], 10)).group_by("k") \
                .aggregate([("v", "sum"), ("v", "count")]).sort_by("k")
    assert got.select(["k", "v_sum", "v_count"]).equals(want.select(["k", "v_sum", "v_count"]))


def test_two_profiles_start_exactly_those_worker_specs_and_idle_ones_are_released(tmp_path):
    config = Configuration.load(overrides=[
        "heartbeat.interval=0.5 s", "resourcemanager.taskmanager-timeout=2 s",
        "slot.idle.timeout=1 s"])
    table = pa.table({"x": list(range(1000))})
    p = yf.Pipeline("profiles", parallelism=2, exchange="blocking")
    light = p.from_arrow(table, name="light").resources(yf.ResourceSpec(1, "1g")) \
             .slot_sharing_group("light")
    light.rebalance().map(lambda b: b, name="heavy").resources(yf.ResourceSpec(2, "3g")) \
         .slot_sharing_group("heavy").write_parquet(str(tmp_path / "out"))
    with LocalCluster(config) as cluster:
        result = cluster.submit(p.job_graph(config)).wait(120)
        assert result.status is JobStatus.FINISHED, result.failure
        started = dict(cluster.overview().workers_started_per_spec)
        assert started == {"1x1c-1024m": 2, "1x2c-3072m": 2}
        # when (resourcemanager.taskmanager-timeout after going idle) is the unit tier's,
        # on a manual clock: here, that real executors do go
        wait_until(lambda: not cluster.overview().workers, 60, "idle executors released")


def test_without_restarts_a_killed_task_executor_fails_the_job_naming_it_and_its_subtasks(
        tmp_path):
    config = Configuration.load(overrides=FAST + ["pipeline.batch-rows=100",  # 20 slow batches
                                                  "restart-strategy.type=none"])
    table = pa.table({"x": list(range(4000))})
    p = yf.Pipeline("victim", parallelism=2)
    p.from_arrow(table).map(_slow, name="slow").write_parquet(str(tmp_path / "out"))
    with LocalCluster(config) as cluster:
        client = cluster.submit(p.job_graph(config))
        wait_until(lambda: all(s.state == ExecutionState.RUNNING for v in client.details().vertices
                               for s in v.subtasks), 60, "all subtasks RUNNING")
        victim = cluster.overview().workers[0].resource_id
        os.kill(cluster.driver.pid_of(victim), signal.SIGKILL)
        result = client.wait(60)
    assert result.status is JobStatus.FAILED
    assert victim in result.failure
    assert "SIGKILL" in result.failure
    assert "lost subtasks:" in result.failure, result.failure
    assert "arrow-source -> slow -> parquet-sink (" in result.failure    # one chained task each
    assert "restart-strategy.type is none" in result.failure


def test_user_code_error_fails_the_job_with_the_vertex_and_the_exception(tmp_path):
    fast_config = Configuration.load(overrides=FAST + NO_RESTART)

    def explode(batch: pa.RecordBatch) -> pa.RecordBatch:
        raise ValueError("bad record 42")
    p = yf.Pipeline("boom", parallelism=2)
    p.from_arrow(pa.table({"x": [1, 2, 3, 4]})).map(explode).write_parquet(str(tmp_path / "o"))
    with LocalCluster(fast_config) as cluster:
        result = cluster.submit(p.job_graph(fast_config)).wait(60)
    assert result.status is JobStatus.FAILED
    assert "operator 'explode' of arrow-source -> explode -> parquet-sink (" in result.failure
    assert "ValueError: bad record 42" in result.failure
    assert "Traceback" in result.failure_detail


def test_missing_input_is_refused_at_planning_and_fails_the_job_if_gone_by_run_time(
        fast_config, tmp_path):
    p = yf.Pipeline("missing")
    p.read_parquet(str(tmp_path / "nope")).write_parquet(str(tmp_path / "o"))
    with pytest.raises(InvalidPipelineError, match=r"vertex 'parquet-source': input "
                       r"file://.*/nope does not exist\. Fix: check the path"):
        p.job_graph(fast_config)

    data = tmp_path / "data"
    data.mkdir()
    pq.write_table(pa.table({"x": [1, 2]}), data / "a.parquet")
    p = yf.Pipeline("vanished")
    p.read_parquet(str(data)).write_parquet(str(tmp_path / "o"))
    graph = p.job_graph(fast_config)
    shutil.rmtree(data)
    with LocalCluster(fast_config) as cluster:
        result = cluster.submit(graph).wait(60)
    assert result.status is JobStatus.FAILED
    assert "parquet-source" in result.failure and "does not exist" in result.failure
    assert not list(tmp_path.glob(".o.yarnflow-*")), "a job that never started left staging"


def test_cancel_ends_the_job_canceled_and_frees_its_slots(tmp_path):
    config = Configuration.load(overrides=FAST + ["pipeline.batch-rows=100"])
    p = yf.Pipeline("cancel-me", parallelism=2)
    p.from_arrow(pa.table({"x": list(range(4000))})).map(_slow).write_parquet(str(tmp_path / "o"))
    with LocalCluster(config) as cluster:
        client = cluster.submit(p.job_graph(config))
        wait_until(lambda: any(s.state == ExecutionState.RUNNING for v in client.details().vertices
                               for s in v.subtasks), 60, "a subtask RUNNING")
        client.cancel()
        result = client.wait(30)
        assert result.status is JobStatus.CANCELED
        wait_until(lambda: all(w.free_slots == w.num_slots for w in cluster.overview().workers),
                   10, "slots freed after cancel")


def test_csv_source_flat_map_and_hash_join_match_pyarrow(fast_config, tmp_path):
    import pyarrow.csv as pacsv
    orders = pa.table({"customer": [i % 50 for i in range(3000)], "amount": list(range(3000))})
    customers = pa.table({"customer": list(range(50)), "region": [f"r{i % 4}" for i in range(50)]})
    for i in range(3):
        pacsv.write_csv(orders.slice(i * 1000, 1000), tmp_path / f"orders-{i}.csv")

    def split_in_two(batch: pa.RecordBatch):
        half = batch.num_rows // 2
        return [batch.slice(0, half), batch.slice(half)]
    p = yf.Pipeline("csv-join", parallelism=2)
    p.read_csv(str(tmp_path)).flat_map(split_in_two) \
     .join(p.from_arrow(customers), on="customer", strategy="hash") \
     .write_parquet(str(tmp_path / "out"))
    with LocalCluster(fast_config) as cluster:
        result = cluster.submit(p.job_graph(fast_config)).wait(120)
    assert result.status is JobStatus.FINISHED, result.failure
    got = pq.read_table(tmp_path / "out").sort_by("amount")
    want = orders.join(customers, keys="customer").sort_by("amount")
    assert got.num_rows == 3000
    assert got.column("region").to_pylist() == want.column("region").to_pylist()
