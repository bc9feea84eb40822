"""The ApplicationMaster killed half way through a per-job application, against the
same job undisturbed, on the native test cluster in one run. Prints one JSON object.

    eval "$(docker-hadoop/native/cluster up)"; python bench/am_failover.py

(or on the dockerised cluster's edge host). The ApplicationMaster is killed by its
NodeManager (YARN's signal-to-container API), as on hosts the benchmark cannot reach.
Where the client's environment is shipped, the first submission of a new environment
packs and uploads it, which the first run (job_s_without_job_recovery) then includes.

The job (bench/yarn_jobs.py two-stage): stage 1 (source, a map of --work1 s per
batch) writes a BLOCKING shuffle that stage 2 (a map of --work s per batch, an
aggregate, a Parquet sink on HDFS) reads, at parallelism 2, with batch job recovery on
(execution.batch.job-recovery.enabled: stage 1's results on HDFS) unless said otherwise.

- fresh_start_s: submission until every stage-1 subtask RUNNING (the JobMaster's own
  per-subtask timestamps), in the undisturbed run;
- am_recover_s: the ApplicationMaster's process SIGKILLed while stage 2 runs, until
  every subtask of the first stage the next attempt runs is RUNNING again;
- stage1_rerun: stage-1 subtasks that ran again in the next attempt (goal 0);
- exact: both runs' outputs equal pyarrow's aggregate of the input;
- job_s / job_s_with_am_kill: the application's lifetime as YARN records it;
  job_s_without_job_recovery: the same job with stage 1's results on the executors'
  disks and no event log (what job recovery costs when nothing fails).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from yarn_submit import JOBS, RM, app_state, poll, wait_finished, wait_quiet, yarnflow_submit

from tests.yarn.conftest import Hdfs, YarnRest   # the test cluster's HDFS and REST API
from yarnflow.core.details import JobDetails
from yarnflow.client.targets.yarn_apps import YarnApplication

STAGE1 = ("stage1-source", "stage1-map")
STAGE2 = ("stage2-map",)


def expected(rows: int) -> pa.Table:
    table = pa.table({"k": pa.array([i % 97 for i in range(rows)], pa.int64()),
                      "v": pa.array(range(rows), pa.int64())})
    return table.group_by("k").aggregate([("v", "sum"), ("v", "count")]).sort_by("k")


def running_at(details: JobDetails | None, vertices: tuple[str, ...]) -> list[float]:
    """When each subtask of ``vertices`` (its current attempt) became RUNNING; empty
    until all are."""
    if details is None:
        return []
    stamps = [s.state_timestamps.get("RUNNING") for v in details.vertices
              if any(v.runs(name) for name in vertices) for s in v.subtasks]
    return [t for t in stamps if t] if stamps and all(stamps) else []


def run(args: argparse.Namespace, kill: bool, recovery: bool = True) -> dict:
    hdfs = Hdfs(os.environ.get("YARNFLOW_TEST_HDFS", "hdfs://127.0.0.1:9000"))
    fs, default_fs = hdfs.fs, hdfs.default_fs
    out = f"{default_fs}/tmp/yarnflow-bench/am-failover-{uuid.uuid4().hex[:8]}"
    wait_quiet()
    submitted = time.time()
    app_id, _ = yarnflow_submit("-D", "pipeline.batch-rows=250",
                                "-D", f"execution.batch.job-recovery.enabled={str(recovery).lower()}",
                                JOBS, "--", "two-stage",
                                "--parallelism", "2", "--rows", str(args.rows),
                                "--work1", str(args.work1), "--work", str(args.work),
                                "--out", out)
    figures: dict[str, Any] = {}
    with YarnApplication(app_id, timeout=30) as app:
        stage1 = poll(lambda: running_at(app.job_details(), STAGE1), 180,
                      "every stage-1 subtask RUNNING", 0.3)
        figures["start_s"] = max(stage1) - submitted
        if kill:
            def half_way() -> bool:
                details = app.job_details()
                two = [s for v in (details.vertices if details else [])
                       if any(v.runs(name) for name in STAGE2) for s in v.subtasks]
                return bool(two) and all(s.state.name == "RUNNING" and s.metrics.records_in
                                         for s in two)
            poll(half_way, 180, "stage 2 under way", 0.3)
            killed_at = time.time()
            YarnRest(RM).kill_appmaster(app_id)   # by its NodeManager: SIGKILL, no goodbye

            def recovered() -> list[float]:
                details = app.job_details()
                if details is None or details.application_attempt < 2:
                    if app_state(app_id)["state"] in ("FINISHED", "FAILED", "KILLED"):
                        raise RuntimeError(f"{app_id} ended in its first attempt: the job "
                                           "ended before the kill reached its ApplicationMaster "
                                           "(a longer --work keeps stage 2 running)")
                    return []
                again = running_at(details, STAGE1)
                if again and min(again) > killed_at:
                    return again
                two = running_at(details, STAGE2)
                return two if two and min(two) > killed_at else []
            figures["am_recover_s"] = max(poll(recovered, 300, "the job running in attempt 2",
                                               0.3)) - killed_at
        final = wait_finished(app_id)
        if final["finalStatus"] != "SUCCEEDED":
            raise RuntimeError(f"{app_id} ended {final['finalStatus']}: {final['diagnostics']}")
        archived = poll(lambda: app.archived_details(), 60, "the archived job", 0.5)
    report = app_state(app_id)
    figures["job_s"] = (report["finishedTime"] - report["startedTime"]) / 1000
    if kill:
        figures["stage1_rerun"] = sum(
            1 for v in archived.vertices if any(v.runs(name) for name in STAGE1)
            for s in v.subtasks
            if s.state_timestamps.get("RUNNING", 0) > killed_at)
        figures["attempts"] = archived.application_attempt
    got = pq.read_table(fs.path(out), filesystem=fs.arrow).sort_by("k")
    want = expected(args.rows)
    figures["exact"] = got.select(want.column_names).equals(want)
    fs.delete(out)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=4000)
    parser.add_argument("--work1", type=float, default=0.5, help="s per stage-1 batch")
    parser.add_argument("--work", type=float, default=1.0, help="s per stage-2 batch")
    args = parser.parse_args()
    plain = run(args, kill=False, recovery=False)
    fresh = run(args, kill=False)
    killed = run(args, kill=True)
    print(json.dumps({
        "am_recover_s": round(killed["am_recover_s"], 3),
        "fresh_start_s": round(fresh["start_s"], 3),
        "stage1_rerun": killed["stage1_rerun"],
        "exact": plain["exact"] and fresh["exact"] and killed["exact"],
        "job_s": round(fresh["job_s"], 3),
        "job_s_without_job_recovery": round(plain["job_s"], 3),
        "job_s_with_am_kill": round(killed["job_s"], 3),
        "attempts": killed["attempts"],
        "goal_am_recover_within_fresh_start_plus_5s":
            killed["am_recover_s"] <= fresh["start_s"] + 5.0,
    }))


if __name__ == "__main__":
    main()
