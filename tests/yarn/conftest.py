"""The real YARN for the end-to-end tests: `docker-hadoop/native/cluster up` (a
ResourceManager, three NodeManagers and HDFS from Hadoop 3.5 jars) once per session,
and `down` at the end unless it was already up before the tests started."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import wait_until

ROOT = Path(__file__).resolve().parents[2]
CLUSTER = ROOT / "docker-hadoop" / "native" / "cluster"
PIPELINES = Path(__file__).resolve().parent / "pipelines"
FAST = ["-D", "heartbeat.interval=1 s", "-D", "heartbeat.timeout=20 s",
        "-D", "resourcemanager.taskmanager-timeout=3 s", "-D", "slot.idle.timeout=1 s",
        "-D", "slot.request.timeout=120 s", "-D", "job.cancel.timeout=20 s"]
FINISHED = ("FINISHED", "FAILED", "KILLED")


@pytest.fixture(scope="session")
def yarn_cluster() -> "YarnRest":
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


class YarnRest:
    """YARN's own view, from the ResourceManager's REST API."""

    def __init__(self, base: str) -> None:
        self.base = base

    def get(self, path: str) -> Any:
        with urllib.request.urlopen(self.base + path, timeout=10) as response:
            return json.load(response)

    def app(self, app_id: str) -> dict:
        return self.get(f"/ws/v1/cluster/apps/{app_id}")["app"]

    def app_ids(self) -> set[str]:
        apps = (self.get("/ws/v1/cluster/apps").get("apps") or {}).get("app", [])
        return {a["id"] for a in apps}

    def running_containers(self, app_id: str) -> list[dict]:
        """The application's live containers with their allocated sizes."""
        attempts = self.get(f"/ws/v1/cluster/apps/{app_id}/appattempts")["appAttempts"]["appAttempt"]
        attempt = attempts[-1]["appAttemptId"]
        data = self.get(f"/ws/v1/cluster/apps/{app_id}/appattempts/{attempt}/containers")
        return (data or {}).get("container", []) if isinstance(data, dict) else []

    def wait_finished(self, app_id: str, timeout: float = 240) -> dict:
        return wait_until(lambda: (a := self.app(app_id))["state"] in FINISHED and a,
                          timeout, f"{app_id} to finish", interval=0.5)


def yarnflow(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "yarnflow.cli", *args], capture_output=True,
                          text=True, timeout=timeout, cwd=ROOT)


def submitted_app_id(proc: subprocess.CompletedProcess[str]) -> str:
    for word in proc.stdout.split():
        if word.startswith("application_"):
            return word
    raise AssertionError(f"no application id in the client's output:\n{proc.stdout}\n{proc.stderr}")
