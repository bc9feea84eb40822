"""docker-compose.yaml gives `docker compose` users the layout `cluster up` starts:
run with Debian's docker-compose 1.29 on the images `cluster` built, as a project of
its own beside the test cluster, its hosts become ready (three NodeManagers RUNNING,
three DataNodes live) and its edge host, with the checkout's wheel installed as the
file says, reaches YARN and HDFS by their host names."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Callable, Iterator

import pytest

from tests.conftest import ROOT, debian_command, wait_until
from tests.docker.conftest import DockerCluster

COMPOSE_FILE = ROOT / "docker-hadoop" / "docker-compose.yaml"
PROJECT = "yarnflow-compose-test"

# On the rm host (plain python3): NodeManagers RUNNING and DataNodes with storage.
READY = """
import json, urllib.request
def get(url):
    with urllib.request.urlopen(url, timeout=5) as r:
        return json.load(r)
try:
    nodes = (get("http://rm:8088/ws/v1/cluster/nodes").get("nodes") or {}).get("node", [])
    info = get("http://rm:9870/jmx?qry=Hadoop:service=NameNode,name=NameNodeInfo")["beans"][0]
    live = json.loads(info.get("LiveNodes") or "{}")
    print(json.dumps([sum(n["state"] == "RUNNING" for n in nodes),
                      sum(n.get("remaining", 0) > 0 for n in live.values())]))
except OSError:
    print("[0, 0]")
"""


def docker_compose() -> str:
    return debian_command("docker-compose", "docker-compose", "the compose test")


@pytest.fixture
def compose(docker_cluster: DockerCluster) -> Iterator[Callable[..., subprocess.CompletedProcess[str]]]:
    """docker-compose on the file, as project PROJECT, on the test cluster's engine
    (whose images `cluster up` built); the project is taken down after the test."""
    command = [docker_compose(), "-f", str(COMPOSE_FILE), "-p", PROJECT]
    env = {**os.environ, **docker_cluster.env}

    def run(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*command, *args], capture_output=True, text=True, timeout=timeout,
                              env=env, cwd=ROOT)
    yield run
    down = run("down", "--volumes", "--remove-orphans")
    assert down.returncode == 0, down.stderr[-2000:]


def test_docker_compose_starts_the_same_cluster(compose, built_wheel: Path,
                                                docker_cluster: DockerCluster):
    up = compose("up", "-d")
    assert up.returncode == 0, up.stdout[-2000:] + up.stderr[-2000:]
    names = compose("ps", "--services").stdout.split()
    assert sorted(names) == ["edge", "nm1", "nm2", "nm3", "rm"], names

    def ready() -> bool:
        probe = compose("exec", "-T", "rm", "python3", "-c", READY)
        return probe.returncode == 0 and json.loads(probe.stdout) == [3, 3]
    wait_until(ready, 240, "the compose cluster's 3 NodeManagers RUNNING and 3 DataNodes live",
               interval=2.0)
    for worker in ("nm1", "nm2", "nm3"):       # the node image: nothing of yarnflow's
        assert compose("exec", "-T", worker, "python3", "-c", "import pyarrow").returncode != 0

    edge = compose("ps", "-q", "edge").stdout.strip()
    copied = docker_cluster.docker("cp", str(built_wheel), f"{edge}:/tmp/{built_wheel.name}")
    assert copied.returncode == 0, copied.stderr
    installed = compose("exec", "-T", "edge", "pip", "install", "-q", "--no-deps",
                        f"/tmp/{built_wheel.name}")
    assert installed.returncode == 0, installed.stderr[-2000:]
    put = compose("exec", "-T", "edge", "yarnflow", "fs", "put", "/src/README.md",
                  "hdfs://rm:9000/tmp/compose/README.md")
    assert put.returncode == 0, put.stdout + put.stderr
    listed = compose("exec", "-T", "edge", "yarnflow", "fs", "ls", "hdfs://rm:9000/tmp/compose")
    size = f"{(ROOT / 'README.md').stat().st_size:,}"
    assert size in listed.stdout and "README.md" in listed.stdout, listed.stdout + listed.stderr
    nodes = compose("exec", "-T", "edge", "yarn", "node", "-list")
    assert nodes.returncode == 0, nodes.stderr[-2000:]
    assert all(f"{w}:" in nodes.stdout for w in ("nm1", "nm2", "nm3")), nodes.stdout
