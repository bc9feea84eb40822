"""The ApplicationMaster dies and YARN starts another attempt (issue 16), end to end
on the real Hadoop 3.5 cluster: the job runs again in the new attempt under the same
job id and the application ends with the job's outcome; the client's `run --attach`,
`status` and `logs` follow the application from one attempt to the next."""
from __future__ import annotations

import subprocess
import sys
import threading
import time

import pytest

from tests.conftest import wait_until
from tests.yarn.conftest import COLD_START_S, FAST, ROOT, yarnflow
from tests.yarn.pipelines.shapes import keyed
from tests.yarn.test_cluster_data import SHAPES, numbers, sink_is_writing
from yarnflow.client.targets.yarn_apps import YarnApplication

pytestmark = pytest.mark.usefixtures("yarn_cluster")


class AttachedRun:
    """`yarnflow run --attach` in the background, its output collected as it comes."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "yarnflow.client.cli", "run", "--attach",
                                      *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True, cwd=ROOT)
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:   # type: ignore[union-attr]
            self.lines.append(line)

    @property
    def output(self) -> str:
        return "".join(self.lines)

    def app_id(self) -> str | None:
        return next((w for w in self.output.split() if w.startswith("application_")), None)

    def wait(self, timeout: float) -> int:
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise AssertionError(f"the attached run did not end within {timeout:g} s:\n"
                                 f"{self.output[-4000:]}") from None
        self._reader.join(10)
        return code


def test_a_killed_appmaster_is_replaced_by_a_second_attempt_that_finishes_the_job_exactly(
        yarn_cluster, hdfs):
    out = f"{hdfs.scratch('am-recover')}/out"
    old = numbers(0, 1000)
    hdfs.write_table(old, f"{out}/part-00000.parquet")
    run = AttachedRun("-t", "yarn-per-job", *FAST, "-D", "pipeline.batch-rows=100", SHAPES,
                      "--", "long", "--work", "1", "--out", out, "--mode", "overwrite")
    app_id = wait_until(run.app_id, 120, "the attached run to name its application",
                        interval=0.3)
    with YarnApplication(app_id, timeout=30) as app:
        # COLD_START_S: this is the tier's first test, its nodes have no environment yet
        wait_until(lambda: sink_is_writing(app, hdfs, out), COLD_START_S,
                   "the first attempt's sink to be writing", interval=0.3)
        first_job = app.job_details()
    assert first_job is not None and first_job.application_attempt == 1

    yarn_cluster.kill_appmaster(app_id)      # SIGKILL: no goodbye to Skein or YARN

    def second_attempt_running() -> bool:
        status = yarnflow("status", app_id)
        return status.returncode == 0 and "ApplicationMaster attempt 2" in status.stdout \
            and "RUNNING" in status.stdout
    wait_until(second_attempt_running, 180,
               "`yarnflow status` to show the job running in attempt 2", interval=1.0)

    assert run.wait(400) == 0, run.output[-4000:]
    assert "FINISHED" in run.output
    report = yarn_cluster.wait_finished(app_id, timeout=60)
    assert report["finalStatus"] == "SUCCEEDED", report.get("diagnostics")
    assert len(yarn_cluster.attempts(app_id)) == 2

    # exact: every row once, nothing of the old output, nothing of the dead attempt
    assert sorted(hdfs.read_table(out).column("k").to_pylist()) == list(range(2000))
    assert hdfs.leftovers(out) == []

    with YarnApplication(app_id, timeout=30) as app:
        archived = app.archived_details()
    assert archived is not None and archived.job_id == first_job.job_id
    assert archived.application_attempt == 2

    logs = yarnflow("logs", app_id, timeout=180)
    assert logs.returncode == 0, logs.stderr
    assert "ApplicationMaster (attempt 1 of 2)" in logs.stdout
    assert "ApplicationMaster (attempt 2 of 2)" in logs.stdout



def subtasks(details, *operators: str) -> list:
    """The subtasks of the vertices that run these operators (a chain counted once)."""
    return [s for v in details.vertices if any(v.runs(o) for o in operators) for s in v.subtasks]


def test_with_job_recovery_a_new_attempt_runs_only_the_stage_that_had_not_finished(
        yarn_cluster, hdfs):
    """execution.batch.job-recovery.enabled: stage 1's results are on HDFS and its
    regions in the job event log, so attempt 2 runs stage 2 alone, reading them there."""
    base = hdfs.scratch("am-recover-batch")
    out, store = f"{base}/out", f"{base}/store"
    run = AttachedRun("-t", "yarn-per-job", *FAST, "-D", "pipeline.batch-rows=250",
                      "-D", "execution.batch.job-recovery.enabled=true",
                      "-D", f"execution.batch.partition-store.dir={store}",
                      SHAPES, "--", "two-stage", "--work", "1", "--out", out)
    app_id = wait_until(run.app_id, 120, "the attached run to name its application",
                        interval=0.3)
    with YarnApplication(app_id, timeout=30) as app:
        def stage_two_reading() -> object:
            details = app.job_details()
            two = subtasks(details, "stage2-map") if details else []
            return details if two and all(s.state.name == "RUNNING" and s.metrics.records_in
                                          for s in two) else None
        first = wait_until(stage_two_reading, 180, "stage 2 reading stage 1's results",
                           interval=0.3)
    assert all(s.state.name == "FINISHED" for s in subtasks(first, "stage1-source", "stage1-map"))
    events = f"{store}/{first.job_id}/events"
    wait_until(lambda: len([n for n in hdfs.fs.list_dir(events) if n.endswith(".json")]) == 2,
               30, "both stage-1 regions in the job event log on HDFS", interval=0.3)
    assert hdfs.fs.list_dir(f"{store}/{first.job_id}/results"), "stage 1's results on HDFS"
    status = hdfs.fs.webhdfs.info(hdfs.fs.path(f"{store}/{first.job_id}"))
    assert status["permission"] == "700", "a job's results are its owner's only"

    killed_at = time.time()
    yarn_cluster.kill_appmaster(app_id)

    assert run.wait(400) == 0, run.output[-4000:]
    report = yarn_cluster.wait_finished(app_id, timeout=60)
    assert report["finalStatus"] == "SUCCEEDED", report.get("diagnostics")
    with YarnApplication(app_id, timeout=30) as app:
        archived = app.archived_details()
    assert archived is not None and archived.application_attempt == 2
    stage1 = subtasks(archived, "stage1-source", "stage1-map")
    assert len(stage1) == 2 and all(       # stage1-source -> stage1-map: 2 chained tasks
        s.state.name == "FINISHED" and s.attempt == 0 for s in stage1)
    assert all(s.state_timestamps["RUNNING"] < killed_at for s in stage1), \
        "no stage-1 subtask ran again in attempt 2"
    assert all(s.state_timestamps["RUNNING"] > killed_at
               for s in subtasks(archived, "stage2-map")), "stage 2 ran again in attempt 2"

    want = keyed(4000).group_by("k").aggregate([("v", "sum"), ("v", "count")]).sort_by("k")
    got = hdfs.read_table(out).sort_by("k")
    assert got.select(want.column_names).equals(want)
    assert not hdfs.fs.exists(f"{store}/{first.job_id}"), \
        "the job's results and event log removed at its end"
