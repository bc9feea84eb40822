"""Host-level faults on the dockerised cluster: a host killed (its NodeManager, its
DataNode and every executor on it at once), cut off from the network, and frozen
(test_lost_hosts.py has the hosts lost while containers start, in sessions, and the
ApplicationMaster's host). Each job's output must be exact (every row once),
and nothing may be left: no container in YARN's view, no yarnflow process on any host,
no staging directory beside the output.

The client runs on the edge host; the faults are Docker's verbs on the worker hosts;
what the job does is read through the ResourceManager's web proxy (the job's REST
API) and, once it ended, from its archive on HDFS."""
from __future__ import annotations

import json
import re
import time
import uuid
from dataclasses import dataclass
from typing import Any, Iterator

import pytest

from tests.conftest import wait_until
from tests.docker.conftest import WORKERS, DockerCluster

SHAPES = "tests/yarn/pipelines/shapes.py"
NETWORK = "yarnflow-hadoop"
FAST = ["-D", "heartbeat.interval=1 s", "-D", "resourcemanager.taskmanager-timeout=3 s",
        "-D", "slot.idle.timeout=1 s", "-D", "slot.request.timeout=180 s",
        "-D", "job.cancel.timeout=20 s", "-D", "pipeline.batch-rows=250",
        "-D", "restart-strategy.type=fixed-delay", "-D", "restart-strategy.fixed-delay.attempts=10",
        "-D", "restart-strategy.fixed-delay.delay=2 s",
        "-D", "taskmanager.network.partition-request-timeout=20 s"]
TIMEOUT_20S = ["-D", "heartbeat.timeout=20 s"]

# What an ended job wrote, on the edge host: exact or not, and what its output
# directory's parent holds beside it (a staging directory is a leftover).
OUTPUT = """
import json, posixpath, sys
sys.path.insert(0, "tests/yarn/pipelines")
from shapes import keyed
from yarnflow.client import files
shape, out = sys.argv[1:3]
got = files.read_table(out)
if shape == "long":
    exact = sorted(got.column("k").to_pylist()) == list(range(2000)) \\
        and got.column("v").to_pylist() == [1.0] * 2000
else:
    want = keyed(4000).group_by("k").aggregate([("v", "sum"), ("v", "count")]).sort_by("k")
    exact = got.sort_by("k").select(want.column_names).equals(want)
base = posixpath.basename(out.rstrip("/"))
beside = [uri for uri, _ in files.ls(posixpath.dirname(out.rstrip("/")))
          if posixpath.basename(uri.rstrip("/")).startswith("." + base)]
print(json.dumps({"rows": got.num_rows, "exact": exact, "beside": beside}))
"""

# An ended per-job application's job, from its archive: restarts and where its
# final subtasks ran.
ARCHIVED = """
import json, sys
from yarnflow.client.targets.yarn_apps import YarnApplication
with YarnApplication(sys.argv[1], timeout=30) as app:
    d = app.archived_details()
print(json.dumps({"status": d.status.value, "restarts": d.restarts,
                  "attempt": d.application_attempt,
                  "hosts": sorted({s.host for v in d.vertices for s in v.subtasks}),
                  "executors": sorted({s.resource_id for v in d.vertices for s in v.subtasks})}))
"""


def scratch(name: str) -> str:
    return f"hdfs://rm:9000/tmp/yarnflow-tests/{name}-{uuid.uuid4().hex[:8]}/out"


def submit(cluster: DockerCluster, *args: str) -> str:
    """A detached `yarnflow run` from the edge host; its application's id."""
    run = cluster.edge("yarnflow", "run", *args, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    found = re.search(r"application_\d+_\d+", run.stdout)
    assert found, run.stdout
    return found.group(0)


def output(cluster: DockerCluster, shape: str, out: str) -> dict:
    check = cluster.edge("python", "-c", OUTPUT, shape, out)
    assert check.returncode == 0, check.stdout[-2000:] + check.stderr[-2000:]
    return json.loads(check.stdout.splitlines()[-1])


def archived(cluster: DockerCluster, app_id: str) -> dict:
    proc = cluster.edge("python", "-c", ARCHIVED, app_id)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return json.loads(proc.stdout.splitlines()[-1])


@dataclass
class Page:
    """An application's job pages, through the ResourceManager's web proxy."""
    cluster: DockerCluster
    app_id: str

    def get(self, path: str) -> Any:
        return self.cluster.rest(f"/proxy/{self.app_id}/pages/yarnflow/{path}")

    def job(self, job_id: str | None = None) -> dict | None:
        try:
            jobs = self.get("jobs/overview")["jobs"]
            jid = job_id or (jobs[0]["jid"] if jobs else None)
            return self.get(f"jobs/{jid}") if jid else None
        except (OSError, ValueError, KeyError):      # not serving yet, or between attempts
            return None

    def subtasks(self, job: dict, *operators: str) -> list[dict]:
        """The subtasks of the vertices that run these operators, alone or chained."""
        found = []
        for vertex in job["vertices"]:
            if set(operators) & {op["name"] for op in vertex["operators"]}:
                found += self.get(f"jobs/{job['jid']}/vertices/{vertex['id']}")["subtasks"]
        return found


def app(cluster: DockerCluster, app_id: str) -> dict:
    return cluster.rest(f"/ws/v1/cluster/apps/{app_id}")["app"]


def appmaster_host(cluster: DockerCluster, app_id: str) -> str:
    """The host of the application's current ApplicationMaster, once YARN has placed
    it (a submission returns before that)."""
    address = wait_until(lambda: app(cluster, app_id).get("amHostHttpAddress"), 300,
                         f"YARN to place {app_id}'s ApplicationMaster", interval=0.5)
    return str(address).split(":")[0]


def wait_finished(cluster: DockerCluster, app_id: str, timeout: float) -> dict:
    return wait_until(lambda: (a := app(cluster, app_id))["state"] in ("FINISHED", "FAILED", "KILLED")
                      and a, timeout, f"{app_id} to end", interval=1.0)


def running(page: Page, operator: str, job_id: str | None = None, through: bool = True
            ) -> tuple[dict, list[dict]] | None:
    """The job and the subtasks running ``operator`` (it heads their chain) once all of
    them run (and, with ``through``, have taken some records in)."""
    job = page.job(job_id)
    if job is None:
        return None
    subtasks = page.subtasks(job, operator)
    ok = subtasks and all(s["status"] == "RUNNING" for s in subtasks) and \
        (not through or all(s["metrics"]["read-records"] > 0 for s in subtasks))
    return (job, subtasks) if ok else None


def victim(cluster: DockerCluster, app_id: str, subtasks: list[dict]) -> str:
    """A host that runs some of ``subtasks`` and not the ApplicationMaster."""
    am = appmaster_host(cluster, app_id)
    hosts = sorted({s["host"] for s in subtasks} - {am})
    assert hosts, f"every subtask runs on the ApplicationMaster's host {am}: no host to take"
    return hosts[0]


def yarnflow_processes(cluster: DockerCluster, host: str) -> list[str]:
    ps = cluster.on(host, "ps", "-eo", "args")
    return [line for line in ps.stdout.splitlines() if "yarnflow." in line]


def assert_nothing_left(cluster: DockerCluster, app_id: str) -> None:
    """YARN lists no container of the application, and no host runs a yarnflow process.

    YARN forgets a finished application's containers only as their NodeManagers report
    them ended (a dead host's after its liveness expiry, 45 s here), so both are polled."""
    attempts = cluster.attempts(app_id)

    left: list[str] = []

    def none_listed() -> bool:
        left.clear()
        for attempt in attempts:
            page = cluster.rest(f"/ws/v1/cluster/apps/{app_id}/appattempts/"
                                f"{attempt['appAttemptId']}/containers") or {}
            left.extend(f"{c['containerId']} on {c.get('assignedNodeId')}" for c in page.get("container") or [])
        return not left
    try:
        wait_until(none_listed, 120, f"YARN to list no container of {app_id}", interval=1.0)
    except AssertionError as timed_out:
        raise AssertionError(f"{timed_out}; still listed: {', '.join(left)}") from None
    live = [h for h in WORKERS if cluster.docker("inspect", "--format", "{{.State.Running}}",
                                                h).stdout.strip() == "true"]
    wait_until(lambda: not any(yarnflow_processes(cluster, h) for h in live), 120,
               "no yarnflow process left on " + ", ".join(live), interval=1.0)


@pytest.fixture
def hosts(warm_hosts: DockerCluster, request: pytest.FixtureRequest) -> Iterator[DockerCluster]:
    """The cluster, warm (its first module here finds it cold: conftest.py's warm_hosts
    says why not to fault a cold start), with every worker host running and on its
    network again after the test, whatever it did to them; after a failure, with its
    evidence kept and its applications killed."""
    docker_cluster = warm_hosts
    yield docker_cluster
    report = getattr(request.node, "report_call", None)
    if report is not None and report.failed:
        kept = docker_cluster.keep_evidence(request.node.name)
        print(f"logs and stacks of the failed test's hosts: {kept}")
    for host in WORKERS:
        state = docker_cluster.docker("inspect", "--format", "{{.State.Status}}", host).stdout.strip()
        if state == "paused":
            docker_cluster.docker("unpause", host)
        elif state != "running":
            docker_cluster.docker("start", host)
        networks = docker_cluster.docker("inspect", "--format", "{{json .NetworkSettings.Networks}}",
                                         host).stdout
        if NETWORK not in networks:
            docker_cluster.docker("network", "connect", NETWORK, host)
    docker_cluster.wait_ready()


def assert_exact(cluster: DockerCluster, shape: str, out: str) -> None:
    written = output(cluster, shape, out)
    assert written["exact"] and written["beside"] == [], written


# --- a host dies ------------------------------------------------------------------------
def test_a_host_killed_mid_job_loses_its_blocking_results_and_the_job_recovers_exactly(hosts):
    """Stage 1 wrote its BLOCKING results on its executors' hosts; stage 2 reads them
    when a host that holds some dies with its NodeManager, DataNode and executors."""
    out = scratch("host-killed")
    app_id = submit(hosts, "-t", "yarn-per-job", *FAST, *TIMEOUT_20S, SHAPES, "--", "two-stage",
                    "--work", "1.5", "--work1", "0.2", "--out", out)
    page = Page(hosts, app_id)
    job, stage2 = wait_until(lambda: running(page, "stage2-map"), 300,
                             "stage 2 reading stage 1's results", interval=1.0)
    # stage 2 was scheduled once stage1-map's BLOCKING results were all written; each
    # stage-1 subtask's own FINISHED report may come a moment after (a source's after
    # the map it fed, on a busy machine)
    def stage1_finished() -> list[dict] | None:
        subtasks = page.subtasks(job, "stage1-source", "stage1-map")
        return subtasks if all(s["status"] == "FINISHED" for s in subtasks) else None
    stage1 = wait_until(stage1_finished, 60, "stage 1's subtasks reported FINISHED",
                        interval=0.5)
    assert len(stage1) == 2, stage1         # stage1-source -> stage1-map: 2 chained tasks
    am = appmaster_host(hosts, app_id)
    holders = sorted({s["host"] for s in stage1} - {am})
    host = holders[0] if holders else victim(hosts, app_id, stage2)
    hosts.docker("kill", host)

    final = wait_finished(hosts, app_id, 400)
    assert final["finalStatus"] == "SUCCEEDED", final["diagnostics"]
    assert_exact(hosts, "two-stage", out)
    ended = archived(hosts, app_id)
    assert ended["restarts"] >= 1 and host not in ended["hosts"], ended
    assert_nothing_left(hosts, app_id)


# A host killed while a session runs a job, and the ApplicationMaster's host lost, are
# test_lost_hosts.py's (with the issue-53 cases around them).


# --- a host cut off, a host frozen ----------------------------------------------------------
def executors_on(page: Page, host: str) -> list[str]:
    return [e["id"] for e in page.get("taskmanagers")["taskmanagers"] if e["host"] == host]


def appmaster_log(cluster: DockerCluster, app_id: str) -> str:
    logs = cluster.edge("yarnflow", "logs", app_id, timeout=300)
    assert logs.returncode == 0, logs.stderr[-2000:]
    return logs.stdout


def test_a_host_cut_off_past_the_heartbeat_timeout_is_fenced_when_it_returns(hosts):
    """Its executors are presumed dead after heartbeat.timeout and their work runs
    elsewhere; when the host is back its executors' late calls are refused: they
    never register again, no attempt of theirs counts, and no row is written twice."""
    out = scratch("host-cut-off")
    app_id = submit(hosts, "-t", "yarn-per-job", *FAST, *TIMEOUT_20S, SHAPES, "--", "long",
                    "--work", "3", "--out", out)
    page = Page(hosts, app_id)
    _, work = wait_until(lambda: running(page, "work"), 300, "the job's work subtasks running",
                         interval=1.0)
    host = victim(hosts, app_id, work)
    cut = executors_on(page, host)
    hosts.docker("network", "disconnect", NETWORK, host)
    wait_until(lambda: (job := page.job()) and job["restarts"] >= 1, 120,
               f"the job to fail over the executors of {host}, cut off", interval=1.0)
    hosts.docker("network", "connect", NETWORK, host)

    final = wait_finished(hosts, app_id, 400)
    assert final["finalStatus"] == "SUCCEEDED", final["diagnostics"]
    assert_exact(hosts, "long", out)
    ended = archived(hosts, app_id)
    assert not set(cut) & set(ended["executors"]), (cut, ended)
    log = appmaster_log(hosts, app_id)
    for executor in cut:
        assert f"TaskExecutor {executor} sent no heartbeat" in log, executor
        assert f"TaskExecutor {executor} registered again" not in log, executor
    assert_nothing_left(hosts, app_id)


@pytest.mark.parametrize("timeout,fails", [("60 s", False), ("20 s", True)],
                         ids=["below-the-heartbeat-timeout", "above-the-heartbeat-timeout"])
def test_a_host_frozen_for_30_s(hosts, timeout: str, fails: bool):
    """`docker pause`: every process of the host stops, sockets open, for 30 s. Below
    heartbeat.timeout nothing fails; above it, the job recovers as from a lost host
    and the frozen executors, thawed, are not taken back."""
    out = scratch("host-frozen")
    app_id = submit(hosts, "-t", "yarn-per-job", *FAST, "-D", f"heartbeat.timeout={timeout}",
                    SHAPES, "--", "long", "--work", "3", "--out", out)
    page = Page(hosts, app_id)
    _, work = wait_until(lambda: running(page, "work"), 300, "the job's work subtasks running",
                         interval=1.0)
    host = victim(hosts, app_id, work)
    frozen = executors_on(page, host)
    hosts.docker("pause", host)
    paused_at = time.monotonic()
    # the freeze lasts 30 s of the cluster's time; the job is watched meanwhile
    wait_until(lambda: time.monotonic() - paused_at >= 30 and page.job() is not None, 90,
               f"{host} frozen for 30 s", interval=1.0)
    hosts.docker("unpause", host)

    final = wait_finished(hosts, app_id, 400)
    assert final["finalStatus"] == "SUCCEEDED", final["diagnostics"]
    assert_exact(hosts, "long", out)
    ended = archived(hosts, app_id)
    if fails:
        assert ended["restarts"] >= 1 and not set(frozen) & set(ended["executors"]), (frozen, ended)
    else:
        assert ended["restarts"] == 0, ended
        assert set(frozen) & set(ended["executors"]), (frozen, ended)
    assert_nothing_left(hosts, app_id)
