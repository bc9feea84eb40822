"""Slow hosts on the real cluster (issue 34, item 2): every NodeManager host but one
slowed 10× (the test-only ``test.taskmanager.slow-hosts``: a task there stretches its
work, as a CPU that much slower would). A batch job (every exchange BLOCKING, stage by
stage) runs in a per-job application with speculation: every straggler of the work
stage is outrun by a speculative attempt on the healthy host, so no output of the stage
comes from a slow host, the slow hosts are blocked, and the output is exact. (That
nothing is speculated when it is off, and how a job then waits for its stragglers, is
the unit tier's: tests/unit/test_speculation.py.)"""
from __future__ import annotations

import pytest

from tests.yarn.conftest import FAST, PIPELINES, submitted_app_id, yarnflow
from yarnflow.client.targets.yarn_apps import YarnApplication
from yarnflow.core.details import JobDetails, SpeculationOutcome

SHAPES = str(PIPELINES / "shapes.py")
pytestmark = pytest.mark.usefixtures("yarn_cluster")
SPECULATION = ["-D", "execution.batch.speculative.enabled=true",
               # one finished subtask of a stage is its baseline: the healthy host may
               # hold as few as one of six
               "-D", "slow-task-detector.execution-time.baseline-ratio=0.15",
               "-D", "slow-task-detector.execution-time.baseline-lower-bound=1 s",
               "-D", "execution.batch.speculative.block-slow-node-duration=300 s"]


def run(hdfs, slow: list[str], *extra: str) -> tuple[JobDetails, str]:
    out = f"{hdfs.scratch('slow-hosts')}/out"
    proc = yarnflow("run", "-t", "yarn-per-job", *FAST, "-D", "execution.attached=true",
                    "-D", "pipeline.batch-rows=100",
                    "-D", "test.taskmanager.slow-hosts=" + ",".join(f"{h}=10" for h in slow),
                    *extra, SHAPES, "--", "batch", "--parallelism", "6", "--work", "1",
                    "--out", out, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    app_id = submitted_app_id(proc)
    with YarnApplication(app_id, timeout=30) as app:
        details = app.archived_details()
    assert details is not None
    assert sorted(hdfs.read_table(out).column("k").to_pylist()) == list(range(1200)), \
        "every row exactly once"
    return details, app_id


def work(details: JobDetails) -> list:
    return details.vertex_running("work").subtasks


def test_speculative_attempts_outrun_slow_hosts(yarn_cluster, hdfs):
    hosts = sorted(n["nodeHostName"] for n in yarn_cluster.get("/ws/v1/cluster/nodes")
                   ["nodes"]["node"] if n["state"] == "RUNNING")
    assert len(hosts) >= 2, hosts
    slow, healthy = hosts[:-1], hosts[-1]

    on, app_id = run(hdfs, slow, *SPECULATION)
    won = [a for a in on.speculations if a.outcome is SpeculationOutcome.WON]
    assert won, on.speculations
    for attempt in won:
        assert attempt.original_host in slow and attempt.host == healthy, attempt
        assert attempt.reason and "finished first" in attempt.note, attempt
    # every work subtask's output is an attempt on the healthy host: none was waited for
    assert {s.host for s in work(on)} == {healthy}, [(s.index, s.attempt, s.host) for s in work(on)]
    blocked = {b.host: b.cause for b in on.blocked_hosts}
    assert set(blocked) & set(slow) and all(c.startswith("slow: ") for c in blocked.values()), blocked
    status = yarnflow("status", app_id)
    assert "speculative attempts of job" in status.stdout and "won" in status.stdout, status.stdout
