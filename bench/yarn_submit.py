"""Per-job submission on the native test cluster, against bare Skein measured in the
same run. Prints one JSON object.

    eval "$(docker-hadoop/native/cluster up)"; python bench/yarn_submit.py [--repeats 5]
    python bench/yarn_submit.py --secure     # secure against insecure (bench/secure_submit.py)

(or on the dockerised cluster's edge host, YARNFLOW_TEST_CLUSTER=given: the client's
environment is shipped to the hosts).

Latencies are medians over --repeats alternating bare/yarnflow pairs; each measurement
starts on an idle cluster.

- client_return_s: `yarnflow run -t yarn-per-job` from start to exit (a small job);
  skein_submit_s: `skein application submit` of a one-container app, the floor. Both
  go through one global Skein driver (`skein driver start`), started for the run.
- to_running_s: submit until all 2N subtasks (--parallelism N, default 4) of a
  two-profile job were RUNNING, by the JobMaster's per-subtask timestamps;
  bare_skein_s: a bare Skein application getting the same containers (N x 1792 MB /
  2 vcores, N x 768 MB / 1 vcore) until `sleep` runs in all of them, by a timestamp
  each container's script prints just before it execs `sleep`, read from its log
  through its NodeManager's REST API (the test clusters' hosts share this machine's
  clock: the native one's are this machine, the dockerised one's its containers); ratio. Both end when work runs
  in every container: YARN's REST API calls a container RUNNING once it is allocated,
  1-2 s before its NodeManager has launched anything.
  containers_allocated_s: when YARN had allocated all of yarnflow's containers (the
  ResourceManager's startedTime of each).
- alloc_efficiency_profiles / _fixed: slot MB·s the operators asked for ÷ container
  MB·s YARN allocated, for 2 x 3 GB + 6 x 512 MB slots, with a container per slot
  profile and with every slot forced to the largest profile (one fixed size, Flink's
  default). A slot counts over the lifetime of the container hosting it, so the
  figure measures how well container sizes fit the profiles (startup and idle time
  cost both sides alike).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import skein
from yarnflow.core.clock import poll_until
sys.path.insert(0, str(Path(__file__).resolve().parent))
from yarn_cluster import python_args
# Imported here, not while an application's executors start on the same two cores.
from yarnflow.client.targets.app_store import ApplicationStore
from yarnflow.client.targets.yarn_apps import YarnApplication
from yarnflow.client.targets.yarn_client import skein_client

ROOT = Path(__file__).resolve().parents[1]
JOBS = str(ROOT / "bench" / "yarn_jobs.py")
RM = os.environ.get("YARNFLOW_TEST_YARN_RM", "http://127.0.0.1:8088")
SECURE = os.environ.get("YARNFLOW_TEST_SECURE") == "1"
CONF = [*python_args(), "-D", "heartbeat.interval=1 s",
        "-D", "resourcemanager.taskmanager-timeout=3 s",
        "-D", "slot.idle.timeout=1 s"]


def rest(path: str) -> Any:
    return web_json(RM + path)


def app_state(app_id: str) -> dict:
    return rest(f"/ws/v1/cluster/apps/{app_id}")["app"]


def app_containers(app_id: str) -> list[dict]:
    """The application's containers as the ResourceManager lists them (allocated ones count as RUNNING)."""
    attempts = rest(f"/ws/v1/cluster/apps/{app_id}/appattempts")["appAttempts"]["appAttempt"]
    data = rest(f"/ws/v1/cluster/apps/{app_id}/appattempts/{attempts[-1]['appAttemptId']}/containers")
    return data.get("container", []) if isinstance(data, dict) else []


def poll(condition, timeout: float, what: str, interval: float = 0.1):
    value = poll_until(lambda: condition() or None, timeout, interval)
    if value is None:
        raise TimeoutError(f"timed out after {timeout:g} s waiting for {what}")
    return value


def nodemanagers_idle() -> bool:
    """No application left on any NodeManager: containers stopped, logs aggregated.

    Only RUNNING nodes: the ResourceManager keeps a NodeManager that was stopped or
    lost in its list, with no HTTP address (a host-fault test leaves one)."""
    nodes = rest("/ws/v1/cluster/nodes?states=RUNNING").get("nodes") or {}
    for node in nodes.get("node", []):
        for what in ("apps", "containers"):
            listed = web_json(f"http://{node['nodeHTTPAddress']}/ws/v1/node/{what}")[what]
            if what == "apps" and listed and SECURE:
                # no log aggregation there: a NodeManager keeps a finished application
                # until its logs' retention ends
                listed = [a for a in listed["app"] if a.get("state") != "FINISHED"]
            if listed:
                return False
    return True


def web_json(url: str) -> Any:
    """A ResourceManager's or NodeManager's REST answer; on a secure cluster (its web
    servers answer 401 to an anonymous caller) with SPNEGO from the caller's ticket."""
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return json.load(r)
    except urllib.error.HTTPError as err:
        if err.code != 401:
            raise
    import requests
    from requests_gssapi import HTTPSPNEGOAuth
    answer = requests.get(url, auth=HTTPSPNEGOAuth(), timeout=10)
    answer.raise_for_status()
    return answer.json()


def wait_quiet() -> None:
    """Each measurement starts on an idle cluster: the NodeManagers clean up after a
    killed or finished application for a second or so, on the same two cores."""
    poll(lambda: rest("/ws/v1/cluster/metrics")["clusterMetrics"]["appsRunning"] == 0
         and nodemanagers_idle(), 120, "the cluster to be idle", 0.2)


def wait_finished(app_id: str) -> dict:
    return poll(lambda: (a := app_state(app_id))["state"] in ("FINISHED", "FAILED", "KILLED") and a,
                300, f"{app_id} to finish", 0.5)


def yarnflow_submit(*args: str) -> tuple[str, float]:
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "yarnflow.client.cli", "run", "-t", "yarn-per-job",
                           *CONF, *args], capture_output=True, text=True, timeout=300)
    elapsed = time.monotonic() - start
    if proc.returncode != 0:
        raise RuntimeError(proc.stdout + proc.stderr)
    app_id = next(w for w in proc.stdout.split() if w.startswith("application_"))
    return app_id, elapsed


def skein_submit(spec: str) -> tuple[str, float]:
    start = time.monotonic()
    proc = subprocess.run([str(Path(sys.executable).parent / "skein"), "application", "submit",
                           spec], capture_output=True, text=True, timeout=300)
    elapsed = time.monotonic() - start
    if proc.returncode != 0:
        raise RuntimeError(proc.stdout + proc.stderr)
    return proc.stdout.split()[-1], elapsed


def bare_spec(directory: str, services: dict[str, tuple[int, int, int]]) -> str:
    """Each service container prints ``started <time>`` into its log (Skein's
    ``<service>.log``) right before it execs ``sleep``."""
    script = "echo started $(date +%s.%N); exec sleep 600"
    lines = ["name: bare-skein", "queue: default", "master:", "  resources: {memory: 1024, vcores: 1}",
             "  script: sleep 600", "services:"]
    for name, (memory, vcores, instances) in services.items():
        lines += [f"  {name}:", f"    instances: {instances}",
                  f"    resources: {{memory: {memory}, vcores: {vcores}}}", f"    script: '{script}'"]
    path = os.path.join(directory, f"bare-{len(services)}.yaml")
    Path(path).write_text("\n".join(lines) + "\n")
    return path


def started_stamps(app_id: str, services: set[str], count: int) -> list[float] | None:
    """The ``started`` times ``count`` containers of ``services`` printed, from their
    logs on their NodeManagers; None until all have."""
    stamps = []
    for container in app_containers(app_id):
        node = container.get("nodeHttpAddress") or ""
        node = node if node.startswith("http") else f"http://{node}"
        for service in services:
            url = f"{node}/ws/v1/node/containerlogs/{container['containerId']}/{service}.log"
            try:
                with urllib.request.urlopen(url, timeout=10) as r:
                    log = r.read().decode(errors="replace")
            except OSError:          # not this service's container, or not launched yet
                continue
            stamps += [float(line.split()[1]) for line in log.splitlines()
                       if line.startswith("started ")]
    return stamps if len(stamps) == count else None


def kill(app_id: str) -> None:
    subprocess.run([str(Path(sys.executable).parent / "skein"), "application", "kill", app_id],
                   capture_output=True, timeout=120)


def measure_bare(directory: str, n: int) -> dict:
    wait_quiet()
    floor_id, skein_submit_s = skein_submit(bare_spec(directory, {"one": (256, 1, 1)}))
    kill(floor_id)
    wait_quiet()
    start_wall = time.time()
    app_id, _ = skein_submit(bare_spec(directory, {"heavy": (1792, 2, n), "light": (768, 1, n)}))
    stamps = poll(lambda: started_stamps(app_id, {"heavy", "light"}, 2 * n), 180,
                  f"sleep running in {2 * n} bare containers")
    bare_s = max(stamps) - start_wall
    kill(app_id)
    return {"skein_submit_s": skein_submit_s, "bare_skein_s": bare_s}


def measure_ours(n: int) -> dict:
    """The moment every subtask was RUNNING comes from the JobMaster's own per-subtask
    timestamps, and when YARN allocated each container from YARN's own record, both on
    this machine's clock; so this loop polls gently (every 0.5 s), not to take CPU from
    the executors starting on the same two cores."""
    wait_quiet()
    start_wall = time.time()
    app_id, client_return_s = yarnflow_submit(JOBS, "--", "to-running", "--work", "3",
                                              "--parallelism", str(n))
    running_at: dict[tuple[str, int], float] = {}
    with YarnApplication(app_id, timeout=30) as app:
        def all_running() -> bool:
            details = app.job_details()
            for vertex in (details.vertices if details else []):
                name = next((op for op in ("heavy", "light") if vertex.runs(op)), None)
                for s in vertex.subtasks:
                    if name is not None and "RUNNING" in s.state_timestamps:
                        running_at[(name, s.index)] = s.state_timestamps["RUNNING"]
            return len(running_at) == 2 * n
        poll(all_running, 180, f"{2 * n} subtasks RUNNING", 0.5)
        allocated = [c["startedTime"] / 1000 for c in app_containers(app_id)
                     if not c["containerId"].endswith("_000001")]
    to_running_s = max(running_at.values()) - start_wall
    final = wait_finished(app_id)
    assert final["finalStatus"] == "SUCCEEDED", final["diagnostics"]
    return {"client_return_s": client_return_s, "to_running_s": to_running_s,
            "containers_allocated_s": (max(allocated) - start_wall if len(allocated) >= 2 * n
                                       else float("nan"))}


def measure_alloc(fixed: bool) -> float:
    """Each slot counts with the operators' real profile over the lifetime of the
    container hosting it (from the job's own slot placement); each container with its
    allocated size over its lifetime (from YARN)."""
    real_mb = {"heavy": 3072, "light": 512}
    args = ["-D", "taskmanager.numberOfTaskSlots=8", JOBS, "--", "alloc", "--work", "3"]
    app_id, _ = yarnflow_submit(*(args + ["--fixed"] if fixed else args))
    lifetimes: dict[str, list] = {}        # YARN container id -> [mb, first seen, last seen]
    slots: dict[str, tuple[str, int]] = {}  # allocation id -> (Skein container id, real MB)
    skein_to_yarn: dict[str, str] = {}
    tls = ApplicationStore().credentials(app_id)
    security = skein.Security(cert_bytes=tls.cert_pem, key_bytes=tls.key_pem)
    client = skein_client(30)
    with YarnApplication(app_id, timeout=30) as app:
        am = None
        while app_state(app_id)["state"] not in ("FINISHED", "FAILED", "KILLED"):
            now = time.monotonic()
            for c in app_containers(app_id):
                if not c["containerId"].endswith("_000001"):        # not the ApplicationMaster
                    entry = lifetimes.setdefault(c["containerId"], [c["allocatedMB"], now, now])
                    entry[2] = now
            details = app.job_details()
            for vertex in (details.vertices if details else []):
                group = "heavy" if vertex.runs("heavy") else "light"
                for s in vertex.subtasks:
                    if s.allocation_id and s.resource_id:
                        slots[s.allocation_id] = (s.resource_id, real_mb[group])
            try:
                am = am or client.connect(app_id, wait=False, security=security)
                for c in am.get_containers(states=["RUNNING", "SUCCEEDED", "KILLED", "FAILED"]):
                    skein_to_yarn[c.id] = c.yarn_container_id
            except skein.exceptions.ConnectionError:
                pass           # its ApplicationMaster is not up yet, or the application ends
            time.sleep(0.2)
    final = app_state(app_id)
    if final["finalStatus"] != "SUCCEEDED":
        raise SystemExit(f"the alloc job {app_id} ended {final['finalStatus']}: {final['diagnostics']}")
    matched = [rid for rid, _ in slots.values() if skein_to_yarn.get(rid) in lifetimes]
    if not matched:
        raise SystemExit(f"the alloc job {app_id}: none of its {len(slots)} slots was matched to "
                         f"a container of the {len(lifetimes)} YARN listed (Skein named "
                         f"{len(skein_to_yarn)}); its allocation cannot be measured")
    life = {cid: last - first for cid, (_, first, last) in lifetimes.items()}
    slot_mb_s = sum(mb * life.get(skein_to_yarn.get(rid, ""), 0.0) for rid, mb in slots.values())
    container_mb_s = sum(mb * life[cid] for cid, (mb, _, _) in lifetimes.items())
    return slot_mb_s / container_mb_s


def skein_driver(action: str) -> None:
    subprocess.run([str(Path(sys.executable).parent / "skein"), "driver", action],
                   capture_output=True, timeout=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5,
                        help="bare/ours pairs, interleaved; latencies are their medians")
    parser.add_argument("--parallelism", type=int, default=4,
                        help="N: the to-running job has 2N subtasks, each in its own container")
    parser.add_argument("--skip-alloc", action="store_true",
                        help="latencies only, no alloc_efficiency runs")
    parser.add_argument("--to-running-only", action="store_true",
                        help="only yarnflow's submit -> all subtasks RUNNING (to_running_s)")
    parser.add_argument("--secure", action="store_true",
                        help="on the dockerised cluster, insecure then secure, and a session's "
                             "token renewal (bench/secure_submit.py); run from this machine")
    args = parser.parse_args()
    if args.secure:
        from secure_submit import run_secure
        run_secure(args.repeats, args.parallelism)
        return
    if args.to_running_only:
        samples = [measure_ours(args.parallelism)["to_running_s"] for _ in range(args.repeats)]
        print(json.dumps({"to_running_s": round(statistics.median(samples), 3),
                          "samples": [round(v, 3) for v in samples]}))
        return
    # One global Skein driver serves both sides (Skein's CLI and yarnflow use it when it
    # runs), so neither pays a JVM start per command.
    skein_driver("start")
    try:
        run(args.repeats, args.parallelism, not args.skip_alloc)
    finally:
        skein_driver("stop")


def run(repeats: int, n: int, alloc: bool) -> None:
    """Latencies on a shared two-core machine swing by a second from one run to the
    next, so bare and ours alternate and each reports its median."""
    samples: dict[str, list[float]] = {}
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as directory:
            pair = measure_bare(directory, n)
        pair.update(measure_ours(n))
        print(f"pair: {pair}", file=sys.stderr, flush=True)
        for key, value in pair.items():
            samples.setdefault(key, []).append(value)
    result = {key: statistics.median(values) for key, values in samples.items()}
    result["ratio"] = result["to_running_s"] / result["bare_skein_s"]
    if alloc:
        result["alloc_efficiency_profiles"] = measure_alloc(fixed=False)
        result["alloc_efficiency_fixed"] = measure_alloc(fixed=True)
        result["profiles_over_fixed"] = (result["alloc_efficiency_profiles"]
                                         / result["alloc_efficiency_fixed"])
    result = {key: round(value, 3) for key, value in result.items()}
    result["repeats"], result["subtasks"] = repeats, 2 * n
    print(json.dumps(result))


if __name__ == "__main__":
    main()
