"""The dockerised clusters (docker-hadoop/docker/cluster): each started once for the
modules that run on it (tests/conftest.py's DOCKER_CLUSTERS) and taken down after
the last of them (not at the end of the whole run: the rest of the suite should not
share the machine with five idle hosts), unless it was up before they started or
YARNFLOW_KEEP_CLUSTER is set. Their hosts are containers this run made; tests reach
them by `docker exec` and at their addresses on the cluster's own bridge network,
nothing else."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import pytest

from tests.conftest import SECURE_CLUSTER, artifacts_dir, docker_cluster_of, wait_until
from tests.timing import CLUSTER_CPU_FILE

ROOT = Path(__file__).resolve().parents[2]
CLUSTER = ROOT / "docker-hadoop" / "docker" / "cluster"
WORKERS = ("nm1", "nm2", "nm3")


@dataclass(frozen=True)
class DockerCluster:
    env: dict[str, str]

    def docker(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout,
                              env={**os.environ, **self.env})

    def on(self, host: str, *cmd: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        """``cmd`` run on ``host`` (a container of the cluster)."""
        return self.docker("exec", host, *cmd, timeout=timeout)

    def edge(self, *cmd: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        """``cmd`` on the edge host, in the checkout (`cluster edge`)."""
        return subprocess.run([sys.executable, str(CLUSTER), "edge", *cmd], capture_output=True,
                              text=True, timeout=timeout, cwd=ROOT, env={**os.environ, **self.env})

    def rest(self, path: str, user: str = "yarnadmin") -> Any:
        """The ResourceManager's REST API (and its web proxy, to an application's page),
        at the ResourceManager host's address on the cluster's network; on a secure
        cluster as ``user`` (by default YARN's admin), with SPNEGO from the edge host."""
        if self.env.get("YARNFLOW_TEST_SECURE") == "1":
            status, body = self.web(path, user)
            assert status == 200, f"{path}: HTTP {status}: {body[:500]}"
            return json.loads(body)
        with urllib.request.urlopen(self.env["YARNFLOW_TEST_YARN_RM"] + path, timeout=15) as answer:
            return json.load(answer)

    def attempts(self, app_id: str) -> list[dict]:
        """The application's attempts as YARN lists them, the first first."""
        return self.rest(f"/ws/v1/cluster/apps/{app_id}/appattempts")["appAttempts"]["appAttempt"]

    def web(self, path: str, user: str = "yarnadmin") -> tuple[int, str]:
        """A ResourceManager page (or, through its proxy, an application's) as ``user``
        asks for it (`cluster web`): its HTTP status and body."""
        done = subprocess.run([sys.executable, str(CLUSTER), "web", "--as", user,
                               self.env["YARNFLOW_TEST_YARN_RM"] + path], capture_output=True,
                              text=True, timeout=120, env={**os.environ, **self.env})
        assert done.returncode == 0, done.stderr[-2000:]
        answer = json.loads(done.stdout)[0]
        return answer["status"], answer["body"]

    def keep_evidence(self, name: str) -> Path:
        """After a failed test: every worker host's container logs, with the stacks of
        each ApplicationMaster and TaskExecutor (Python's faulthandler on SIGUSR1,
        Skein's JVM on SIGQUIT) written into them first, under test-artifacts/<name>/.
        Then the applications still running are killed, so that the next test does not
        start on a cluster full of a failed one's containers."""
        into = artifacts_dir() / name
        live = [h for h in WORKERS if self.docker("inspect", "--format", "{{.State.Status}}",
                                                  h).stdout.strip() == "running"]
        for host in live:
            self.on(host, "pkill", "-USR1", "-f", r"yarnflow\.(appmaster|taskexecutor)")
            self.on(host, "pkill", "-QUIT", "-f", "com.anaconda.skein.ApplicationMaster")
        for host in live:
            try:
                wait_until(lambda: self.on(host, "grep", "-rlE", "^(Thread 0x|Full thread dump)",
                                           "/data/nm/logs").stdout, 15,
                           f"stacks in {host}'s container logs", interval=0.5)
            except AssertionError:
                pass          # no container on it, or one that cannot answer: keep what is there
        for host in WORKERS:          # a stopped host's files can still be copied
            (into / host).mkdir(parents=True, exist_ok=True)
            self.docker("cp", f"{host}:/data/nm/logs", str(into / host))
        apps = (self.rest("/ws/v1/cluster/apps?states=NEW,NEW_SAVING,SUBMITTED,ACCEPTED,RUNNING")
                .get("apps") or {}).get("app", [])
        if apps:
            self.edge("python", "-c", "import skein, sys\n"
                      "with skein.Client() as c:\n"
                      "    for a in sys.argv[1:]: c.kill_application(a)",
                      *[a["id"] for a in apps])
        return into

    def wait_ready(self) -> None:
        """Until every host is back (`cluster wait`), e.g. after `docker start nm2`."""
        done = subprocess.run([sys.executable, str(CLUSTER), "wait"], capture_output=True, text=True,
                              timeout=600, env={**os.environ, **self.env})
        assert done.returncode == 0, done.stdout + done.stderr


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """Each phase's report on its test, for fixtures that keep evidence of a failure."""
    report = yield
    setattr(item, f"report_{report.when}", report)
    return report


# A worker host has localized a shipped environment: an unpacked archive in its
# NodeManager's cache (public, or private to a user).
LOCALIZED = ("find /data/nm/local/filecache /data/nm/local/usercache -maxdepth 4 "
             "-name '*.tar.gz' -print -quit 2>/dev/null")
# The job that warms them: two executors that end at once
WARM_JOB = ["yarnflow", "run", "-t", "yarn-per-job", "--attach", "--no-progress",
            "-D", "slot.request.timeout=600 s", "tests/yarn/pipelines/shapes.py", "--", "long",
            "--work", "0"]


@pytest.fixture(scope="module")
def warm_hosts(docker_cluster: DockerCluster) -> DockerCluster:
    """The cluster once its worker hosts have the shipped environment. In the whole
    docker tier the ship-environment module (whose first job measures the cold start)
    did it, and this costs three `find`s; a module selected alone on a fresh cluster
    runs one small job first. A cold 2-core cluster's first job packs, uploads and
    localizes the environment for minutes, past the short timeouts of tests that
    start several applications at once or lose a host meanwhile; a cold start is not
    what they test."""
    cold = [h for h in WORKERS if not docker_cluster.on(h, "sh", "-c", LOCALIZED).stdout.strip()]
    if cold:
        out = f"hdfs://rm:9000/tmp/yarnflow-tests/warm-{uuid.uuid4().hex[:8]}/out"
        done = docker_cluster.edge(*WARM_JOB, "--out", out, timeout=1200)
        assert done.returncode == 0, \
            f"warming {', '.join(cold)} failed:\n{done.stdout[-3000:]}{done.stderr[-3000:]}"
    return docker_cluster


def cluster_cpu_s(cluster: DockerCluster) -> float | None:
    """CPU seconds the cluster's hosts have used, from the cgroup that holds every
    container of the cluster's own Docker engine (its counter keeps what hosts killed
    or restarted meanwhile used); None where that cgroup cannot be read (a cgroup
    driver that puts containers beside other services)."""
    pid = cluster.docker("inspect", "--format", "{{.State.Pid}}", "rm").stdout.strip()
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except (OSError, ValueError):
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        parent = Path(path).parent
        if not parent.name.startswith("docker"):     # /docker, or a named cluster's /docker-NAME
            continue
        if "cpuacct" in controllers.split(","):
            for mount in ("cpuacct", "cpu,cpuacct"):
                usage = Path("/sys/fs/cgroup", mount, *parent.parts[1:], "cpuacct.usage")
                if usage.exists():
                    return int(usage.read_text()) / 1e9
        if controllers == "":
            for root in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified"):
                stat = Path(root, *parent.parts[1:], "cpu.stat")
                if stat.exists():
                    fields = dict(f.split() for f in stat.read_text().splitlines())
                    return int(fields["usage_usec"]) / 1e6
    return None


@pytest.fixture(scope="module", autouse=True)
def _cluster_cpu(request: pytest.FixtureRequest, docker_cluster: DockerCluster) -> Iterator[None]:
    """Each module's CPU on the cluster's hosts, for the suite's time table
    (tests/timing.py): a cluster's modules run one after another, each cluster's
    engine has its own cgroup, so the counter between a module's start and end is
    that module's (the first module's excludes the cluster's start)."""
    before = cluster_cpu_s(docker_cluster)
    yield
    after = cluster_cpu_s(docker_cluster)
    if before is not None and after is not None:
        record_cluster_cpu(request.node.nodeid.split("::")[0], after - before)


def record_cluster_cpu(module: str, seconds: float) -> None:
    """Added to the run's file (emptied as the run starts), under a lock: each cluster's
    process writes to it."""
    import fcntl
    path = artifacts_dir() / CLUSTER_CPU_FILE
    with open(path.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        recorded = json.loads(path.read_text()) if path.exists() else {}
        recorded[module] = round(seconds, 1)
        path.write_text(json.dumps(recorded, indent=1))


class Clusters:
    """This process's dockerised clusters by name: each started when the first module
    that runs on it needs it (SECURE_CLUSTER in Hadoop's secure mode), stopped after
    the last (pytest_runtest_teardown below)."""

    def __init__(self) -> None:
        self.up: dict[str, tuple[DockerCluster, bool]] = {}

    def get(self, name: str) -> DockerCluster:
        if name not in self.up:
            self.up[name] = start_cluster(name, secure=name == SECURE_CLUSTER)
        return self.up[name][0]

    def stop(self, name: str) -> None:
        cluster, started_here = self.up.pop(name, (None, False))
        if cluster is not None and started_here and not os.environ.get("YARNFLOW_KEEP_CLUSTER"):
            subprocess.run([sys.executable, str(CLUSTER), "down"], capture_output=True, timeout=300,
                           env={**os.environ, **cluster.env})


CLUSTERS = Clusters()


def start_cluster(name: str, secure: bool) -> tuple[DockerCluster, bool]:
    """`cluster up` (as YARNFLOW_CLUSTER_NAME=name): the cluster, and whether this call
    started it (rather than finding it up)."""
    env = {**os.environ, "YARNFLOW_CLUSTER_NAME": name}
    if name:                          # a named cluster has an engine of its own
        env.pop("DOCKER_HOST", None)
    proc = subprocess.run([sys.executable, str(CLUSTER), "up", *(["--secure"] if secure else [])],
                          capture_output=True, text=True, timeout=2400, env=env)
    if proc.returncode != 0:
        pytest.fail(f"could not start the dockerised cluster {name or '(default)'}:\n"
                    f"{proc.stderr[-4000:]}")
    found = {}
    for line in proc.stdout.splitlines():
        key, _, value = line.removeprefix("export ").partition("=")
        found[key] = value
    cluster = DockerCluster(found)
    if not secure:
        # One Skein driver on the edge host for every yarnflow command the tests run
        # there (`skein driver start`, as the YARN tier's run does), instead of a JVM
        # per command (4-5 CPU-s each). Already running on a kept cluster: no matter.
        # A secure cluster's commands log in as different users: each its own.
        cluster.edge("python", "-m", "skein.cli", "driver", "start")
    return cluster, "already up" not in proc.stderr


@pytest.fixture(scope="module")
def docker_cluster(request: pytest.FixtureRequest) -> DockerCluster:
    """The cluster this module runs on (DOCKER_CLUSTERS), up."""
    return CLUSTERS.get(docker_cluster_of(request.path))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """After a cluster's last module in this process (and that module's fixtures'
    teardown, which may restore its hosts), the cluster goes down."""
    yield
    name = docker_cluster_of(item.path)
    if name in CLUSTERS.up and (nextitem is None or nextitem.path.parent.name != "docker"
                                or docker_cluster_of(nextitem.path) != name):
        CLUSTERS.stop(name)
