"""Live progress on ``local`` with real executors (issue 34, item 1): while a job runs,
and before any of its subtasks has finished, the REST API, the metrics and the job
details show records that grow, carried by the executors' progress reports (the
heartbeats here come too seldom to carry them); when it ends every vertex is at 100 %,
a source by its splits and the others by their input channels. The YARN side is in
tests/yarn/test_web_ui.py."""
from __future__ import annotations

import json
import time
import urllib.request
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

import yarnflow.client as yf
from tests.conftest import FAST, wait_until
from tests.rest_contract import SUBTASK_METRICS, VERTEX_METRICS, metric
from yarnflow.client.targets.local import LocalCluster
from yarnflow.conf import Configuration
from yarnflow.core.status import JobStatus

ROWS = 2000
LIVE = [*FAST, "heartbeat.interval=60 s", "heartbeat.timeout=180 s",
        "metrics.progress.interval=0.2 s", "local.web-ui=true", "pipeline.batch-rows=10"]


def slow(batch: pa.RecordBatch) -> pa.RecordBatch:
    time.sleep(0.06)         # the workload: 100 batches a subtask keep the job running
    return batch


def get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.loads(response.read())


WORK = "work -> parquet-sink"      # the map chained to its sink


def test_running_subtasks_show_growing_records_before_any_subtask_finished(tmp_path):
    config = Configuration.load(overrides=LIVE)
    p = yf.Pipeline("live", parallelism=2)
    p.from_arrow(pa.table({"x": list(range(ROWS))})).rebalance().map(slow, name="work") \
        .write_parquet(str(tmp_path / "out"))
    with LocalCluster(config) as cluster:
        url = cluster.web.url
        client = cluster.submit(p.job_graph(config))

        def work_records_none_finished() -> int:
            job = get(url + f"jobs/{client.job_id}")
            if job["status-counts"]["FINISHED"]:
                raise AssertionError(f"a subtask finished before any record showed: {job}")
            work = next(v for v in job["vertices"] if v["name"] == WORK)
            return work["metrics"]["read-records"] if work["tasks"]["RUNNING"] else 0
        first = wait_until(work_records_none_finished, 60,
                           "records of the running work subtasks in the REST API")
        wait_until(lambda: work_records_none_finished() > first, 30,
                   "the work subtasks' records growing, no subtask finished yet")

        def every_work_subtask_read() -> Any:
            # the vertex's sum grows once one subtask reads; on a busy machine the
            # other may start a moment later (none may have finished meanwhile)
            work_records_none_finished()
            work = client.details().vertex_running("work")
            return work if all(s.metrics.records_in > 0 for s in work.subtasks) else None
        work = wait_until(every_work_subtask_read, 30, "records in every running work subtask")
        assert metric(url, "yarnflow_vertex_records_in", WORK) > 0
        # each operator of the chain has its own figures and progress while it runs
        wait_until(lambda: metric(url, "yarnflow_operator_records_in", WORK, "parquet-sink") > 0,
                   30, "rows into the sink chained after work, in the metrics")
        assert 0 <= metric(url, "yarnflow_operator_progress", WORK, "work") < 1
        subtask = get(url + f"jobs/{client.job_id}/vertices/{work.id}")["subtasks"][0]
        assert SUBTASK_METRICS <= set(subtask["metrics"])
        assert subtask["metrics"]["inputs-total"] == 2, "a rebalance reads both producers"

        assert client.wait(120).status is JobStatus.FINISHED
        ended = client.details()
        job = get(url + f"jobs/{client.job_id}")
        assert all(VERTEX_METRICS <= set(v["metrics"]) for v in job["vertices"])
        assert [v["metrics"]["progress"] for v in job["vertices"]] == [1.0, 1.0]
        assert [(op["name"], op["metrics"]["progress"]) for op in job["vertices"][1]["operators"]] \
            == [("work", 1.0), ("parquet-sink", 1.0)]
        source = ended.vertices[0]
        assert source.splits_total > 0
        assert sum(s.metrics.inputs_done for s in source.subtasks) == source.splits_total
        (chain,) = ended.vertices[1:]                 # work -> parquet-sink
        assert [(s.metrics.inputs_done, s.metrics.inputs_total) for s in chain.subtasks] \
            == [(2, 2)] * 2, chain                    # a rebalance reads both producers
    assert pq.read_table(tmp_path / "out").num_rows == ROWS
