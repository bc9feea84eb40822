"""A job's Parquet output appears whole or not at all."""
from __future__ import annotations

import time

import pyarrow as pa
import pyarrow.parquet as pq

import yarnflow.client as yf
from tests.conftest import wait_until
from yarnflow.appmaster.jobmaster.executiongraph import JobStatus
from yarnflow.conf import options
from yarnflow.client.targets.local import LocalCluster

TABLE = pa.table({"x": pa.array(range(40_000), pa.int64())})


def _slow_after_first(batch: pa.RecordBatch) -> pa.RecordBatch:
    # the workload: subtask 0 passes its first batch quickly, then every one slowly,
    # so the sink has written some rows when the job is killed
    if batch["x"][0].as_py() >= 1000:
        time.sleep(0.3)
    return batch


def pipeline(out: str, slow: bool) -> yf.Pipeline:
    p = yf.Pipeline("commit", parallelism=2)
    source = p.from_arrow(TABLE)
    data = source.map(_slow_after_first, name="slow") if slow else source
    data.write_parquet(out, name="sink")
    return p


def test_a_second_job_writing_a_running_jobs_output_is_refused_and_the_first_commits_whole(
        fast_config, tmp_path):
    """Two writers of one output: the second must not clear the first one's staging
    as a crashed job's leftovers (it did: the first then failed, its files gone)."""
    fast_config.set(options.BATCH_ROWS, 1000)
    out = tmp_path / "out"
    with LocalCluster(fast_config) as cluster:
        first = cluster.submit(pipeline(str(out), slow=True).job_graph(fast_config))
        wait_until(lambda: list(tmp_path.glob(".out.yarnflow-staging-*/_temporary/part-*")), 60,
                   "the first job's sink to be writing into its staging directory")
        second = cluster.submit(pipeline(str(out), slow=False).job_graph(fast_config)).wait(60)
        assert second.status is JobStatus.FAILED
        assert f"cannot write its output: output file://{out} is being written " \
            f"by job {first.job_id}, whose JobMaster renewed its lease" in second.failure
        result = first.wait(120)
    assert result.status is JobStatus.FINISHED, result.failure
    assert pq.read_table(out).sort_by("x").equals(TABLE)
    assert not list(tmp_path.glob(".out.yarnflow-*"))


def test_a_killed_job_leaves_nothing_at_the_target_and_a_rerun_writes_it_whole(
        fast_config, tmp_path):
    fast_config.set(options.BATCH_ROWS, 1000)
    out = tmp_path / "out"
    with LocalCluster(fast_config) as cluster:
        client = cluster.submit(pipeline(str(out), slow=True).job_graph(fast_config))
        wait_until(lambda: list(tmp_path.glob(".out.yarnflow-staging-*/_temporary/part-*")), 60,
                   "the sink to be writing into its staging directory")
        assert not out.exists()
        client.cancel()
        result = client.wait(60)
        assert result.status is JobStatus.CANCELED
        assert not out.exists(), "a cancelled job made output visible"
        assert not list(tmp_path.glob(".out.yarnflow-*")), "staging left behind"

        rerun = cluster.submit(pipeline(str(out), slow=False).job_graph(fast_config)).wait(60)
    assert rerun.status is JobStatus.FINISHED, rerun.failure
    assert pq.read_table(out).sort_by("x").equals(TABLE)
    assert not list(tmp_path.glob(".out.yarnflow-*"))
