"""The YARN tier (tests/yarn) on the dockerised cluster, run where a user runs yarnflow:
on the edge host, with yarnflow installed from the checkout's wheel, the tests' client
processes, HDFS reads and REST calls going to the cluster's hosts by their names.

tests/yarn runs there (YARNFLOW_TEST_CLUSTER=given): the tests that share the cluster
side by side in YARNFLOW_TEST_YARN_WORKERS processes (2), then those marked ``alone``
one at a time (edge_run). Each of its tests is a test here too, which passes or fails
as it did on the edge host, with its failure's report. `pytest
tests/docker/test_yarn_tier.py -k NAME` runs the tests it selects and only those. The
run's output goes to test-artifacts/yarn-tier.log as it comes."""
from __future__ import annotations

import os
import shlex
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import ROOT, artifacts_dir, yarn_test_cluster
from tests.docker.conftest import CLUSTER, WORKERS, DockerCluster

TIER = "tests/yarn"
# The cluster as the edge host sees it (tests/yarn/conftest.py reads these).
ON_EDGE = {
    "YARNFLOW_TEST_CLUSTER": "given",
    "YARNFLOW_TEST_YARN_RM": "http://rm:8088",
    "YARNFLOW_TEST_HDFS": "hdfs://rm:9000",
    "YARNFLOW_TEST_HDFS_HTTP": "rm:9870",
    "YARNFLOW_TEST_HOSTS": ",".join(WORKERS),
    # pytest for the edge's Python, kept out of the environment that is shipped
    "PYTHONPATH": "/opt/yarnflow-test-tools",
}
RUN_TIMEOUT_S = 3600.0
# Test processes on the edge host at once. Its tests wait on YARN and containers, but
# their JVMs and Spark sessions keep two cores 70 % busy with one process: with three,
# a quarter of them outran their waits on a 2-core machine.
WORKERS_ON_EDGE = int(os.environ.get("YARNFLOW_TEST_YARN_WORKERS", "2"))


def tier_tests() -> list[str]:
    """The node ids of tests/yarn, as pytest collects them (on this machine: the
    collection runs no test and needs no cluster)."""
    if yarn_test_cluster() != "docker":
        return []
    proc = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p",
                           "no:cacheprovider", TIER], capture_output=True, text=True, cwd=ROOT,
                          timeout=300, env={**os.environ, "YARNFLOW_TEST_CLUSTER": "given"})
    ids = [line for line in proc.stdout.splitlines() if line.startswith(TIER + "/") and "::" in line]
    if proc.returncode != 0 or not ids:
        raise RuntimeError(f"collecting {TIER} failed:\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
    return ids


@dataclass(frozen=True)
class Outcome:
    passed: bool
    skipped: bool
    report: str


def outcomes(junit: str) -> dict[str, Outcome]:
    """Each test's outcome from pytest's JUnit XML, by node id."""
    found = {}
    for case in ElementTree.parse(junit).getroot().iter("testcase"):
        module, name = case.get("classname", ""), case.get("name", "")
        node = f"{module.replace('.', '/')}.py::{name}"
        bad = [e for e in case if e.tag in ("failure", "error")]
        skipped = [e for e in case if e.tag == "skipped"]
        report = "\n".join((e.get("message") or "") + "\n" + (e.text or "") for e in bad + skipped)
        found[node] = Outcome(passed=not bad, skipped=bool(skipped) and not bad, report=report)
    return found


def edge_run(selected: list[str], junits: list[Path]) -> str:
    """The shell line the edge host runs: one Skein driver for every test process, the
    tests that share the cluster side by side (pytest-xdist, a module's tests on one
    worker in file order: test_session.py's share one session), then those marked
    ``alone`` by themselves."""
    pytest_args = ["python", "-m", "pytest", "-p", "no:cacheprovider", "-v", "-rfE",
                   "--timeout=900"]
    together = [*pytest_args, "-n", str(WORKERS_ON_EDGE), "--dist", "loadfile", "-m",
                "not alone", f"--junitxml={junits[0]}", *selected]
    alone = [*pytest_args, "-n", "0", "-m", "alone", f"--junitxml={junits[1]}", *selected]
    return "; ".join([
        "python -m skein.cli driver start >/dev/null",
        shlex.join(together) + "; together=$?",
        shlex.join(alone) + "; alone=$?",
        "python -m skein.cli driver stop >/dev/null 2>&1",
        # 5: every selected test was in the other group
        'for rc in $together $alone; do [ $rc -eq 0 ] || [ $rc -eq 5 ] || exit $rc; done'])


@pytest.fixture(scope="module")
def tier(warm_hosts: DockerCluster, request: pytest.FixtureRequest) -> dict[str, Outcome]:
    """tests/yarn run once on the edge host, on warm hosts (two tests' first containers
    would otherwise both wait out the cold start inside their own timeouts): the tests
    selected here."""
    selected = [item.callspec.params["node"] for item in request.session.items
                if item.module is request.module and hasattr(item, "callspec")]
    log = artifacts_dir() / "yarn-tier.log"
    parts = [artifacts_dir() / "yarn-tier-together.xml", artifacts_dir() / "yarn-tier-alone.xml"]
    for part in parts:
        part.unlink(missing_ok=True)
    env = [f"{key}={value}" for key, value in ON_EDGE.items()]
    with open(log, "w") as out:      # as it comes: `tail -f` shows the run's progress
        run = subprocess.run([sys.executable, str(CLUSTER), "edge", "env", *env, "sh", "-c",
                              edge_run(selected, parts)], stdout=out,
                             stderr=subprocess.STDOUT, timeout=RUN_TIMEOUT_S, cwd=ROOT,
                             env={**os.environ, **warm_hosts.env})
    found: dict[str, Outcome] = {}
    for part in parts:
        if part.exists():
            found.update(outcomes(str(part)))
    if not found:
        pytest.fail(f"{TIER} did not run on the edge host (exit {run.returncode}):\n"
                    f"{log.read_text()[-4000:]}")
    return found


@pytest.mark.timeout(RUN_TIMEOUT_S + 600)
@pytest.mark.skipif(yarn_test_cluster() != "docker",
                    reason="tests/yarn runs on this machine (YARNFLOW_TEST_CLUSTER)")
# Explicit ids: pytest 9 would shorten a long node id to "node7", which -k cannot select.
@pytest.mark.parametrize("node", tier_tests() or ["-"], ids=lambda node: node.removeprefix(TIER + "/"))
def test_on_the_edge_host(tier: dict[str, Outcome], node: str) -> None:
    outcome = tier.get(node)
    assert outcome is not None, f"{node} did not run on the edge host; see test-artifacts/yarn-tier.log"
    if outcome.skipped:
        pytest.skip(outcome.report.strip()[:500])
    assert outcome.passed, f"on the edge host:\n{outcome.report}"
