"""One job handle whatever the target: on ``local`` (the other targets' handles run in
tests/yarn), status as a JobStatus, details, wait with a deadline, cancel."""
from __future__ import annotations

import time

import pyarrow as pa
import pytest

import yarnflow.client as yf
from tests.conftest import FAST, NO_RESTART, wait_until
from yarnflow.conf import Configuration
from yarnflow.core.status import ExecutionState, JobStatus
from yarnflow.client.targets import make_target


def slow(batch: pa.RecordBatch) -> pa.RecordBatch:
    time.sleep(0.2)          # the workload: the job runs long enough to be cancelled
    return batch


def pipeline(out, fn=lambda b: b) -> yf.Pipeline:
    p = yf.Pipeline("handled", parallelism=1)
    p.from_arrow(pa.table({"x": list(range(100))})).map(fn, name="work").write_parquet(str(out))
    return p


def test_execute_returns_the_ended_jobs_handle(tmp_path):
    config = Configuration.load(overrides=FAST)
    handle = pipeline(tmp_path / "o").execute("local", config)
    assert isinstance(handle, yf.JobHandle)
    assert handle.status() is JobStatus.FINISHED
    result = handle.wait(0)
    assert result.status is JobStatus.FINISHED and result.job_id == handle.job_id
    work = result.details.vertex_running("work")      # arrow-source -> work -> parquet-sink
    assert [s.state for s in work.subtasks] == [ExecutionState.FINISHED]
    assert result.details.operator_metrics("work").records_in == 100


def test_a_failed_job_raises_with_its_result(tmp_path):
    def explode(batch):
        raise ValueError("bad batch")
    with pytest.raises(yf.JobFailedError) as failed:
        pipeline(tmp_path / "o", explode).execute(
            "local", Configuration.load(overrides=FAST + NO_RESTART))
    assert failed.value.result.status is JobStatus.FAILED
    assert "bad batch" in failed.value.result.failure


def test_wait_has_a_deadline_and_cancel_ends_the_job_canceled(tmp_path):
    config = Configuration.load(overrides=[*FAST, "pipeline.batch-rows=10"])   # 10 slow batches
    target = make_target("local", config)
    graph = pipeline(tmp_path / "o", slow).job_graph(config)
    handle = target.submit(graph)
    try:
        wait_until(lambda: handle.status() is JobStatus.RUNNING and any(
            s.state is ExecutionState.RUNNING
            for s in handle.details().vertex_running("work").subtasks), 60,
            "the work subtask RUNNING")
        with pytest.raises(TimeoutError, match=f"job {handle.job_id} did not end within 0.1 s"):
            handle.wait(0.1)
        handle.cancel()
        assert handle.wait(60).status is JobStatus.CANCELED
        assert handle.status() is JobStatus.CANCELED
        assert not (tmp_path / "o").exists()           # nothing committed
    finally:
        handle.close()
