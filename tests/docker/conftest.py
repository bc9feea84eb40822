"""The dockerised cluster (docker-hadoop/docker/cluster): started once for the tests
in this folder and taken down after the last of them (not at the end of the whole
run: the rest of the suite should not share the machine with five idle hosts),
unless it was up before they started or YARNFLOW_KEEP_CLUSTER is set. Its hosts are containers this run made; tests reach them by `docker exec`
and at their addresses on the cluster's own bridge network, nothing else."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

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

    def rest(self, path: str) -> Any:
        """The ResourceManager's REST API (and its web proxy, to an application's page),
        at the ResourceManager host's address on the cluster's network."""
        with urllib.request.urlopen(self.env["YARNFLOW_TEST_YARN_RM"] + path, timeout=15) as answer:
            return json.load(answer)

    def wait_ready(self) -> None:
        """Until every host is back (`cluster wait`), e.g. after `docker start nm2`."""
        done = subprocess.run([sys.executable, str(CLUSTER), "wait"], capture_output=True, text=True,
                              timeout=600, env={**os.environ, **self.env})
        assert done.returncode == 0, done.stdout + done.stderr


@pytest.fixture(scope="package")
def docker_cluster() -> DockerCluster:
    proc = subprocess.run([sys.executable, str(CLUSTER), "up"], capture_output=True, text=True,
                          timeout=2400)
    if proc.returncode != 0:
        pytest.fail(f"could not start the dockerised cluster:\n{proc.stderr[-4000:]}")
    started_here = "already up" not in proc.stderr
    env = {}
    for line in proc.stdout.splitlines():
        key, _, value = line.removeprefix("export ").partition("=")
        env[key] = value
    try:
        yield DockerCluster(env)
    finally:
        if started_here and not os.environ.get("YARNFLOW_KEEP_CLUSTER"):
            subprocess.run([sys.executable, str(CLUSTER), "down"], capture_output=True, timeout=300,
                           env={**os.environ, **env})
