"""Hosts lost at the wrong moment (issue 53), on the dockerised cluster: a worker host
killed while the job's containers are still starting on it, per-job and in a session;
then that host brought back and another one killed mid-job (per-job: in the next
application); and the host of a session's or a per-job ApplicationMaster cut off the
network past YARN's liveness timeout, then reconnected while the next attempt runs the
job. Each job's output must be exact, the
session must go on serving, and nothing may be left.

The job is issue 53's: a Parquet source (1 core, 300 MB) over input on HDFS whose
blocks are on every host, a slow map (1 core, 600 MB), a BLOCKING aggregate (1 core,
400 MB), a broadcast join and a Parquet sink. Where the ApplicationMaster's host is
killed (issue 81), the source and map are one 5-core chain per subtask, each a region
of its own, which the two hosts left cannot run all at once."""
from __future__ import annotations

import contextlib
import json
import re
import uuid
from typing import Iterator

import pytest

from tests.conftest import artifacts_dir, wait_until
from tests.docker.conftest import WORKERS, DockerCluster
from tests.docker.test_host_faults import (FAST, NETWORK, SHAPES, TIMEOUT_20S, Page, app,
                                          appmaster_host, appmaster_log, archived,
                                          assert_nothing_left, hosts, running, scratch, submit,
                                          wait_finished)

__all__ = ["hosts"]     # the fixture, shared with the other host-fault tests

# The input, written from the edge host: 4000 keyed rows in six files (so its splits'
# blocks are spread over the three hosts); the check of an ended job's output.
PUT_INPUT = """
import sys, tempfile, pyarrow.parquet as pq
sys.path.insert(0, "tests/yarn/pipelines")
from shapes import keyed
from yarnflow.client import files
table, target = keyed(4000), sys.argv[1]
with tempfile.TemporaryDirectory() as local:
    for i in range(6):
        pq.write_table(table.slice(i * 700, 700), f"{local}/part-{i:05d}.parquet")
    files.put(local, target)
"""
OUTPUT = """
import json, posixpath, sys
import pyarrow as pa
sys.path.insert(0, "tests/yarn/pipelines")
from shapes import keyed
from yarnflow.client import files
out = sys.argv[1]
got = files.read_table(out).select(["k", "v_sum", "v_count", "name"]).sort_by("k")
want = keyed(4000).group_by("k").aggregate([("v", "sum"), ("v", "count")]).sort_by("k")
want = want.append_column("name", pa.array([f"key-{k}" for k in want.column("k").to_pylist()]))
base = posixpath.basename(out.rstrip("/"))
beside = [uri for uri, _ in files.ls(posixpath.dirname(out.rstrip("/")))
          if posixpath.basename(uri.rstrip("/")).startswith("." + base)]
print(json.dumps({"rows": got.num_rows, "exact": got.equals(want.select(got.column_names)),
                  "beside": beside}))
"""


def put_input(cluster: DockerCluster) -> str:
    target = f"hdfs://rm:9000/tmp/yarnflow-tests/lost-hosts-{uuid.uuid4().hex[:8]}/in"
    done = cluster.edge("python", "-c", PUT_INPUT, target)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return target


def assert_exact(cluster: DockerCluster, out: str) -> None:
    check = cluster.edge("python", "-c", OUTPUT, out)
    assert check.returncode == 0, check.stdout[-2000:] + check.stderr[-2000:]
    written = json.loads(check.stdout.splitlines()[-1])
    assert written["exact"] and written["rows"] == 97 and written["beside"] == [], written


def profiles(input_uri: str, out: str, *more: str) -> list[str]:
    return [SHAPES, "--", "profiles", "--input", input_uri, "--out", out, *more]


def containers(cluster: DockerCluster, app_id: str) -> list[dict]:
    """The containers YARN gave the application's current attempt."""
    attempts = cluster.attempts(app_id)
    page = cluster.rest(f"/ws/v1/cluster/apps/{app_id}/appattempts/"
                        f"{attempts[-1]['appAttemptId']}/containers") or {}
    return page.get("container") or []


def registered(page: Page) -> dict[str, str] | None:
    """The registered executors' containers: container id -> host."""
    try:
        return {e["container-id"]: e["host"] for e in page.get("taskmanagers")["taskmanagers"]
                if e["host"]}
    except (OSError, ValueError, KeyError):          # not serving yet
        return None


def registered_hosts(page: Page) -> set[str] | None:
    executors = registered(page)
    return None if executors is None else set(executors.values())


def kill_while_starting(cluster: DockerCluster, app_id: str) -> str:
    """As soon as YARN gives the application a container on a worker host other than
    the ApplicationMaster's whose executor has not registered, that host is frozen
    (nothing on it starts from then on), the container checked to have registered
    nothing, and the host killed (with whatever else runs there). Returns the host."""
    page = Page(cluster, app_id)
    am = appmaster_host(cluster, app_id)

    def starting() -> tuple[str, str] | None:
        executors = registered(page)
        if executors is None:
            return None
        fresh = sorted((c["assignedNodeId"].split(":")[0], c["containerId"])
                       for c in containers(cluster, app_id)
                       if c["containerId"] not in executors)
        return next((placed for placed in fresh if placed[0] != am), None)
    host, container = wait_until(starting, 300, f"a container of {app_id} starting on a "
                                 f"host other than the ApplicationMaster's ({am})", interval=0.2)
    cluster.docker("pause", host)
    assert container not in (registered(page) or {}), \
        f"the executor of {container} on {host} registered before the host was frozen: not a start"
    cluster.docker("kill", host)
    return host


@contextlib.contextmanager
def no_new_containers_on(cluster: DockerCluster, host: str) -> Iterator[None]:
    """``host`` in an exclusive node label's partition: what runs there runs on, but
    YARN places no new container of the default partition there (CapacityScheduler
    placed a session job's few new containers on the ApplicationMaster's host alone,
    which may not be killed, and the test waited for a start it could kill in vain)."""
    def rmadmin(*args: str) -> None:
        done = cluster.on("rm", "yarn", "rmadmin", *args, timeout=120)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]

    def labels() -> set[str]:
        nodes = cluster.rest("/ws/v1/cluster/nodes")["nodes"]["node"]
        return next(set(n.get("nodeLabels") or ()) for n in nodes if n["nodeHostName"] == node)
    node = next(n["nodeHostName"] for n in cluster.rest("/ws/v1/cluster/nodes")["nodes"]["node"]
                if n["nodeHostName"].split(".")[0] == host)
    known = {i["name"] for i in cluster.rest("/ws/v1/cluster/get-node-labels").get("nodeLabelInfo")
             or ()}
    if "highmem" not in known:
        rmadmin("-addToClusterNodeLabels", "highmem(exclusive=true)")
    rmadmin("-replaceLabelsOnNode", f"{node}=highmem")
    try:
        wait_until(lambda: labels() == {"highmem"}, 60, f"{node} in partition highmem",
                   interval=1.0)
        yield
    finally:
        rmadmin("-replaceLabelsOnNode", f"{node}=")
        wait_until(lambda: not labels(), 60, f"{node} back in the default partition",
                   interval=1.0)


def test_a_host_killed_while_a_per_job_applications_containers_start_then_another_after_it_came_back(
        hosts):
    """A host killed while the job's containers start there: YARN reports them
    released on a lost node, the host is not asked again, and the job ends exact on
    the hosts that are left. The host comes back; the same job with no fault gives the
    time to compare with (printed, as the issue asks); the next application loses
    another host mid-job: exact again."""
    input_uri = put_input(hosts)
    out = scratch("lost-while-starting")
    app_id = submit(hosts, "-t", "yarn-per-job", *FAST, *TIMEOUT_20S,
                    *profiles(input_uri, out, "--work", "0.3"))
    host = kill_while_starting(hosts, app_id)

    final = wait_finished(hosts, app_id, 600)
    assert final["finalStatus"] == "SUCCEEDED", final["diagnostics"]
    assert_exact(hosts, out)
    log = appmaster_log(hosts, app_id)
    assert "failed starts in a row" not in log, f"losing {host} counted as a failed start"
    assert_nothing_left(hosts, app_id)

    hosts.docker("start", host)
    hosts.wait_ready()
    out = scratch("lost-no-fault")
    base = submit(hosts, "-t", "yarn-per-job", *FAST, *TIMEOUT_20S,
                  *profiles(input_uri, out, "--work", "0.3"))
    final = wait_finished(hosts, base, 600)
    assert final["finalStatus"] == "SUCCEEDED", final["diagnostics"]
    assert_exact(hosts, out)
    figures = json.dumps({"no_fault_s": app(hosts, base)["elapsedTime"] / 1000,
                          "host_killed_while_starting_s": app(hosts, app_id)["elapsedTime"] / 1000})
    (artifacts_dir() / "lost-host-while-starting.json").write_text(figures + "\n")
    print(figures)

    out = scratch("lost-mid-job-after-return")
    after = submit(hosts, "-t", "yarn-per-job", *FAST, *TIMEOUT_20S,
                   *profiles(input_uri, out, "--work", "2"))
    _, work = wait_until(lambda: running(Page(hosts, after), "slow-map"), 300,
                         "the next application's slow map running", interval=1.0)
    am = appmaster_host(hosts, after)
    second = sorted({s["host"] for s in work} - {am, host}) or sorted({s["host"] for s in work} - {am})
    assert second, f"every slow-map subtask runs on the ApplicationMaster's host {am}"
    hosts.docker("kill", second[0])
    final = wait_finished(hosts, after, 600)
    assert final["finalStatus"] == "SUCCEEDED", final["diagnostics"]
    assert_exact(hosts, out)
    assert archived(hosts, after)["restarts"] >= 1, "the killed host's subtasks ran again"
    assert_nothing_left(hosts, after)


def start_session(cluster: DockerCluster, name: str, *more: str) -> str:
    started = cluster.edge("yarnflow", "session", "start", "--name", name, *FAST, *TIMEOUT_20S,
                           *more, timeout=600)
    assert started.returncode == 0, started.stdout[-3000:] + started.stderr[-3000:]
    found = re.search(r"application_\d+_\d+", started.stdout)
    assert found, started.stdout
    return found.group(0)


def run_in(cluster: DockerCluster, name: str, *args: str, attach: bool = False) -> str:
    """A job submitted to the session; its id."""
    run = cluster.edge("yarnflow", "run", "-t", "yarn-session", "-a", name,
                       *(["--attach", "--no-progress"] if attach else []), *args, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    return re.search(r"job (\w+) accepted by session", run.stdout).group(1)


def job_ended(page: Page, job_id: str) -> dict | None:
    job = page.job(job_id)
    return job if job and job["state"] in ("FINISHED", "FAILED", "CANCELED") else None


def finished_exact_then_serves_the_next(cluster: DockerCluster, page: Page, name: str,
                                        job_id: str, out: str, input_uri: str,
                                        timeout: float) -> None:
    """The session's job ends FINISHED with its output exact, and the session runs the
    next job exactly too."""
    job = wait_until(lambda: job_ended(page, job_id), timeout, f"job {job_id} to end",
                     interval=1.0)
    assert job["state"] == "FINISHED", job
    assert_exact(cluster, out)
    again = scratch("session-next-job")
    run_in(cluster, name, *profiles(input_uri, again, "--work", "0"), attach=True)
    assert_exact(cluster, again)


def stop_session(cluster: DockerCluster, app_id: str) -> None:
    stopped = cluster.edge("yarnflow", "session", "stop", app_id, timeout=300)
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr
    assert wait_finished(cluster, app_id, 120)["finalStatus"] == "SUCCEEDED"


def test_a_session_loses_a_host_while_its_jobs_containers_start_then_another_after_one_came_back(hosts):
    """A session whose job's containers are starting on a host when it is killed; the
    session serves on. The host comes back, and in the next job another host is killed
    while the job runs; a third job after that runs on what is left."""
    name = f"lost-{uuid.uuid4().hex[:6]}"
    input_uri = put_input(hosts)
    app_id = start_session(hosts, name, "--min-executors", "1")
    page = Page(hosts, app_id)
    try:
        wait_until(lambda: registered_hosts(page), 300, "the session's warm executor", interval=1.0)
        out = scratch("session-lost-while-starting")
        with no_new_containers_on(hosts, appmaster_host(hosts, app_id)):
            job_id = run_in(hosts, name, *profiles(input_uri, out, "--work", "0.3"))
            first = kill_while_starting(hosts, app_id)
        job = wait_until(lambda: job_ended(page, job_id), 600, f"job {job_id} to end", interval=1.0)
        assert job["state"] == "FINISHED", job
        assert_exact(hosts, out)
        assert app(hosts, app_id)["state"] == "RUNNING"

        hosts.docker("start", first)
        hosts.wait_ready()
        out = scratch("session-lost-mid-job")
        job_id = run_in(hosts, name, *profiles(input_uri, out, "--work", "2"))
        _, work = wait_until(lambda: running(page, "slow-map", job_id), 300,
                             "the second job's slow map running", interval=1.0)
        am = appmaster_host(hosts, app_id)
        second = sorted({s["host"] for s in work} - {am, first}) or \
            sorted({s["host"] for s in work} - {am})
        assert second, f"every slow-map subtask runs on the ApplicationMaster's host {am}"
        hosts.docker("kill", second[0])
        job = wait_until(lambda: job_ended(page, job_id), 600, f"job {job_id} to end", interval=1.0)
        assert job["state"] == "FINISHED" and job["restarts"] >= 1, job
        assert_exact(hosts, out)

        out = scratch("session-after-losses")
        run_in(hosts, name, *profiles(input_uri, out, "--work", "0"), attach=True)
        assert_exact(hosts, out)
        assert len(hosts.attempts(app_id)) == 1, "a host loss cost the session its attempt"
    finally:
        stop_session(hosts, app_id)
    assert_nothing_left(hosts, app_id)


def test_a_sessions_appmaster_host_cut_off_past_yarns_liveness_timeout_then_reconnected(hosts):
    """YARN gives up on the cut-off host (45 s here) and starts the session's second
    attempt elsewhere, which runs the accepted job again. The first attempt, back on the
    network, was replaced: it touches nothing, and the job commits exactly once."""
    name = f"cut-{uuid.uuid4().hex[:6]}"
    input_uri = put_input(hosts)
    hold = f"/tmp/yarnflow-tests/hold-{uuid.uuid4().hex[:8]}"
    made = hosts.on("rm", "yarn", "fs", "-touchz", hold, timeout=120)
    assert made.returncode == 0, made.stderr
    status_url = f"http://rm:9870/webhdfs/v1{hold}?op=GETFILESTATUS&user.name=root"
    app_id = start_session(hosts, name, "-D", "yarn.application-attempts=2")
    page = Page(hosts, app_id)
    cut = ""
    try:
        out = scratch("session-am-cut-off")
        job_id = run_in(hosts, name, *profiles(input_uri, out, "--work", "1", "--hold", status_url))
        wait_until(lambda: running(page, "slow-map", job_id), 300, "the job's slow map running",
                   interval=1.0)
        cut = appmaster_host(hosts, app_id)
        hosts.docker("network", "disconnect", NETWORK, cut)

        def second_attempt() -> bool:
            attempts = hosts.attempts(app_id)
            return len(attempts) == 2 and attempts[1].get("nodeId", "").split(":")[0] not in ("", cut)
        wait_until(second_attempt, 300, f"YARN to start a second attempt away from {cut}",
                   interval=1.0)
        wait_until(lambda: running(page, "slow-map", job_id, through=False), 300,
                   "the second attempt running the job again", interval=1.0)
        hosts.docker("network", "connect", NETWORK, cut)
        cut = ""
        released = hosts.on("rm", "yarn", "fs", "-rm", hold, timeout=120)
        assert released.returncode == 0, released.stderr
        finished_exact_then_serves_the_next(hosts, page, name, job_id, out, input_uri, 600)
    finally:
        if cut:
            hosts.docker("network", "connect", NETWORK, cut)
        stop_session(hosts, app_id)
    assert_nothing_left(hosts, app_id)


def test_a_per_job_appmaster_host_cut_off_past_yarns_liveness_timeout_then_reconnected(hosts):
    """The per-job form of the above (and of its ApplicationMaster's host dying: the
    next attempt runs on another host and runs the job again under its id): the
    first attempt, back on the network, touches nothing, and the output is exact."""
    input_uri = put_input(hosts)
    hold = f"/tmp/yarnflow-tests/hold-{uuid.uuid4().hex[:8]}"
    made = hosts.on("rm", "yarn", "fs", "-touchz", hold, timeout=120)
    assert made.returncode == 0, made.stderr
    status_url = f"http://rm:9870/webhdfs/v1{hold}?op=GETFILESTATUS&user.name=root"
    out = scratch("am-cut-off")
    app_id = submit(hosts, "-t", "yarn-per-job", *FAST, *TIMEOUT_20S,
                    "-D", "yarn.application-attempts=2",
                    *profiles(input_uri, out, "--work", "1", "--hold", status_url))
    page = Page(hosts, app_id)
    wait_until(lambda: running(page, "slow-map"), 300, "the job's slow map running", interval=1.0)
    cut = appmaster_host(hosts, app_id)
    hosts.docker("network", "disconnect", NETWORK, cut)
    try:
        def second_attempt() -> bool:
            attempts = hosts.attempts(app_id)
            return len(attempts) == 2 and attempts[1].get("nodeId", "").split(":")[0] not in ("", cut)
        wait_until(second_attempt, 300, f"YARN to start a second attempt away from {cut}",
                   interval=1.0)
        wait_until(lambda: running(page, "slow-map", through=False), 300,
                   "the second attempt running the job again", interval=1.0)
    finally:
        hosts.docker("network", "connect", NETWORK, cut)
    released = hosts.on("rm", "yarn", "fs", "-rm", hold, timeout=120)
    assert released.returncode == 0, released.stderr

    final = wait_finished(hosts, app_id, 600)
    assert final["finalStatus"] == "SUCCEEDED", final["diagnostics"]
    assert_exact(hosts, out)
    assert archived(hosts, app_id)["attempt"] == 2
    assert_nothing_left(hosts, app_id)


def kill_appmaster_host_while_starting(cluster: DockerCluster, app_id: str, warm: int) -> str:
    """As soon as YARN gave the application a container beyond its ApplicationMaster's
    and ``warm`` executors' whose executor has not registered (the job's containers
    are starting), the ApplicationMaster's host is killed. Returns the host."""
    page = Page(cluster, app_id)
    am = appmaster_host(cluster, app_id)

    def starting() -> bool:
        executors = registered(page)
        placed = containers(cluster, app_id)
        return executors is not None and len(placed) > 1 + warm and \
            any(c["containerId"] not in executors for c in placed)
    wait_until(starting, 300, f"a container of {app_id}'s job starting", interval=0.2)
    cluster.docker("kill", am)
    return am


def next_attempt_elsewhere(cluster: DockerCluster, app_id: str, lost: str) -> None:
    def placed() -> bool:
        attempts = cluster.attempts(app_id)
        return len(attempts) == 2 and attempts[1].get("nodeId", "").split(":")[0] not in ("", lost)
    wait_until(placed, 300, f"YARN to start {app_id}'s second attempt away from {lost}",
               interval=1.0)


# Issue 81's session: three warm executors, and a job whose stage 1 is three regions of
# 5 cores each (6-core containers: one per 8-vcore host at most) and whose stage 2 (one
# region, a broadcast joins its subtasks) needs 1 core per slot. On the two hosts left
# after the ApplicationMaster's dies, at most two stage-1 regions fit at once.
REGIONS_SESSION = ("--min-executors", "3", "-D", "yarn.application-attempts=2",
                   "-D", "session.container-sizes=1c-1536m,2c-3072m,4c-6144m,6c-6144m")


def regions(input_uri: str, out: str, *more: str) -> list[str]:
    return [SHAPES, "--", "regions", "--cores", "5", "--input", input_uri, "--out", out, *more]


def ran_region_by_region(page: Page, job_id: str) -> None:
    """Stage 1's three subtasks never ran all at once (a region started after another
    ended), no slot request timed out, and nothing restarted."""
    job = page.job(job_id)
    stage1 = page.subtasks(job, "parquet-source")
    spans = [(s["start-time"], s["start-time"] + s["duration"]) for s in stage1]
    assert len(spans) == 3 and all(start > 0 for start, _ in spans), stage1
    assert any(start >= end for start, _ in spans for _, end in spans), \
        f"all three stage-1 regions overlapped (room for three): {spans}"
    history = page.get(f"jobs/{job_id}/exceptions")["exceptionHistory"]["entries"]
    assert not [e for e in history if "slot.request.timeout" in e["exceptionName"]], history


def test_a_sessions_appmaster_host_killed_while_a_jobs_containers_start(hosts):
    """Issue 81: a session kept three warm executors; its job's containers were starting
    when the ApplicationMaster's host died. The next attempt recovers the job and runs
    it on the two hosts left, whose room is short of a whole stage: stage 1 region by
    region, stage 2 on slots of its own size (asked at stage 1's, its third slot would
    never come). The output is exact, no slot request timed out, and the session
    serves the next job."""
    name = f"amkill-{uuid.uuid4().hex[:6]}"
    input_uri = put_input(hosts)
    app_id = start_session(hosts, name, *REGIONS_SESSION)
    page = Page(hosts, app_id)
    killed = ""
    try:
        wait_until(lambda: len(registered(page) or {}) >= 3, 300,
                   "the session's three warm executors", interval=1.0)
        out = scratch("session-am-killed")
        job_id = run_in(hosts, name, *regions(input_uri, out, "--work", "0.5"))
        killed = kill_appmaster_host_while_starting(hosts, app_id, warm=3)
        next_attempt_elsewhere(hosts, app_id, killed)
        finished_exact_then_serves_the_next(hosts, page, name, job_id, out, input_uri, 900)
        ran_region_by_region(page, job_id)
    except BaseException:
        (artifacts_dir() / f"{app_id}.log").write_text(appmaster_log(hosts, app_id))
        raise
    finally:
        if killed:
            hosts.docker("start", killed)
            hosts.wait_ready()
        stop_session(hosts, app_id)
    assert_nothing_left(hosts, app_id)


def test_a_per_job_appmaster_host_killed_while_its_containers_start(hosts):
    """The per-job form: the next attempt runs the job again on the hosts left (5-core
    containers: one per host beside its other containers), its second stage on the
    1-core containers the application declared for it."""
    input_uri = put_input(hosts)
    out = scratch("am-killed")
    app_id = submit(hosts, "-t", "yarn-per-job", *FAST, *TIMEOUT_20S,
                    "-D", "yarn.application-attempts=2",
                    *regions(input_uri, out, "--work", "0.3"))
    killed = kill_appmaster_host_while_starting(hosts, app_id, warm=0)
    try:
        next_attempt_elsewhere(hosts, app_id, killed)
        final = wait_finished(hosts, app_id, 900)
        assert final["finalStatus"] == "SUCCEEDED", final["diagnostics"]
        assert_exact(hosts, out)
        assert archived(hosts, app_id)["attempt"] == 2
    finally:
        hosts.docker("start", killed)
        hosts.wait_ready()
    assert_nothing_left(hosts, app_id)


@pytest.fixture(autouse=True)
def _whole_cluster(hosts: DockerCluster, warm_hosts: DockerCluster) -> Iterator[None]:
    """Every test here starts on a whole, warm cluster (the previous test restored it)."""
    states = {h: hosts.docker("inspect", "--format", "{{.State.Status}}", h).stdout.strip()
              for h in WORKERS}
    assert set(states.values()) == {"running"}, states
    yield
