"""yarn-session end to end, on a real Hadoop 3.5 cluster (tests/yarn/conftest.py): one
session application serves several jobs; the tests run in file order against it and
the last one stops it."""
from __future__ import annotations

import re
import uuid
from typing import NamedTuple

import pytest

from tests.conftest import wait_until
from tests.yarn.conftest import (FAST, PIPELINES, executor_container, kill_and_watch_replacement,
                                 load_example, yarnflow)
from yarnflow.core.status import ExecutionState
from yarnflow.client.targets.dispatcher_client import DispatcherClient

SHAPES = str(PIPELINES / "shapes.py")
NAME = f"test-session-{uuid.uuid4().hex[:6]}"
# The default slot (1 core, 1 GB) fits the smaller size: its container is 1280 MB.
SIZES = "1c-1280m, 2c-2304m"
SESSION_CONF = [*FAST, "-D", "pipeline.batch-rows=250", "-D", f"session.container-sizes={SIZES}",
                "-D", "resourcemanager.taskmanager-timeout=4 s"]
MIN_EXECUTORS = 2
pytestmark = pytest.mark.usefixtures("yarn_cluster")


def accepted_job_id(proc) -> str:
    found = re.search(r"job (\w+) accepted by session", proc.stdout)
    assert found, f"no job id in the client's output:\n{proc.stdout}\n{proc.stderr}"
    return found.group(1)


@pytest.fixture(scope="module")
def session(yarn_cluster):
    history = f"hdfs:///user/yarnflow-tests/history-{uuid.uuid4().hex[:8]}"
    proc = yarnflow("session", "start", "--name", NAME, "--min-executors", str(MIN_EXECUTORS),
                    *SESSION_CONF, "-D", f"session.history-dir={history}")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    app_id = re.search(r"application_\d+_\d+", proc.stdout).group(0)
    # it returned with the session RUNNING and its Dispatcher answering
    assert yarn_cluster.app(app_id)["state"] == "RUNNING"
    client = DispatcherClient(app_id, timeout=30)
    yield app_id, client
    client.close()
    if yarn_cluster.app(app_id)["state"] not in ("FINISHED", "FAILED", "KILLED"):
        yarnflow("session", "stop", app_id)


def executor_containers(yarn_cluster, app_id: str) -> set[str]:
    """The application's live containers as YARN sees them, without the master's
    (container ..._000001)."""
    return {c["containerId"] for c in yarn_cluster.running_containers(app_id)
            if not c["containerId"].endswith("_000001")}


def work_running(client: DispatcherClient, job_id: str) -> bool:
    work = client.details(job_id).vertex_running("work").subtasks
    return bool(work) and all(s.state is ExecutionState.RUNNING for s in work)


def job_state(client: DispatcherClient, job_id: str) -> str:
    """One job as the Dispatcher shows it, for a failed wait's message: its status,
    restarts, each subtask's state and executor, and its exceptions."""
    details = client.details(job_id)
    subtasks = "; ".join(f"{v.name}[{s.index}] {s.state.value} on {s.resource_id}"
                         for v in details.vertices for s in v.subtasks)
    causes = " | ".join(x.cause for x in details.exceptions)
    return (f"job {job_id} {details.status.value}, {details.restarts} restarts: {subtasks}"
            + (f"; exceptions: {causes}" if causes else ""))


def yarn_state(yarn_cluster) -> str:
    """What YARN had free and who held the rest, for a failed wait's message."""
    metrics = yarn_cluster.get("/ws/v1/cluster/metrics")["clusterMetrics"]
    apps = [f"{a['id']} {a['name']} {a['state']} {a['allocatedMB']} MB "
            f"{a['allocatedVCores']} vcores" for a in yarn_cluster.apps()
            if a["state"] in ("ACCEPTED", "RUNNING")]
    return (f"YARN: {metrics['availableMB']} MB and {metrics['availableVirtualCores']} vcores "
            f"free of {metrics['totalMB']} MB, {metrics['totalVirtualCores']}; "
            f"{metrics['activeNodes']} nodes active; live applications: {'; '.join(apps)}")


def ended(client: DispatcherClient, job_id: str, timeout: float = 120) -> str:
    return wait_until(lambda: (s := client.details(job_id).status).is_globally_terminal and s.value,
                      timeout, f"job {job_id} to end")


class FirstJobs(NamedTuple):
    """The ids of the module's first three jobs, and where they wrote."""
    a: str
    b: str
    d: str
    base: str


@pytest.fixture(scope="module")
def first_jobs(session, hdfs, yarn_cluster) -> FirstJobs:
    """Three jobs at once in the session, ``a`` and ``d`` run to the end and ``b``
    cancelled while all three run. Made once, by the first test
    that asks (any test of this module may run alone); later tests find these jobs
    ended, listed and in the history."""
    app_id, client = session
    base = hdfs.scratch("session-concurrent")
    # held (2 s a batch of 5 rows, the job's own pipeline.batch-rows over the session's
    # 250: 200 batches a work subtask, up to 400 s, past the wait below) until all three
    # were seen running and b was cancelled, however long their executors took to
    # start: with a fixed amount of work, a busy machine's slow start let one end first
    hold = hdfs.hold_file(f"{base}/hold")
    runs = {name: yarnflow("run", "-t", "yarn-session", "-a", ref, "-D", "pipeline.batch-rows=5",
                           SHAPES, "--", "long", "--work", "2", "--hold", hold,
                           "--out", f"{base}/{name}")
            for name, ref in (("a", NAME), ("b", app_id), ("d", NAME))}
    jobs = {name: accepted_job_id(proc) for name, proc in runs.items()}
    try:
        wait_until(lambda: all(work_running(client, jobs[j]) for j in "abd"), 240,
                   "three jobs' subtasks RUNNING at the same time", interval=0.2)
    except AssertionError as timeout:
        raise AssertionError(f"{timeout}; the jobs then:\n" + "\n".join(
            job_state(client, jobs[j]) for j in "abd") + "\n" + yarn_state(yarn_cluster)) \
            from None
    cancel = yarnflow("cancel", jobs["b"])
    assert cancel.returncode == 0, cancel.stdout + cancel.stderr
    assert ended(client, jobs["b"]) == "CANCELED"
    hdfs.fs.delete(f"{base}/hold")
    for job in "ad":
        assert ended(client, jobs[job]) == "FINISHED", client.details(jobs[job]).failure
    return FirstJobs(a=jobs["a"], b=jobs["b"], d=jobs["d"], base=base)


def test_jobs_run_concurrently_and_cancelling_one_leaves_the_others(first_jobs, hdfs):
    base = first_jobs.base
    for job in "ad":
        out = hdfs.read_table(f"{base}/{job}")
        assert sorted(out.column("k").to_pylist()) == list(range(2000))
        assert out.column("v").to_pylist() == [1.0] * 2000
    listing = yarnflow("list", "-a", NAME)
    assert first_jobs.a[:8] in listing.stdout and "CANCELED" in listing.stdout, listing.stdout
    assert hdfs.leftovers(f"{base}/b") == [] and not hdfs.fs.exists(f"{base}/b")


def test_idle_executors_beyond_the_minimum_go_and_a_third_job_runs_on_warm_ones(
        session, first_jobs, yarn_cluster, hdfs):
    app_id, client = session
    out = f"{hdfs.scratch('session-warm')}/c"
    # three jobs at once held six executors; past the timeout the session keeps two
    wait_until(lambda: len(executor_containers(yarn_cluster, app_id)) == MIN_EXECUTORS, 60,
               f"YARN to show {MIN_EXECUTORS} executor containers left", interval=0.3)
    assert yarn_cluster.app(app_id)["state"] == "RUNNING"
    warm = executor_containers(yarn_cluster, app_id)
    c = yarnflow("run", "-t", "yarn-session", "-a", NAME, SHAPES, "--", "long", "--work", "1",
                 "--out", out)
    third = accepted_job_id(c)
    seen: set[str] = set()

    def watch() -> str | bool:
        seen.update(executor_containers(yarn_cluster, app_id))
        status = client.details(third).status
        return status.is_globally_terminal and status.value
    assert wait_until(watch, 120, "the third job to end", interval=0.2) == "FINISHED"
    assert seen == warm, f"new containers while the third job ran: {seen - warm}"
    details = client.details(third)
    used = {s.resource_id for v in details.vertices for s in v.subtasks}
    assert len(used) == MIN_EXECUTORS
    assert hdfs.read_table(out).num_rows == 2000


def test_a_profile_beyond_the_ladder_is_rejected_and_the_session_keeps_serving(session, hdfs):
    app_id, client = session
    base = hdfs.scratch("session-huge")
    proc = yarnflow("run", "-t", "yarn-session", "-a", NAME, SHAPES, "--", "huge", "--memory", "6g",
                    "--out", f"{base}/huge")
    assert proc.returncode != 0
    text = " ".join((proc.stdout + proc.stderr).split())
    assert "fits no container size of this session" in text, text
    assert "1c-1280m" in text and "2c-2304m" in text, text
    overview = client.overview()
    assert overview.executors >= MIN_EXECUTORS
    after = yarnflow("run", "-t", "yarn-session", "-a", NAME, "--attach", "--no-progress", SHAPES,
                     "--", "long", "--work", "0", "--out", f"{base}/after")
    assert after.returncode == 0, after.stdout + after.stderr
    assert hdfs.read_table(f"{base}/after").num_rows == 2000


def test_the_main_example_runs_in_the_session_on_hdfs(session, hdfs):
    """Seed 003's skewed join through the session: its data on HDFS (put there by the
    example), its Spark SQL step in a session executor, its output committed on HDFS."""
    base = hdfs.scratch("session-example")
    data, out = f"{base}/data", f"{base}/out"
    proc = yarnflow("run", "-t", "yarn-session", "-a", NAME, "--attach", "--no-progress",
                    "examples/skewed_join.py", "--", "--rows", "30000", "--data", data,
                    "--out", out, timeout=400)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"wrote 30,000 rows to {out}" in proc.stdout
    got = hdfs.read_table(out).sort_by("InstrumentId")
    want = load_example().reference(data).sort_by("InstrumentId")
    assert got.equals(want.select(got.column_names))
    assert hdfs.leftovers(out) == []


def test_collect_brings_the_sorted_rows_back_from_the_session(session):
    """``to_arrow()`` of a session's job: the rows, every one in sorted order, come back
    through the session's Dispatcher, and the session serves on."""
    from tests.yarn.test_per_job import sorted_digest
    app_id, client = session
    proc = yarnflow("run", "-t", "yarn-session", "-a", NAME, "--no-progress", SHAPES, "--",
                    "collect", "--rows", "6000", "--parallelism", "3", timeout=400)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert sorted_digest(6000) in proc.stdout
    assert client.overview().executors >= MIN_EXECUTORS


def test_a_container_killed_midway_is_replaced_and_the_session_runs_on(session, yarn_cluster,
                                                                       hdfs):
    """A lost executor in a session: the job restarts its region on a replacement of the
    same size and ends exact; the Dispatcher answered throughout; the next job runs."""
    app_id, client = session
    base = hdfs.scratch("session-failover")
    proc = yarnflow("run", "-t", "yarn-session", "-a", NAME, SHAPES, "--", "long", "--work", "3",
                    "--out", f"{base}/killed")
    job = accepted_job_id(proc)

    def midway() -> list:
        details = client.details(job)
        chain = details.vertex_running("work")
        assert chain.operators == ["work", "parquet-sink"], chain.name    # one chained task
        through = details.operator_metrics("parquet-sink").records_in
        return chain.subtasks if work_running(client, job) and through > 0 else []
    work = wait_until(midway, 120, "both chained work subtasks running and rows into the sink",
                      interval=0.3)
    killed = executor_container(app_id, work[0].resource_id)
    killed_size, new_size = kill_and_watch_replacement(yarn_cluster, app_id, killed)
    assert new_size == killed_size, f"{killed} was {killed_size}, its replacement {new_size}"
    assert ended(client, job, 180) == "FINISHED", client.details(job).failure
    details = client.details(job)
    assert details.restarts == 1
    # one failure: every subtask lost with the container, each named with its cause
    assert details.exceptions and all(killed in x.cause for x in details.exceptions), \
        details.exceptions
    table = hdfs.read_table(f"{base}/killed")
    assert sorted(table.column("k").to_pylist()) == list(range(2000)), "rows missing or repeated"
    assert yarn_cluster.app(app_id)["state"] == "RUNNING"
    after = yarnflow("run", "-t", "yarn-session", "-a", NAME, "--attach", "--no-progress", SHAPES,
                     "--", "long", "--work", "0", "--out", f"{base}/after")
    assert after.returncode == 0, after.stdout + after.stderr
    assert hdfs.read_table(f"{base}/after").num_rows == 2000


def test_a_killed_appmaster_comes_back_and_runs_the_unended_job_under_its_id(
        session, first_jobs, yarn_cluster, hdfs):
    """Issue 16, item 4: the session's ApplicationMaster dies with one job running and
    others ended; the next attempt runs the running one again, under the same job id,
    to an exact output; the ended ones stay in the history; the session takes the next
    job with no manual step."""
    from yarnflow.client.targets.dispatcher_client import NotServingYet
    app_id, client = session
    base = hdfs.scratch("session-am")
    proc = yarnflow("run", "-t", "yarn-session", "-a", NAME, SHAPES, "--", "long", "--work", "2",
                    "--out", f"{base}/out")
    job = accepted_job_id(proc)
    wait_until(lambda: work_running(client, job), 120, "the job's work running", interval=0.3)
    assert client.details(job).application_attempt == 1
    yarn_cluster.kill_appmaster(app_id)

    def in_attempt_two():
        try:
            details = client.details(job)
        except NotServingYet:        # between the attempts
            return None
        return details if details.application_attempt == 2 else None
    wait_until(in_attempt_two, 180, f"job {job} in the session's second attempt", interval=1.0)
    assert ended(client, job, 240) == "FINISHED", client.details(job).failure
    assert sorted(hdfs.read_table(f"{base}/out").column("k").to_pylist()) == list(range(2000))
    assert hdfs.leftovers(f"{base}/out") == []
    assert client.details(first_jobs.a).status.value == "FINISHED"    # from the history
    assert len(yarn_cluster.attempts(app_id)) == 2
    assert yarn_cluster.app(app_id)["state"] == "RUNNING"

    after = yarnflow("run", "-t", "yarn-session", "-a", NAME, "--attach", "--no-progress", SHAPES,
                     "--", "long", "--work", "0", "--out", f"{base}/after")
    assert after.returncode == 0, after.stdout + after.stderr
    assert hdfs.read_table(f"{base}/after").num_rows == 2000


def test_the_web_ui_lists_the_running_job_and_those_that_ended_before_the_new_attempt(
        session, first_jobs, yarn_cluster, hdfs, chromium):
    """Issue 17: the session's page, behind its tracking URL, in the attempt that
    followed the killed one: the job running now, and the jobs attempt 1 saw end (from
    the history)."""
    import json
    import urllib.request
    from tests.conftest import artifacts_dir, browse
    app_id, client = session
    ui = yarnflow("ui", app_id)
    assert ui.returncode == 0, ui.stdout + ui.stderr
    url = ui.stdout.strip()
    # held until the test cancels it (a fixed 16 s of work ended, on a busy machine,
    # while the browser still read the page, and the cancel found it ended)
    base = hdfs.scratch("session-web")
    hold = hdfs.hold_file(f"{base}/hold")
    proc = yarnflow("run", "-t", "yarn-session", "-a", NAME, "-D", "pipeline.batch-rows=5",
                    SHAPES, "--", "long", "--work", "2", "--hold", hold, "--out", f"{base}/out")
    job = accepted_job_id(proc)

    def listed() -> dict | None:
        with urllib.request.urlopen(url + "jobs/overview", timeout=15) as response:
            jobs = {j["jid"]: j for j in json.loads(response.read())["jobs"]}
        return jobs if job in jobs and jobs[job]["state"] == "RUNNING" else None
    jobs = wait_until(listed, 120, f"job {job} RUNNING on the session's page", interval=0.5)
    assert jobs[first_jobs.a]["state"] == "FINISHED" and jobs[first_jobs.b]["state"] == "CANCELED"
    # after the killed-appmaster test (the module's order), attempt 2: the ended jobs
    # listed come from the history that attempt 1 wrote
    attempts = yarn_cluster.attempts(app_id)
    assert jobs[job]["application-attempt"] == len(attempts)
    dom = browse(chromium, url, artifacts_dir() / "web-ui-session.png")
    assert f'data-job="{job}"' in dom and f'data-job="{first_jobs.a}"' in dom, dom[-3000:]
    cancel = yarnflow("cancel", job)
    assert cancel.returncode == 0, cancel.stdout + cancel.stderr
    assert ended(client, job) == "CANCELED"
    hdfs.fs.delete(f"{base}/hold")


def test_history_outlives_the_session(session, first_jobs, yarn_cluster):
    app_id, client = session
    stop = yarnflow("session", "stop", NAME)
    assert stop.returncode == 0, stop.stdout + stop.stderr
    app = yarn_cluster.app(app_id)
    assert (app["state"], app["finalStatus"]) == ("FINISHED", "SUCCEEDED"), app["diagnostics"]
    listing = yarnflow("history", "-a", NAME)
    assert listing.returncode == 0, listing.stdout + listing.stderr
    for job in (first_jobs.a, first_jobs.b, first_jobs.d):
        assert job[:8] in listing.stdout, listing.stdout
    one = yarnflow("history", first_jobs.a, "-a", NAME, "--subtasks")
    assert one.returncode == 0, one.stdout + one.stderr
    assert f"job {first_jobs.a} FINISHED" in one.stdout, one.stdout
    assert f"subtasks of job {first_jobs.a}" in one.stdout and "2,000" in one.stdout, one.stdout
    status = yarnflow("status", first_jobs.b)
    assert "from its history" in status.stdout and "CANCELED" in status.stdout, status.stdout
