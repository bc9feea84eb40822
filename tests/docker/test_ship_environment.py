"""Python reaches worker hosts that have none of yarnflow's packages: by default the
client's virtual environment (on the edge host) is packed, uploaded to HDFS once under
its content digest and localized with PUBLIC visibility, so each host downloads it
once however many containers and applications use it. The README's example, run
per-job from the edge host with its data on HDFS, gives exactly pyarrow's answer
(tests/yarn/test_per_job.py, on the same edge host and the same bare workers; its
test_session.py runs it in a session too)."""
from __future__ import annotations

import json
import uuid

from tests.docker.conftest import WORKERS, DockerCluster

FAST = ["-D", "heartbeat.interval=1 s", "-D", "heartbeat.timeout=30 s",
        "-D", "resourcemanager.taskmanager-timeout=3 s", "-D", "slot.idle.timeout=1 s",
        "-D", "slot.request.timeout=180 s"]

EXACT = """
import importlib.util, json, os, sys
from yarnflow.client import files
spec = importlib.util.spec_from_file_location("skewed_join", "examples/skewed_join.py")
example = importlib.util.module_from_spec(spec); spec.loader.exec_module(example)
data, out = sys.argv[1:3]
got = files.read_table(out).sort_by("InstrumentId")
want = example.reference(data).sort_by("InstrumentId")
print(json.dumps({"rows": got.num_rows, "exact": got.equals(want.select(got.column_names))}),
      flush=True)
os._exit(0)      # past pyarrow's shutdown abort after a correct read (apache/arrow#34314)
"""

# The environments YARN's PUBLIC cache holds on a host, and any yarnflow or pyarrow
# where Python packages are installed (none: the host has only what YARN localized,
# under /data/nm).
HOST_STATE = """
import glob, json, os
cached = [p for p in glob.glob("/data/nm/local/filecache/*/*") if p.endswith(".tar.gz")]
stray = [p for root in ("/usr", "/opt", "/root", "/home", "/srv", "/tmp")
         for package in ("yarnflow", "pyarrow")
         for p in glob.glob(f"{root}/**/site-packages/{package}", recursive=True)]
print(json.dumps({"cached": sorted(os.path.basename(p) for p in cached), "stray": stray}))
"""


def shipped_archive(cluster: DockerCluster) -> str:
    """The name of the one environment archive the client uploaded."""
    uploaded = cluster.edge("yarnflow", "fs", "ls", "/user/root/.yarnflow-environments")
    assert uploaded.returncode == 0, uploaded.stdout + uploaded.stderr
    archives = [w.rsplit("/", 1)[-1] for w in uploaded.stdout.split() if w.endswith(".tar.gz")]
    assert len(archives) == 1, uploaded.stdout
    return archives[0]


def host_state(cluster: DockerCluster, host: str) -> dict:
    proc = cluster.on(host, "python3", "-c", HOST_STATE)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_the_ship_environment_benchmark_runs_in_its_short_mode(docker_cluster: DockerCluster):
    """bench/ship_environment.py once, short: its applications (a cold first one, then
    one on the shipped environment, then one on yarnflow it installed on the workers
    for its comparison) each end exact, and the environment is uploaded once and
    localized at most once per host. It removes what it installed, so the YARN tier
    after it runs on workers with nothing of yarnflow's, as checked here (the YARN
    tier's per-job test runs the README's example on them, exact). It runs first in
    the docker tier: its first submission, which must find nothing packed or
    localized, is then the fresh cluster's own cold start, not a second one made by
    deleting what a test warmed."""
    from tests.benchmarks import DOCKER, run_benchmark
    args, keys = DOCKER["ship_environment.py"]
    figures = run_benchmark("ship_environment.py", args, keys, timeout=2400)
    assert figures["max_downloads_per_host"] <= 1, figures
    assert figures["first_submit_s"] > 0 and figures["preinstalled_submit_s"] > 0, figures
    archive = shipped_archive(docker_cluster)        # one upload for all its applications
    downloads = {}
    for host in WORKERS:
        assert docker_cluster.on(host, "test", "-e", "/opt/yarnflow").returncode == 1, host
        state = host_state(docker_cluster, host)
        assert state["stray"] == [], (host, state["stray"])
        downloads[host] = state["cached"].count(archive)
        # still nothing of yarnflow's for the host's own Python
        assert docker_cluster.on(host, "python3", "-c", "import yarnflow.client").returncode != 0
    assert max(downloads.values()) == 1 and sum(downloads.values()) >= 1, downloads


def test_a_host_that_cannot_run_the_interpreter_is_named_in_one_line(docker_cluster: DockerCluster):
    base = f"hdfs://rm:9000/tmp/yarnflow-tests/nowhere-{uuid.uuid4().hex[:8]}"
    run = docker_cluster.edge("yarnflow", "run", "-t", "yarn-per-job", "--attach", "--no-progress",
                              "-D", "yarn.python=/opt/nowhere/bin/python3", "-D", "yarn.application-attempts=1",
                              "examples/skewed_join.py", "--", "--rows", "30000", "--data", f"{base}/data",
                              "--out", f"{base}/out", timeout=600)
    assert run.returncode != 0
    said = [line for line in (run.stdout + run.stderr).splitlines() if "yarnflow: host nm" in line]
    assert said, run.stdout[-3000:] + run.stderr[-3000:]
    assert "/opt/nowhere/bin/python3" in said[0] and "Fix:" in said[0], said[0]
    assert "Traceback" not in run.stderr and "No such file" not in run.stdout + run.stderr
