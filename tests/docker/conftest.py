"""The dockerised clusters (docker-hadoop/docker/cluster): each started once for the
tests in this folder that run on it (tests/conftest.py's DOCKER_CLUSTERS) and taken
down after the last of them (not at the end of the whole run: the rest of the suite
should not share the machine with idle hosts), unless it was up before they started
or YARNFLOW_KEEP_CLUSTER is set. Its hosts are
containers this run made; tests reach them by `docker exec` and at their addresses on
the cluster's own bridge network, nothing else."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import pytest

from tests.conftest import DOCKER_ORDER, artifacts_dir, docker_prefix, wait_until

ROOT = Path(__file__).resolve().parents[2]
CLUSTER = ROOT / "docker-hadoop" / "docker" / "cluster"
WORKERS = ("nm1", "nm2", "nm3")
HOSTS = ("rm", *WORKERS, "edge", "kdc")
NETWORK = "yarnflow-hadoop"


@dataclass(frozen=True)
class DockerCluster:
    env: dict[str, str]

    @property
    def prefix(self) -> str:
        return self.env.get("YARNFLOW_DOCKER_PREFIX", "")

    def container(self, name: str) -> str:
        """The container of host ``name`` (or the cluster's network for NETWORK), as
        `cluster` names them with YARNFLOW_DOCKER_PREFIX; ``host:path`` too."""
        host, colon, path = name.partition(":")
        if not self.prefix:
            return name
        if name == NETWORK:
            return f"{NETWORK}-{self.prefix}"
        return f"{self.prefix}-{host}{colon}{path}" if host in HOSTS else name

    def docker(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        """``docker VERB ARGS``, with the hosts and the network named in ARGS by their
        plain names (nm2, yarnflow-hadoop): this cluster's containers are meant. Only
        `exec` runs a command, and takes the host through ``on``."""
        assert args[0] != "exec", "a command on a host: use on(host, ...)"
        skip = 2 if args[0] == "network" else 1
        if args[:2] == ("network", "connect") and self.prefix:
            args = (*args[:2], "--alias", args[-1], *args[2:])   # its plain name again
            skip = 4
        args = (*args[:skip], *(self.container(a) for a in args[skip:]))
        return subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout,
                              env={**os.environ, **self.env})

    def on(self, host: str, *cmd: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        """``cmd`` run on ``host`` (a container of the cluster)."""
        return subprocess.run(["docker", "exec", self.container(host), *cmd], capture_output=True,
                              text=True, timeout=timeout, env={**os.environ, **self.env})

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


class Clusters:
    """The docker tier's clusters, each started the first time a module of its asks for
    it (`cluster up` with its YARNFLOW_DOCKER_PREFIX) and taken down after the folder's
    last test, unless it was up before or YARNFLOW_KEEP_CLUSTER is set."""

    def __init__(self) -> None:
        self.up: dict[str, DockerCluster] = {}
        self.started_here: list[DockerCluster] = []

    def get(self, prefix: str, selected: set[str]) -> DockerCluster:
        """The cluster, started; ``selected``: the run's modules on it."""
        if prefix not in self.up:
            cluster = self.up[prefix] = self.start(prefix)
            if cluster.env.get("YARNFLOW_TEST_SECURE") != "1":
                start_skein_driver(cluster)
                if not selected & COLD_START_MODULES:
                    warm(cluster)
        return self.up[prefix]

    def start(self, prefix: str) -> DockerCluster:
        # YARNFLOW_TEST_SECURE_ONLY=1: the secure module alone, without a start as an
        # insecure cluster first (the rest of this folder needs the insecure one)
        secure = ["--secure"] if os.environ.get("YARNFLOW_TEST_SECURE_ONLY") == "1" else []
        proc = subprocess.run([sys.executable, str(CLUSTER), "up", *secure], capture_output=True,
                              text=True, timeout=2400,
                              env={**os.environ, "YARNFLOW_DOCKER_PREFIX": prefix})
        if proc.returncode != 0:
            pytest.fail(f"could not start the dockerised cluster {prefix!r}:\n{proc.stderr[-4000:]}")
        env = {}
        for line in proc.stdout.splitlines():
            key, _, value = line.removeprefix("export ").partition("=")
            env[key] = value
        cluster = DockerCluster(env)
        if "already up" not in proc.stderr:
            self.started_here.append(cluster)
        return cluster

    def stop(self) -> None:
        if os.environ.get("YARNFLOW_KEEP_CLUSTER"):
            return
        for cluster in self.started_here:
            subprocess.run([sys.executable, str(CLUSTER), "down"], capture_output=True, timeout=300,
                           env={**os.environ, **cluster.env})


# The module that measures a fresh cluster's first submission itself.
COLD_START_MODULES = {"test_ship_environment.py"}


def start_skein_driver(cluster: DockerCluster) -> None:
    """Skein's global driver on the edge host, as a user's workstation has it (`skein
    driver start`): every `yarnflow` command there then talks to it instead of
    starting a JVM of its own (seconds of CPU each, and on a loaded machine longer
    than yarn.client.timeout). A secure cluster's tests start their own, as the user
    whose ticket they test."""
    started = cluster.edge("python", "-m", "skein.cli", "driver", "start", timeout=600)
    assert started.returncode == 0, "starting Skein's driver on the edge host failed:\n" + \
        started.stdout[-2000:] + started.stderr[-2000:]


def warm(cluster: DockerCluster) -> None:
    """A fresh cluster's first job packs the client's environment, uploads it and has
    each host localize it: minutes on a busy 2-core machine, which a test's own waits
    are not sized for. One job with executors on every host does it first, with
    start timeouts that wait for it."""
    out = "hdfs://rm:9000/tmp/yarnflow-tests/warm/out"
    run = cluster.edge("yarnflow", "run", "-t", "yarn-per-job", "--attach", "--no-progress",
                       "-D", "resourcemanager.worker.start-timeout=900 s",
                       "-D", "slot.request.timeout=900 s", "-D", "resourcemanager.taskmanager-timeout=3 s",
                       "tests/yarn/pipelines/shapes.py", "--", "batch", "--parallelism", "6",
                       "--work", "0", "--out", out, timeout=1500)
    assert run.returncode == 0, "warming the cluster up failed:\n" + run.stdout[-3000:] + run.stderr[-3000:]


@pytest.fixture(scope="package")
def docker_clusters() -> Iterator[Clusters]:
    clusters = Clusters()
    try:
        yield clusters
    finally:
        clusters.stop()


@pytest.fixture(scope="module")
def docker_cluster(docker_clusters: Clusters, request: pytest.FixtureRequest) -> DockerCluster:
    """The cluster this module runs on (tests/conftest.py's DOCKER_CLUSTERS)."""
    prefix = docker_prefix(request.path.name)
    selected = {item.path.name for item in request.session.items
                if item.path.parent.name == "docker" and item.path.name in DOCKER_ORDER
                and docker_prefix(item.path.name) == prefix}
    return docker_clusters.get(prefix, selected)
