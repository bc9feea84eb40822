"""What shipping the client's Python environment costs a per-job submission on the
dockerised cluster, against worker hosts that have yarnflow preinstalled. Prints one
JSON object.

    python bench/ship_environment.py [--repeats 3]

Starts the cluster with `docker-hadoop/docker/cluster up` (and takes it down at the
end if it was not up before). Every run is `yarnflow run -t yarn-per-job --attach`
of a small two-vertex job (tests/yarn/pipelines/shapes.py long) from the edge host.

- first_submit_s: submit → all subtasks RUNNING (the latest RUNNING timestamp of the
  job's subtasks, from its archive, less the moment `yarnflow run` started), with
  the environment neither packed on the edge host nor on HDFS;
- cached_submit_s: the same again (median of --repeats);
- preinstalled_submit_s: `-D yarn.python=/opt/yarnflow/bin/python` on worker hosts
  that have yarnflow installed there for these runs (the edge host's environment
  copied to each, and removed after), median of --repeats;
- env_mb: the packed environment's size; max_downloads_per_host: the most times any
  worker host's NodeManager localized that archive over the first and cached runs;
- exact: every run's output was exactly its input; ratio: cached / preinstalled.
Goals (issue 30): max_downloads_per_host 1, ratio <= 1.2, exact.
"""
from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CLUSTER = ROOT / "docker-hadoop" / "docker" / "cluster"
WORKERS = ("nm1", "nm2", "nm3")
SHAPES = "tests/yarn/pipelines/shapes.py"
CONF = ["-D", "heartbeat.interval=1 s", "-D", "resourcemanager.taskmanager-timeout=3 s",
        "-D", "slot.idle.timeout=1 s", "-D", "pipeline.batch-rows=500"]
ENVIRONMENTS = "/user/root/.yarnflow-environments"
PREINSTALLED = "/opt/yarnflow"         # the edge host's environment, and the workers' for a while

# On the edge host, after a run: its job's latest RUNNING timestamp and whether the
# output is exactly the input.
RESULT = """
import json, sys
from yarnflow.client import files
from yarnflow.client.targets.yarn_apps import YarnApplication
app_id, out = sys.argv[1:3]
with YarnApplication(app_id, timeout=30) as app:
    d = app.archived_details()
running = max(s.state_timestamps["RUNNING"] for v in d.vertices for s in v.subtasks)
got = files.read_table(out)
exact = sorted(got.column("k").to_pylist()) == list(range(2000))
print(json.dumps({"running_at": running, "exact": exact, "status": d.status.value}))
"""


def cluster(*args: str, timeout: float = 2400) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(CLUSTER), *args], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)


def up(*flags: str) -> tuple[dict[str, str], bool]:
    proc = cluster("up", *flags)
    if proc.returncode != 0:
        sys.exit(f"cluster up {' '.join(flags)} failed:\n{proc.stderr[-3000:]}")
    env = dict(line.removeprefix("export ").split("=", 1) for line in proc.stdout.splitlines()
               if line.startswith("export "))
    return env, "already up" in proc.stderr


def edge(*cmd: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    return cluster("edge", *cmd, timeout=timeout)


def docker(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    import os
    return subprocess.run(["docker", *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **env})


def run_once(*conf: str) -> tuple[float, bool]:
    out = f"hdfs://rm:9000/tmp/yarnflow-bench/ship-{uuid.uuid4().hex[:8]}/out"
    started = time.time()
    run = edge("yarnflow", "run", "-t", "yarn-per-job", "--attach", "--no-progress", *CONF, *conf,
               SHAPES, "--", "long", "--work", "0.2", "--out", out)
    if run.returncode != 0:
        sys.exit(f"the run failed:\n{run.stdout[-3000:]}{run.stderr[-3000:]}")
    app_id = re.search(r"application_\d+_\d+", run.stdout).group(0)   # type: ignore[union-attr]
    result = json.loads(edge("python", "-c", RESULT, app_id, out).stdout.splitlines()[-1])
    return result["running_at"] - started, result["exact"] and result["status"] == "FINISHED"


def localized(env: dict[str, str]) -> dict[str, set[str]]:
    """Per worker host, the entries of its NodeManager's public cache (one per download)."""
    found = {}
    for host in WORKERS:
        ls = docker(env, "exec", host, "sh", "-c", "ls -d /data/nm/local/filecache/*/* 2>/dev/null")
        found[host] = set(ls.stdout.split())
    return found


def shipped(env: dict[str, str]) -> tuple[str, float]:
    """The one environment archive on HDFS: its name and size in MB."""
    listing = edge("yarnflow", "fs", "ls", ENVIRONMENTS).stdout.splitlines()
    archives = [line.split() for line in listing if line.strip().endswith(".tar.gz")]
    if len(archives) != 1:
        sys.exit(f"expected one environment archive in {ENVIRONMENTS}: {listing}")
    size, uri = archives[0]
    return uri.rsplit("/", 1)[-1], int(size.replace(",", "")) / 1e6


def preinstall(env: dict[str, str]) -> None:
    """yarnflow preinstalled on every worker host, as an image with it would have it:
    the edge host's environment (the checkout's wheel and its dependencies, over
    Debian's python3, which the workers have too) copied to the same path, to all
    hosts at once. Unlike `cluster up --preinstalled`, nothing restarts, so HDFS and
    the NodeManagers keep what the cluster held."""
    import os
    environ = {**os.environ, **env}
    copies = []
    for host in WORKERS:
        source = subprocess.Popen(["docker", "exec", "edge", "tar", "-C", "/opt", "-cf", "-",
                                   "yarnflow"], stdout=subprocess.PIPE, env=environ)
        target = subprocess.Popen(["docker", "exec", "-i", host, "tar", "-C", "/opt", "-xf", "-"],
                                  stdin=source.stdout, stderr=subprocess.PIPE, env=environ)
        assert source.stdout is not None
        source.stdout.close()           # the target's end of the pipe only
        copies.append((host, source, target))
    for host, source, target in copies:
        try:
            _, err = target.communicate(timeout=600)
            source.wait(timeout=60)
        except subprocess.TimeoutExpired:
            source.kill()
            target.kill()
            sys.exit(f"copying yarnflow's environment to {host} did not end within 600 s")
        if target.returncode != 0 or source.returncode != 0:
            sys.exit(f"copying yarnflow's environment to {host} failed: {err[-2000:]!r}")


def uninstall(env: dict[str, str]) -> None:
    """The worker hosts as they were: nothing of yarnflow's."""
    for host in WORKERS:
        removed = docker(env, "exec", host, "rm", "-rf", PREINSTALLED)
        if removed.returncode != 0:
            sys.exit(f"removing {PREINSTALLED} from {host} failed: {removed.stderr[-2000:]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    env, was_up = up()
    # the first submission of a client that never shipped this environment
    edge("rm", "-rf", "/root/.yarnflow/environments")
    edge("yarnflow", "fs", "rm", ENVIRONMENTS)
    before = localized(env)
    first, first_exact = run_once()
    cached_runs = [run_once() for _ in range(args.repeats)]
    archive, env_mb = shipped(env)
    after = localized(env)
    downloads = {h: sum(p.endswith("/" + archive) for p in after[h] - before[h]) for h in WORKERS}

    preinstall(env)
    try:
        preinstalled_runs = [run_once("-D", f"yarn.python={PREINSTALLED}/bin/python")
                             for _ in range(args.repeats)]
    finally:
        uninstall(env)
    if not was_up:
        cluster("down", timeout=600)

    cached = statistics.median(t for t, _ in cached_runs)
    preinstalled = statistics.median(t for t, _ in preinstalled_runs)
    print(json.dumps({
        "first_submit_s": round(first, 2),
        "cached_submit_s": round(cached, 2),
        "preinstalled_submit_s": round(preinstalled, 2),
        "ratio": round(cached / preinstalled, 3),
        "env_mb": round(env_mb, 1),
        "max_downloads_per_host": max(downloads.values()),
        "downloads_per_host": downloads,
        "exact": first_exact and all(ok for _, ok in cached_runs + preinstalled_runs),
        "cached_runs_s": [round(t, 2) for t, _ in cached_runs],
        "preinstalled_runs_s": [round(t, 2) for t, _ in preinstalled_runs],
        "repeats": args.repeats,
    }))


if __name__ == "__main__":
    main()
