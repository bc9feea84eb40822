"""Unbounded jobs on the dockerised cluster (issue 83), in Hadoop's secure mode, as
alice: a Kafka broker on a host of its own (`cluster kafka up`), which the
NodeManager hosts reach as kafka:9092; checkpoints on HDFS under alice's home, written
by containers with her delegation token.

The job (tests/yarn/pipelines/streams.py): Kafka → watermarks → a map that works a
while per batch → each user's count and sum per 10 s window → Parquet in hourly
directories on HDFS, exactly once. It runs until `yarnflow stop` ends it with a final
savepoint. Per-job, once a NodeManager host is killed mid-job, and once the
ApplicationMaster's container is killed (the next attempt finds the completed
checkpoints on HDFS and resumes from the latest); then a session runs two such jobs
and a batch job side by side. Every output must equal what pyarrow computes from the
records, each window exactly once.

It runs on the secure cluster after its own module (tests/conftest.py's
DOCKER_CLUSTERS): a host killed here overlaps no other module's applications.

It runs only with YARNFLOW_TEST_YARN_STREAMING=1 for now: in the whole suite on a
2-core machine (98 % busy) it took 18 minutes and the second test timed out waiting for
its windows after the ApplicationMaster's restart, while alone all three pass in about
4 minutes; the suite's time budget and that failure come first (issue 83's notes)."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
from typing import Iterator

import pytest

from tests.conftest import wait_until
from tests.docker.conftest import CLUSTER, ROOT, DockerCluster
from tests.docker.test_host_faults import Page, wait_finished
from tests.docker.test_yarn_tier_secure import POLL_S, alice, app, secure

__all__ = ["alice", "secure"]       # the fixtures, shared with the secure module

pytestmark = pytest.mark.skipif(os.environ.get("YARNFLOW_TEST_YARN_STREAMING") != "1",
                                reason="streaming on YARN runs with "
                                       "YARNFLOW_TEST_YARN_STREAMING=1 (see the module's docstring)")

STREAMS = str(ROOT / "tests" / "yarn" / "pipelines" / "streams.py")
RECORDS = 24_000
FAST = ["-D", "heartbeat.interval=1 s", "-D", "heartbeat.timeout=20 s",
        "-D", "resourcemanager.taskmanager-timeout=3 s", "-D", "slot.idle.timeout=1 s",
        "-D", "slot.request.timeout=300 s", "-D", "pipeline.batch-rows=250",
        "-D", "execution.checkpointing.interval=2 s",
        "-D", "restart-strategy.type=fixed-delay", "-D", "restart-strategy.fixed-delay.attempts=20",
        "-D", "restart-strategy.fixed-delay.delay=2 s"]


@pytest.fixture(autouse=True)
def evidence(secure: DockerCluster, request: pytest.FixtureRequest) -> Iterator[None]:
    """After a failed test, the hosts' container logs with every ApplicationMaster's and
    executor's stacks (as the host-fault tests keep them), and its applications killed."""
    yield
    report = getattr(request.node, "report_call", None)
    if report is not None and report.failed:
        print(f"logs and stacks of the failed test's hosts: "
              f"{secure.keep_evidence(request.node.name)}")


@pytest.fixture(scope="module")
def kafka(secure: DockerCluster) -> Iterator[str]:
    """The broker on the cluster's `kafka` host, for the module's length."""
    env = {**os.environ, **secure.env}
    started = subprocess.run([sys.executable, str(CLUSTER), "kafka", "up"], capture_output=True,
                             text=True, timeout=1500, env=env)
    assert started.returncode == 0, started.stderr[-3000:]
    address = started.stdout.strip().splitlines()[-1].partition("=")[2]
    yield address
    subprocess.run([sys.executable, str(CLUSTER), "kafka", "down"], capture_output=True,
                   timeout=300, env=env)


def produce(cluster: DockerCluster, broker: str, seed: int) -> str:
    topic = f"events-{uuid.uuid4().hex[:8]}"
    done = cluster.edge("python", STREAMS, "produce", "--broker", broker, "--topic", topic,
                        "--count", str(RECORDS), "--seed", str(seed), timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return topic


def windows_job(broker: str, topic: str, out: str, *more: str) -> list[str]:
    return [STREAMS, "--", "windows", "--broker", broker, "--topic", topic, "--out", out, *more]


def check(cluster: DockerCluster, out: str, seed: int) -> dict:
    done = cluster.edge("python", STREAMS, "check", "--out", out, "--count", str(RECORDS),
                        "--seed", str(seed), timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return json.loads(done.stdout.splitlines()[-1])


def all_windows(cluster: DockerCluster, out: str, seed: int) -> bool:
    figures = check(cluster, out, seed)
    return figures["windows"] >= figures.get("want", RECORDS)


def job_page(page: Page, job_id: str | None = None) -> dict | None:
    """The job's page; None while the application is not serving it (a secure
    cluster's proxy redirects to YARN's own page until the ApplicationMaster runs)."""
    try:
        return page.job(job_id)
    except AssertionError:
        return None


def checkpoints(page: Page, job_id: str | None = None) -> dict:
    """The job's checkpoint counts (Flink's shape), {} while it is not served."""
    job = job_page(page, job_id)
    if job is None:
        return {}
    try:
        return page.get(f"jobs/{job['jid']}/checkpoints")["counts"]
    except (OSError, ValueError, KeyError, AssertionError):
        return {}


def short(host: str) -> str:
    """A secure cluster's host carries its full name; its container, the short one."""
    return host.split(".")[0]


def submit(cluster: DockerCluster, *args: str) -> str:
    run = cluster.edge("yarnflow", "run", "-t", "yarn-per-job", *FAST, *args, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    return re.search(r"application_\d+_\d+", run.stdout).group(0)


def stop(cluster: DockerCluster, ref: str, out: str, *more: str) -> None:
    """`yarnflow stop`: a final savepoint (beside the output), whose files are committed."""
    stopped = cluster.edge("yarnflow", "stop", ref, "--savepoint", f"/user/alice/{out}-savepoints",
                           *more, timeout=600)
    assert stopped.returncode == 0, stopped.stdout[-3000:] + stopped.stderr[-3000:]


def test_a_per_job_streaming_job_loses_a_host_and_its_output_is_exact(alice, kafka):
    """A NodeManager host that runs a subtask (not the ApplicationMaster's) is killed
    once a checkpoint has completed: the job restarts from it on the hosts left."""
    topic, out = produce(alice, kafka, seed=1), f"yarnflow-tests/stream-host-{uuid.uuid4().hex[:8]}"
    app_id = submit(alice, *windows_job(kafka, topic, out))
    page = Page(alice, app_id)
    wait_until(lambda: checkpoints(page).get("completed", 0) >= 1, 600,
               f"{app_id}'s first completed checkpoint", interval=POLL_S)
    am = short(str(app(alice, app_id)["amHostHttpAddress"]).split(":")[0])
    job = job_page(page)
    assert job is not None, f"{app_id}'s job is not served"
    hosts = {short(s["host"]) for s in page.subtasks(job, "work") if s.get("host")}
    victim = sorted(hosts - {am})[0] if hosts - {am} else None
    assert victim, f"every subtask runs on the ApplicationMaster's host {am}: {hosts}"
    alice.docker("kill", victim)
    try:
        wait_until(lambda: (job_page(page) or {}).get("restarts", 0) >= 1, 300,
                   f"the job to restart after {victim} was killed", interval=POLL_S)
        wait_until(lambda: all_windows(alice, out, 1), 600, "every window committed",
                   interval=5.0)
    finally:
        alice.docker("start", victim)
        alice.wait_ready()
    stop(alice, app_id, out)
    final = wait_finished(alice, app_id, 300)
    assert final["finalStatus"] == "SUCCEEDED", final["diagnostics"]
    figures = check(alice, out, 1)
    assert figures["exact"] and figures["twice"] == 0, figures


def test_a_per_job_streaming_job_resumes_in_the_next_attempt_from_its_checkpoint(alice, kafka):
    """The ApplicationMaster's container is killed (SIGKILL through its NodeManager);
    YARN's second attempt reads the completed checkpoints on HDFS and resumes the job
    from the latest, not from the topic's start, and the output is exact."""
    topic, out = produce(alice, kafka, seed=2), f"yarnflow-tests/stream-am-{uuid.uuid4().hex[:8]}"
    app_id = submit(alice, "-D", "yarn.application-attempts=2",
                    *windows_job(kafka, topic, out))
    page = Page(alice, app_id)
    wait_until(lambda: checkpoints(page).get("completed", 0) >= 2, 600,
               f"{app_id}'s first two completed checkpoints", interval=POLL_S)
    first = alice.attempts(app_id)[-1]["containerId"]
    signalled = alice.edge("yarn", "container", "-signal", first, "FORCEFUL_SHUTDOWN",
                           timeout=120)
    assert signalled.returncode == 0, signalled.stdout[-2000:] + signalled.stderr[-2000:]
    wait_until(lambda: len(alice.attempts(app_id)) == 2, 300, f"{app_id}'s second attempt",
               interval=POLL_S)
    restored = wait_until(lambda: (checkpoints(page).get("restored") or 0) >= 1
                          and checkpoints(page), 600,
                          "the second attempt's job restored from a checkpoint", interval=POLL_S)
    assert restored["restored"] >= 1, restored
    wait_until(lambda: all_windows(alice, out, 2), 600, "every window committed", interval=5.0)
    stop(alice, app_id, out)
    final = wait_finished(alice, app_id, 300)
    assert final["finalStatus"] == "SUCCEEDED", final["diagnostics"]
    figures = check(alice, out, 2)
    assert figures["exact"] and figures["twice"] == 0, figures


def test_a_session_runs_two_streaming_jobs_and_a_batch_job_side_by_side(alice, kafka):
    name = f"streams-{uuid.uuid4().hex[:6]}"
    started = alice.edge("yarnflow", "session", "start", "--name", name, *FAST,
                         "-D", "session.start-timeout=540 s", timeout=600)
    assert started.returncode == 0, started.stdout[-3000:] + started.stderr[-3000:]
    base = f"yarnflow-tests/stream-session-{uuid.uuid4().hex[:8]}"
    try:
        jobs = []
        for seed in (3, 4):
            topic = produce(alice, kafka, seed=seed)
            # a job's checkpointing is its own (planned on the client, as Flink's is)
            job = windows_job(kafka, topic, f"{base}/out-{seed}", "--name", f"stream-{seed}",
                              "--parallelism", "1")
            run = alice.edge("yarnflow", "run", "-t", "yarn-session", "-a", name,
                             "-D", "execution.checkpointing.interval=2 s", *job, timeout=600)
            assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
            jobs.append(re.search(r"job (\w+) accepted by session", run.stdout).group(1))
        batch = alice.edge("yarnflow", "run", "-t", "yarn-session", "-a", name, "--attach",
                           "--no-progress", "examples/skewed_join.py", "--", "--rows", "20000",
                           "--data", f"{base}/data", "--out", f"{base}/batch-out", timeout=900)
        assert batch.returncode == 0, batch.stdout[-3000:] + batch.stderr[-3000:]
        from tests.docker.test_yarn_tier_secure import exact_output
        assert exact_output(alice, f"{base}/data", f"{base}/batch-out") == {"rows": 20000,
                                                                            "exact": True}
        for seed, job_id in zip((3, 4), jobs):
            wait_until(lambda: all_windows(alice, f"{base}/out-{seed}", seed), 600,
                       f"every window of job {job_id} committed", interval=5.0)
            stop(alice, job_id, f"{base}/out-{seed}", "-a", name)
            figures = check(alice, f"{base}/out-{seed}", seed)
            assert figures["exact"] and figures["twice"] == 0, (job_id, figures)
    finally:
        stopped = alice.edge("yarnflow", "session", "stop", name, timeout=300)
        assert stopped.returncode == 0, stopped.stdout[-2000:] + stopped.stderr[-2000:]
