"""The real YARN for the end-to-end tests. Where it is depends on YARNFLOW_TEST_CLUSTER
(tests/conftest.py): by default this folder runs on the edge host of the dockerised
cluster (relayed by tests/docker/test_yarn_tier.py), where "given" names the cluster
in the environment; with "native", `docker-hadoop/native/cluster up` starts one on this
machine for the run and `down` stops it, unless it was up before the tests started.

Faults come from outside the application, as on a cluster whose hosts the tests do not
log in to: a container is killed by its NodeManager (YARN's signal-to-container API,
SIGKILL to its processes), and what is left is what the NodeManagers still list."""
from __future__ import annotations

import getpass
import io
import json
import os
import posixpath
import socket
import subprocess
import sys
import urllib.request
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.conftest import wait_until, yarn_test_cluster
from yarnflow.core.fs import FileSystemSettings, open_filesystem

ROOT = Path(__file__).resolve().parents[2]
CLUSTER = ROOT / "docker-hadoop" / "native" / "cluster"
PIPELINES = Path(__file__).resolve().parent / "pipelines"
MODE = yarn_test_cluster()
# The native cluster's hosts are this machine: they share the client's interpreter,
# which yarn.python names. On a cluster of hosts the client's environment is shipped.
SHARED_PYTHON = ["-D", f"yarn.python={sys.executable}"] if MODE == "native" else []
FAST = [*SHARED_PYTHON,
        "-D", "heartbeat.interval=1 s", "-D", "heartbeat.timeout=20 s",
        "-D", "resourcemanager.taskmanager-timeout=3 s", "-D", "slot.idle.timeout=1 s",
        "-D", "slot.request.timeout=300 s", "-D", "job.cancel.timeout=20 s"]
# How long a job may take to run on nodes that have not localized the shipped
# environment yet: on a fresh dockerised cluster of a 2-core machine, unpacking it took
# 70-80 s per node, the ApplicationMaster's node first, then the executors'.
COLD_START_S = 300
FINISHED = ("FINISHED", "FAILED", "KILLED")
# The hosts with a NodeManager and a DataNode each, and the NameNode's web address.
HOSTS = tuple(os.environ.get("YARNFLOW_TEST_HOSTS", "127.0.0.2,127.0.0.3,127.0.0.4").split(","))
NAMENODE_HTTP = os.environ.get("YARNFLOW_TEST_HDFS_HTTP", "127.0.0.1:9870")
DATANODE_PORT = 9866


@pytest.fixture(scope="session")
def yarn_cluster() -> "YarnRest":
    if MODE == "given":
        yield YarnRest(os.environ["YARNFLOW_TEST_YARN_RM"])
        return
    proc = subprocess.run([sys.executable, str(CLUSTER), "up"], capture_output=True, text=True,
                          timeout=900)
    if proc.returncode != 0:
        pytest.fail(f"could not start the native YARN cluster:\n{proc.stderr[-4000:]}")
    started_here = "already up" not in proc.stderr
    saved = dict(os.environ)
    for line in proc.stdout.splitlines():
        key, _, value = line.removeprefix("export ").partition("=")
        os.environ[key] = value.replace("$PATH", os.environ.get("PATH", ""))
    try:
        yield YarnRest(os.environ["YARNFLOW_TEST_YARN_RM"])
    finally:
        os.environ.clear()
        os.environ.update(saved)
        if started_here and not os.environ.get("YARNFLOW_KEEP_CLUSTER"):
            subprocess.run([sys.executable, str(CLUSTER), "down"], capture_output=True, timeout=120)


@pytest.fixture(scope="session", autouse=True)
def skein_driver(yarn_cluster: "YarnRest") -> Any:
    """One Skein driver for the tier, as `skein driver start` gives a user who runs many
    commands: each `yarnflow` command and YarnApplication connects to it instead of
    starting a JVM of its own (seconds each, on two cores). The private driver's path
    is the secure tests', whose users each log in with their own ticket."""
    skein = [sys.executable, "-m", "skein.cli", "driver"]
    running = subprocess.run([*skein, "address"], capture_output=True, text=True, timeout=60)
    if running.returncode == 0:       # the user's own: used, and left running
        yield
        return
    if os.environ.get("PYTEST_XDIST_WORKER"):
        pytest.fail("side by side, the tests share one Skein driver, which none of them may stop. "
                    f"Fix: start it first with `{sys.executable} -m skein.cli driver start`")
    started = subprocess.run([*skein, "start"], capture_output=True, text=True, timeout=180)
    if started.returncode != 0:
        pytest.fail(f"could not start Skein's driver:\n{started.stderr[-3000:]}")
    try:
        yield
    finally:
        subprocess.run([*skein, "stop"], capture_output=True, timeout=60)


@pytest.fixture(scope="session")
def hdfs(yarn_cluster: "YarnRest") -> "Hdfs":
    return Hdfs(os.environ["YARNFLOW_TEST_HDFS"])


class Hdfs:
    """The test cluster's HDFS seen directly, not through a job: what the tests put
    there and read back."""

    def __init__(self, default_fs: str) -> None:
        self.default_fs = default_fs
        self.settings = FileSystemSettings(
            default_fs=default_fs, user=getpass.getuser(),
            hdfs_http_addresses=((urlsplit(default_fs).netloc, NAMENODE_HTTP),))
        self.fs = open_filesystem(default_fs + "/", self.settings)

    def scratch(self, name: str) -> str:
        """A fresh directory's URI. Its path exists on no local disk: a job that read or
        wrote the local path of the same name would not find or leave its data there."""
        uri = f"{self.default_fs}/tmp/yarnflow-tests/{name}-{uuid.uuid4().hex[:8]}"
        self.fs.mkdirs(uri)
        assert not os.path.exists(urlsplit(uri).path)
        return uri

    def hold_file(self, uri: str) -> str:
        """An empty file at ``uri`` and the WebHDFS URL a job's code polls to see whether
        it still exists (shapes.py's --hold): the test releases the job by deleting it."""
        self.fs.write_whole(uri, b"")
        user = self.settings.user
        return f"http://{NAMENODE_HTTP}/webhdfs/v1{self.fs.path(uri)}?op=GETFILESTATUS&user.name={user}"

    def read_table(self, uri: str) -> pa.Table:
        return pq.read_table(self.fs.path(uri), filesystem=self.fs.arrow)

    def write_table(self, table: pa.Table, uri: str, **options: Any) -> None:
        self.fs.mkdirs(posixpath.dirname(uri))
        with self.fs.open_output(uri) as out:
            pq.write_table(table, out, **options)

    def write_table_on(self, table: pa.Table, uri: str, host: str, **options: Any) -> None:
        """A Parquet file whose blocks are all stored on ``host``: WebHDFS's
        ``excludedatanodes`` (by address) leaves the NameNode one DataNode to write
        through, HDFS puts a writer's blocks on its own host, and one replica keeps
        them there."""
        buffer = io.BytesIO()
        pq.write_table(table, buffer, **options)
        others = ",".join(f"{socket.gethostbyname(h)}:{DATANODE_PORT}" for h in HOSTS if h != host)
        webhdfs = self.fs.webhdfs

        def create() -> Any:
            try:   # the NameNode may pass over a DataNode that just missed a heartbeat
                return webhdfs._call("CREATE", method="put", path=self.fs.path(uri),
                                     redirect=False, overwrite="true", excludedatanodes=others,
                                     replication="1")
            except RuntimeError as err:
                if "Failed to find datanode" in str(err):
                    return None
                raise
        created = wait_until(create, 30, f"the NameNode to take a block on {host}",
                             interval=0.5)
        webhdfs.session.put(created.headers["Location"], data=buffer.getvalue()).raise_for_status()

    def block_hosts(self, uri: str) -> list[tuple[str, ...]]:
        return [block.hosts for block in self.fs.block_locations(uri)]

    def leftovers(self, uri: str) -> list[str]:
        """Staging or moved-aside directories of ``uri`` that a job left beside it."""
        parent, base = posixpath.split(self.fs.path(uri).rstrip("/"))
        return [n for n in self.fs.list_dir(self.fs.uri(parent))
                if n.startswith(f".{base}.yarnflow-")]


def kill_and_watch_replacement(yarn: "YarnRest", app_id: str, killed: str
                               ) -> tuple[tuple[int, int], tuple[int, int]]:
    """Kill the container ``killed`` (a TaskExecutor's) and wait for YARN to list a
    container the application did not have before. Returns the killed container's size
    and the new one's, as (MB, vcores)."""
    sizes = {c["containerId"]: (c["allocatedMB"], c["allocatedVCores"])
             for c in yarn.running_containers(app_id)}
    yarn.kill_container(killed)

    def replacement() -> tuple[int, int] | None:
        for c in yarn.running_containers(app_id):
            if c["containerId"] not in sizes:
                return c["allocatedMB"], c["allocatedVCores"]
        return None
    new_size = wait_until(replacement, 120, f"YARN to list a container replacing {killed}",
                          interval=0.3)
    return sizes[killed], new_size


def executor_container(app_id: str, resource_id: str) -> str:
    """The YARN container of the executor ``resource_id`` (Skein's container id), as
    the application's Skein master tells it with the client's credentials."""
    import skein
    from yarnflow.client.targets.app_store import ApplicationStore
    from yarnflow.client.targets.yarn_client import skein_client
    tls = ApplicationStore().credentials(app_id)
    app = skein_client(30).connect(app_id, wait=False, security=skein.Security(
        cert_bytes=tls.cert_pem, key_bytes=tls.key_pem))
    for container in app.get_containers():
        if container.id == resource_id:
            return container.yarn_container_id
    raise AssertionError(f"no container of executor {resource_id} in {app_id}")


def submitted_job_id(proc: subprocess.CompletedProcess[str]) -> str:
    for line in proc.stdout.splitlines():
        words = line.split()
        if words[:2] == ["submitted", "job"]:
            return words[2]
    raise AssertionError(f"no job id in the client's output:\n{proc.stdout}\n{proc.stderr}")


class YarnRest:
    """YARN's own view, from the ResourceManager's REST API."""

    def __init__(self, base: str) -> None:
        self.base = base

    def get(self, path: str) -> Any:
        with urllib.request.urlopen(self.base + path, timeout=10) as response:
            return json.load(response)

    def app(self, app_id: str) -> dict:
        return self.get(f"/ws/v1/cluster/apps/{app_id}")["app"]

    def apps(self) -> list[dict]:
        return (self.get("/ws/v1/cluster/apps").get("apps") or {}).get("app", [])

    def app_ids(self) -> set[str]:
        return {a["id"] for a in self.apps()}

    def apps_named(self, name: str) -> list[str]:
        """The applications called ``name``: a refused submission's own (its test names
        it with yarn.application.name), whatever the tests beside it submit."""
        return [a["id"] for a in self.apps() if a["name"] == name]

    def attempts(self, app_id: str) -> list[dict]:
        """The application's attempts as YARN lists them, the first first."""
        return self.get(f"/ws/v1/cluster/apps/{app_id}/appattempts")["appAttempts"]["appAttempt"]

    def running_containers(self, app_id: str) -> list[dict]:
        """The application's live containers with their allocated sizes."""
        attempts = self.attempts(app_id)
        attempt = attempts[-1]["appAttemptId"]
        data = self.get(f"/ws/v1/cluster/apps/{app_id}/appattempts/{attempt}/containers")
        return (data or {}).get("container", []) if isinstance(data, dict) else []

    def appmaster_container(self, app_id: str) -> str:
        """The container of the application's current ApplicationMaster attempt."""
        attempts = self.attempts(app_id)
        return attempts[-1]["containerId"]

    def executor_containers(self, app_id: str) -> list[str]:
        """The application's live containers but its ApplicationMaster's, sorted."""
        am = self.appmaster_container(app_id)
        return sorted(c["containerId"] for c in self.running_containers(app_id)
                      if c["containerId"] != am)

    def kill_container(self, container_id: str) -> None:
        """SIGKILL to the container's processes, sent by its NodeManager: no goodbye to
        Skein, YARN or the job, as when its process is killed on its host."""
        request = urllib.request.Request(
            f"{self.base}/ws/v1/cluster/containers/{container_id}/signal/FORCEFUL_SHUTDOWN"
            f"?user.name={getpass.getuser()}", method="POST")
        with urllib.request.urlopen(request, timeout=10) as response:
            assert response.status == 200, f"signalling {container_id}: HTTP {response.status}"

    def kill_appmaster(self, app_id: str) -> str:
        """Kill the current ApplicationMaster's container; return its id."""
        container = self.appmaster_container(app_id)
        self.kill_container(container)
        return container

    def node_containers(self, app_id: str) -> list[str]:
        """Containers of the application that any running NodeManager still has (a
        container YARN has let go of but whose processes live on would be listed here).
        The RM also lists nodes it lost, e.g. a host a fault test killed and started
        again under a new NodeManager: they have no HTTP address and run nothing."""
        nodes = (self.get("/ws/v1/cluster/nodes?states=RUNNING").get("nodes") or {}).get("node", [])
        left = []
        for node in nodes:
            url = f"http://{node['nodeHTTPAddress']}/ws/v1/node/containers"
            with urllib.request.urlopen(url, timeout=10) as response:
                listed = (json.load(response).get("containers") or {}).get("container", [])
            left += [c["id"] for c in listed if app_id.removeprefix("application_") in c["id"]
                     and c.get("state") != "DONE"]
        return left

    def wait_finished(self, app_id: str, timeout: float = 240) -> dict:
        return wait_until(lambda: (a := self.app(app_id))["state"] in FINISHED and a,
                          timeout, f"{app_id} to finish", interval=0.5)


def unique_app_name(what: str) -> tuple[list[str], str]:
    """``-D yarn.application.name=…`` for a submission that must be refused, and that name."""
    name = f"{what}-{uuid.uuid4().hex[:8]}"
    return ["-D", f"yarn.application.name={name}"], name


def load_example() -> Any:
    """examples/skewed_join.py as a module (its data generator and pyarrow reference)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("skewed_join",
                                                  ROOT / "examples" / "skewed_join.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)   # type: ignore[union-attr]
    return module


def yarnflow(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "yarnflow.client.cli", *args], capture_output=True,
                          text=True, timeout=timeout, cwd=ROOT)


def submitted_app_id(proc: subprocess.CompletedProcess[str]) -> str:
    for word in proc.stdout.split():
        if word.startswith("application_"):
            return word
    raise AssertionError(f"no application id in the client's output:\n{proc.stdout}\n{proc.stderr}")
