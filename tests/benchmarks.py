"""Every benchmark under bench/ is to run once per CI run in a short mode, in the tier
that has what it needs, so none can break unnoticed (one did: yarn_submit.py failed
on its second repeat). Each is named here with its short arguments and the figures
its JSON must hold."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

# bench file -> (short arguments, keys its JSON must have); the local target only
LOCAL: dict[str, tuple[list[str], list[str]]] = {
    "scheduler_scale.py": (["--parallelism", "200"],
                           ["assign_ms", "descriptor_mb_total", "total_ms", "am_rss_mb"]),
    "rm_scale.py": (["--quick"], ["register_all_s", "heartbeat_p99_ms", "slot_request_p99_ms",
                                  "rm_cpu_percent"]),
    "failover.py": (["--work", "2"], ["detect_ms", "recover_ms", "exact"]),
    "exchange_throughput.py": (["--gb", "0.02", "--repeats", "1"], []),
    "skewed_join.py": (["--rows", "100000", "--repeats", "1", "--source", "memory"], []),
    "ui_overhead.py": (["--seconds", "5"], []),
    # Q6 at scale factor 0.1 (the tables the TPC-H tests use): yarnflow, PySpark, DuckDB
    "tpch.py": (["--scale", "0.1", "--queries", "6"], ["q6", "geomean", "max_ratio", "all_exact"]),
    # Q3 and Q18 at scale factor 0.1 in 64 MB slots: both spill
    "spill.py": (["--scale", "0.1", "--slot-memory", "64m"],
                 ["q3", "q18", "yarnflow_s", "pyspark_s", "ratio", "spilled_mb", "peak_rss_mb",
                  "within_container", "exact"]),
    # a local Kafka broker of its own (or YARNFLOW_TEST_KAFKA's); no PyFlink in short mode
    "streaming.py": (["--short"], ["records_per_s_per_core", "checkpoint_cost",
                                   "checkpoint_duration_p99_ms", "recovery_s", "latency_p99_ms",
                                   "exactly_once"]),
    "adaptive_batch.py": (["--rows", "100000", "--parallelism", "4"],
                          ["filter_agg_ratio", "join_ratio", "skew_ratio", "memory_efficiency",
                           "memory_efficiency_fixed", "exact"]),
}
# On the YARN test cluster, by the yarn tier (tests/yarn/test_benchmarks.py): on the
# dockerised cluster's edge host in CI, the client's environment shipped to the hosts.
YARN: dict[str, tuple[list[str], list[str]]] = {
    "session_latency.py": (["--session-only", "--repeats", "1", "--jobs", "3", "--work", "0.2"],
                           ["warm_submit_to_running_ms", "warm_submit_to_acknowledged_ms",
                            "jobs_per_minute", "hdfs_floor_ms", "jobs_per_minute_hdfs_bound",
                            "hdfs_floor_steps_ms"]),
    # two repeats: the second must find its output writable (it once was not)
    "yarn_submit.py": (["--repeats", "2", "--parallelism", "1", "--skip-alloc"],
                       ["client_return_s", "to_running_s", "bare_skein_s"]),
    "hdfs_io.py": (["--mb", "12", "--files", "3", "--repeats", "1"],
                   ["read_mb_s", "write_mb_s", "local_read_fraction"]),
    "straggler.py": (["--repeats", "1", "--rows", "1200", "--work", "0.1", "--factor", "5"],
                     ["healthy_s", "straggler_off_s", "straggler_on_s", "speculation_gain",
                      "overhead", "live_progress_cost", "exact"]),
    # Q1 on 200,000 rows locally, then 3 session jobs each way
    "chaining.py": (["--rows", "200000", "--files", "2", "--repeats", "1", "--jobs", "3"],
                    ["tasks_off", "tasks_on", "q1_s_off", "q1_s_on", "jobs_per_minute",
                     "jobs_per_minute_hdfs_bound", "session_phases_ms", "hdfs_floor_steps_ms",
                     "exact"]),
    # stage 2 works 2 s a batch, so the kill lands while it runs
    "am_failover.py": (["--rows", "400", "--work1", "0.1", "--work", "2"],
                       ["am_recover_s", "stage1_rerun", "exact"]),
}
# the jobs other benchmarks run
NOT_BENCHMARKS = {"yarn_jobs.py", "session_jobs.py", "yarn_cluster.py",
                  # yarn_submit.py --secure's part: it takes the cluster from insecure to
                  # secure and back, so it runs by hand (issue 35)
                  "secure_submit.py"}
# on the dockerised cluster, driven from this machine (it installs yarnflow on the
# cluster's workers for its comparison, and removes it): tests/docker/test_ship_environment.py
DOCKER: dict[str, tuple[list[str], list[str]]] = {
    "ship_environment.py": (["--repeats", "1"], ["first_submit_s", "cached_submit_s",
                                                 "max_downloads_per_host", "exact"]),
}


def run_benchmark(name: str, args: list[str], keys: list[str], timeout: float) -> dict[str, Any]:
    """Run it; its last line of output is its JSON, with ``keys`` and no false flag."""
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / name), *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{name} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}"
    lines = proc.stdout.strip().splitlines()
    assert lines, f"{name} printed nothing:\n{proc.stderr[-3000:]}"
    figures = json.loads(lines[-1])
    assert isinstance(figures, dict), lines[-1]
    missing = [k for k in keys if k not in figures]
    assert not missing, f"{name} gave no {missing}: {figures}"
    # a goal is for a full run on a quiet machine; a short run proves the rest
    wrong = [k for k, v in figures.items() if v is False and not k.startswith("goal_")]
    assert not wrong, f"{name} reports {wrong} false: {figures}"
    return figures
