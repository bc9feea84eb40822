"""The dockerised cluster in Hadoop's secure mode (issue 35, item 1): `cluster up
--secure` adds a KDC host, makes every host's principals and keytab as it starts, and
turns Kerberos on in HDFS's and YARN's RPC (SASL on HDFS's data transfer; the web
servers' SPNEGO is still to come, docker-hadoop/README.md says why).

It runs last in this folder (its name sorts after test_yarn_tier.py): it turns the
package's cluster secure, and the package's teardown takes it down as usual.

- Without a ticket, Skein's driver refuses the edge host's client, and yarnflow
  refuses to submit in one line that names kinit, before YARN hears of anything.
- With alice's ticket, YARN answers, and a Skein application (staged on HDFS with
  alice's delegation token, its ApplicationMaster launched by a Kerberos
  NodeManager) finishes SUCCEEDED as alice."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request

import pytest

from tests.conftest import wait_until
from tests.docker.conftest import CLUSTER, ROOT, DockerCluster

SPEC = """name: secure-check
queue: default
master:
  resources: {memory: 256, vcores: 1}
  script: echo secure-ok
"""


@pytest.fixture(scope="module")
def secure(docker_cluster: DockerCluster) -> DockerCluster:
    proc = subprocess.run([sys.executable, str(CLUSTER), "up", "--secure"], capture_output=True,
                          text=True, timeout=2400, env={**os.environ, **docker_cluster.env})
    assert proc.returncode == 0, f"could not start the secure cluster:\n{proc.stderr[-4000:]}"
    env = dict(line.removeprefix("export ").partition("=")[::2] for line in proc.stdout.splitlines())
    assert env["YARNFLOW_TEST_SECURE"] == "1", proc.stdout
    return DockerCluster(env)


def app(secure: DockerCluster, app_id: str) -> dict:
    with urllib.request.urlopen(f"{secure.env['YARNFLOW_TEST_YARN_RM']}/ws/v1/cluster/apps/{app_id}",
                                timeout=15) as answer:
        return json.load(answer)["app"]


def test_without_a_ticket_yarn_and_yarnflow_refuse_the_client(secure: DockerCluster):
    secure.edge("kdestroy")
    assert secure.edge("klist", "-s").returncode != 0
    # Skein's driver says so at once (YARN's own CLI would retry for many minutes)
    listed = secure.edge("skein", "application", "ls", timeout=120)
    assert listed.returncode != 0, listed.stdout
    assert "Kerberos ticket not found" in listed.stderr, listed.stderr[-2000:]
    before = secure.rest("/ws/v1/cluster/apps").get("apps") or {}
    run = secure.edge("yarnflow", "run", "-t", "yarn-per-job",
                      str(ROOT / "tests" / "yarn" / "pipelines" / "shapes.py"), "--", "long",
                      "--out", "/tmp/yarnflow-secure-unused", timeout=300)
    said = [line for line in (run.stdout + run.stderr).splitlines() if line.strip()]
    assert run.returncode != 0 and len(said) == 1, said
    assert said[0].startswith("error: this cluster uses Kerberos") and "run kinit" in said[0]
    assert (secure.rest("/ws/v1/cluster/apps").get("apps") or {}) == before


def test_with_a_ticket_a_skein_application_runs_on_the_secure_cluster(secure: DockerCluster):
    kinit = secure.edge("kinit", "-kt", "/etc/security/keytabs/host.keytab", "alice")
    assert kinit.returncode == 0, kinit.stderr
    try:
        listed = secure.edge("skein", "application", "ls", timeout=120)
        assert listed.returncode == 0, listed.stderr[-2000:]
        wrote = secure.edge("sh", "-c", f"printf '%s' '{SPEC}' > /tmp/secure-check.yaml")
        assert wrote.returncode == 0, wrote.stderr
        submitted = secure.edge("skein", "application", "submit", "/tmp/secure-check.yaml",
                                timeout=300)
        assert submitted.returncode == 0, submitted.stderr[-3000:]
        app_id = submitted.stdout.strip().split()[-1]
        final = wait_until(lambda: (a := app(secure, app_id))["state"] in
                           ("FINISHED", "FAILED", "KILLED") and a, 300,
                           f"{app_id} to finish", interval=1.0)
        assert final["finalStatus"] == "SUCCEEDED", final["diagnostics"]
        assert final["user"] == "alice"
    finally:
        secure.edge("kdestroy")
