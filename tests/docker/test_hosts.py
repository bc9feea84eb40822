"""The dockerised cluster is a cluster, not one machine: hosts with their own names,
addresses and filesystems; worker hosts with Java and a plain python3 but nothing of
yarnflow's; the client on an edge host with yarnflow installed from its wheel; HDFS
blocks kept on two different hosts."""
from __future__ import annotations

import json
import urllib.request

import pytest

from tests.conftest import wait_until
from tests.docker.conftest import ROOT, WORKERS, DockerCluster


def test_every_host_runs_and_yarn_and_hdfs_see_three_worker_hosts(docker_cluster: DockerCluster):
    with urllib.request.urlopen(docker_cluster.env["YARNFLOW_TEST_YARN_RM"] + "/ws/v1/cluster/nodes",
                                timeout=10) as r:
        nodes = json.load(r)["nodes"]["node"]
    assert sorted(n["nodeHostName"] for n in nodes if n["state"] == "RUNNING") == list(WORKERS)
    addresses = {h: docker_cluster.docker("inspect", "--format",
                                          "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}",
                                          h).stdout.strip() for h in (*WORKERS, "rm", "edge")}
    assert len(set(addresses.values())) == 5 and all(addresses.values()), addresses
    for host in WORKERS:
        assert docker_cluster.on(host, "hostname").stdout.strip() == host


@pytest.mark.parametrize("host", WORKERS)
def test_worker_hosts_have_java_and_a_plain_python_only(docker_cluster: DockerCluster, host: str):
    assert docker_cluster.on(host, "java", "-version").returncode == 0
    for module in ("yarnflow.client", "pyarrow", "pyspark", "grpc"):
        proc = docker_cluster.on(host, "python3", "-c", f"import {module}")
        assert proc.returncode != 0 and "ModuleNotFoundError" in proc.stderr, (module, proc.stderr)
    # nor this machine's files: the checkout is not there
    assert docker_cluster.on(host, "test", "-e", str(ROOT / "setup.py")).returncode != 0


def test_the_edge_host_runs_yarnflow_from_its_wheel_in_the_checkout(docker_cluster: DockerCluster):
    proc = docker_cluster.edge("python", "-c", "import json, yarnflow.client, importlib.metadata as m; "
                               "d = m.distribution('yarnflow'); print(json.dumps("
                               "[yarnflow.client.__file__, d.read_text('direct_url.json')]))")
    assert proc.returncode == 0, proc.stderr
    module, direct_url = json.loads(proc.stdout)
    assert module.startswith("/opt/yarnflow/lib/"), module
    assert not direct_url or '"editable": true' not in direct_url, direct_url
    assert docker_cluster.edge("test", "-f", "examples/skewed_join.py").returncode == 0
    assert docker_cluster.edge("yarnflow", "--help").returncode == 0


BLOCKS = """
import json, sys
from yarnflow.core.fs import FileSystemSettings, open_filesystem
settings = FileSystemSettings(default_fs="hdfs://rm:9000", user="root",
                              hdfs_http_addresses=(("rm:9000", "rm:9870"),))
fs = open_filesystem("hdfs://rm:9000/", settings)
uri = "hdfs://rm:9000/tmp/yarnflow-tests/replicas.bin"
if sys.argv[1:] == ["write"]:
    fs.mkdirs("hdfs://rm:9000/tmp/yarnflow-tests")
    with fs.open_output(uri) as out:
        out.write(bytes(3 << 20))
print(json.dumps([sorted(b.hosts) for b in fs.block_locations(uri)]))
"""


def test_hdfs_keeps_each_block_on_two_worker_hosts(docker_cluster: DockerCluster):
    written = docker_cluster.edge("python", "-c", BLOCKS, "write")
    assert written.returncode == 0, written.stderr

    def replicated() -> list[list[str]] | None:
        """The blocks' hosts once each has two (HDFS re-replicates a block written
        while a DataNode was still starting)."""
        proc = docker_cluster.edge("python", "-c", BLOCKS)
        assert proc.returncode == 0, proc.stderr
        blocks = json.loads(proc.stdout.splitlines()[-1])
        return blocks if all(len(set(hosts)) == 2 for hosts in blocks) else None
    blocks = wait_until(replicated, 90, "every block of the file to have two replicas", interval=2)
    assert len(blocks) == 3, blocks
