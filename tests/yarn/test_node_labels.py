"""Node labels per slot profile on the real cluster (issue 35, item 4).

The cluster defines the partition `highmem` (docker-hadoop/conf: node labels on, the
default queue may use all of it) but no host has it, so the other tests keep every
host. Here one host is labelled `highmem`, exclusively, for the test's length:

- a job whose map names `node_label="highmem"` in its ResourceSpec runs that map's
  subtasks on the labelled host and every other subtask elsewhere (an exclusive
  partition takes only requests that name it), with every row once;
- a label that no host has is refused before anything is submitted, in one line
  that names the labels there are."""
from __future__ import annotations

import subprocess

import pytest

from tests.conftest import wait_until
from tests.yarn.conftest import FAST, PIPELINES, submitted_app_id, yarnflow
from yarnflow.client.targets.yarn_apps import YarnApplication

SHAPES = str(PIPELINES / "shapes.py")
LABEL = "highmem"
# a host labelled exclusively takes no other application's containers meanwhile
pytestmark = [pytest.mark.usefixtures("yarn_cluster"), pytest.mark.alone]


def rmadmin(*args: str) -> None:
    proc = subprocess.run(["yarn", "rmadmin", *args], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"yarn rmadmin {' '.join(args)}: {proc.stderr[-2000:]}"


def labels_of(yarn_cluster) -> dict[str, set[str]]:
    return {n["nodeHostName"]: set(n.get("nodeLabels") or ())
            for n in yarn_cluster.get("/ws/v1/cluster/nodes")["nodes"]["node"]
            if n["state"] == "RUNNING"}


@pytest.fixture
def labelled_host(yarn_cluster):
    """The last NodeManager host by name, in the partition `highmem` while the test runs."""
    hosts = sorted(labels_of(yarn_cluster))
    assert len(hosts) >= 2, hosts
    host = hosts[-1]
    known = {i["name"] for i in yarn_cluster.get("/ws/v1/cluster/get-node-labels")
             .get("nodeLabelInfo") or ()}
    if LABEL not in known:
        rmadmin("-addToClusterNodeLabels", f"{LABEL}(exclusive=true)")
    rmadmin("-replaceLabelsOnNode", f"{host}={LABEL}")
    try:
        wait_until(lambda: labels_of(yarn_cluster).get(host) == {LABEL}, 60,
                   f"{host} to be in partition {LABEL}", interval=0.5)
        yield host
    finally:
        rmadmin("-replaceLabelsOnNode", f"{host}=")
        wait_until(lambda: not labels_of(yarn_cluster).get(host), 60,
                   f"{host} to be back in the default partition", interval=0.5)


def test_a_labelled_profile_runs_in_its_partition_and_the_rest_outside_it(
        yarn_cluster, hdfs, labelled_host):
    out = f"{hdfs.scratch('node-labels')}/out"
    proc = yarnflow("run", "-t", "yarn-per-job", "--attach", "--no-progress", *FAST,
                    "-D", "taskmanager.numberOfTaskSlots=1", SHAPES, "--", "labelled",
                    "--work", "0.5", "--out", out, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    with YarnApplication(submitted_app_id(proc), timeout=30) as app:
        details = app.archived_details()
    assert details is not None
    where = {v.name: [(s.host, s.slot_profile) for s in v.subtasks] for v in details.vertices}
    labelled = where.pop("labelled-op")
    assert len(labelled) == 2 and all(host == labelled_host for host, _ in labelled), labelled
    assert all(profile is not None and profile.node_label == LABEL for _, profile in labelled)
    others = [entry for entries in where.values() for entry in entries]
    assert len(others) == 4 and all(host and host != labelled_host for host, _ in others), where
    assert all(profile is not None and not profile.node_label for _, profile in others)
    keys = hdfs.read_table(out).column("k").to_pylist()
    assert sorted(keys) == list(range(2000))


def test_a_label_no_host_has_is_refused_before_submitting(yarn_cluster, labelled_host):
    before = yarn_cluster.app_ids()
    proc = yarnflow("run", "-t", "yarn-per-job", *FAST, SHAPES, "--", "labelled",
                    "--label", "nosuchlabel", "--out", "/tmp/yarnflow-node-labels-unused")
    assert proc.returncode != 0
    lines = [line for line in (proc.stdout + proc.stderr).splitlines() if line.strip()]
    refusal = [line for line in lines if "nosuchlabel" in line]
    assert len(refusal) == 1, lines
    assert "operator 'labelled-op' (its ResourceSpec) names node label 'nosuchlabel', which " \
           f"no running NodeManager of this cluster has (its labels: {LABEL})" in refusal[0]
    assert "Traceback" not in proc.stderr
    assert yarn_cluster.app_ids() == before
