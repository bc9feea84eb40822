"""Slow hosts (issue 34) on the native test cluster, all in one run. Prints one JSON
object.

    eval "$(docker-hadoop/native/cluster up)"; python bench/straggler.py [--repeats 3]

The job (bench/yarn_jobs.py batch): a source, --stages maps of --work s per batch each
(1: one map) and a Parquet sink on HDFS, --parallelism subtasks each, every exchange
BLOCKING (each vertex is a region of its own, as speculation needs), through `yarnflow
run -t yarn-per-job`. A job's time is the JobMaster's, from RUNNING to its end (its
archived details): submission does not count, the start of its containers (about 7 s
on the native cluster) does. Median of --repeats each.

- healthy_s: on healthy executors;
- straggler_off_s: the executors on one NodeManager host (--slow-host) slowed
  --factor times (test.taskmanager.slow-hosts: every task there stretches the time
  it works between batches by the factor, as a CPU that much slower would);
- straggler_on_s: the same with speculative attempts (execution.batch.speculative.*:
  --ratio of a stage finished, --multiplier times their median, no lower bound below
  1 s);
- speculation_gain = straggler_off_s / straggler_on_s; overhead = straggler_on_s /
  healthy_s;
- live_progress_cost: healthy_s with live progress at its default
  metrics.progress.interval ÷ the same job with it off (0), the two run alternately;
- exact: every run wrote every row exactly once.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import uuid
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from yarn_submit import JOBS, poll, rest, wait_finished, wait_quiet, yarnflow_submit
from tests.yarn.conftest import Hdfs   # the test cluster's HDFS
from yarnflow.client.targets.yarn_apps import YarnApplication
from yarnflow.conf import options


def run(args: argparse.Namespace, *conf: str) -> tuple[float, bool, list[Any]]:
    """The job's time as its JobMaster saw it, whether its output is exact, and its
    speculative attempts."""
    hdfs = Hdfs(os.environ.get("YARNFLOW_TEST_HDFS", "hdfs://127.0.0.1:9000"))
    out = f"{hdfs.default_fs}/tmp/yarnflow-bench/straggler-{uuid.uuid4().hex[:8]}"
    wait_quiet()
    defines = [w for c in conf for w in ("-D", c)]
    app_id, _ = yarnflow_submit("-D", "pipeline.batch-rows=100", *defines, JOBS, "--", "batch",
                                "--parallelism", str(args.parallelism), "--stages",
                                str(args.stages), "--rows", str(args.rows), "--work", str(args.work), "--out", out)
    final = wait_finished(app_id)
    if final["finalStatus"] != "SUCCEEDED":
        raise RuntimeError(f"{app_id} ended {final['finalStatus']}: {final['diagnostics']}")
    with YarnApplication(app_id, timeout=30) as app:
        details = poll(lambda: app.archived_details(), 60, "the archived job", 0.5)
    keys = pq.read_table(hdfs.fs.path(out), filesystem=hdfs.fs.arrow).column("k").to_pylist()
    hdfs.fs.delete(out)
    return (details.end_time - details.start_time, sorted(keys) == list(range(args.rows)),
            details.speculations)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--parallelism", type=int, default=6)
    parser.add_argument("--rows", type=int, default=6000, help="100 rows a batch")
    parser.add_argument("--stages", type=int, default=1,
                        help="the job's work stages, each behind a BLOCKING exchange")
    parser.add_argument("--work", type=float, default=0.5, help="s per batch of the map")
    parser.add_argument("--slow-host", default="",
                        help="default: the first of the cluster's NodeManager hosts by name")
    parser.add_argument("--factor", type=float, default=10.0)
    parser.add_argument("--ratio", type=float, default=0.5,
                        help="slow-task-detector.execution-time.baseline-ratio: a slow host "
                             "holds a third of this cluster's subtasks, so Flink's 0.75 would "
                             "wait for them")
    parser.add_argument("--multiplier", type=float, default=1.5)
    args = parser.parse_args()
    if not args.slow_host:
        args.slow_host = min(n["nodeHostName"] for n in rest("/ws/v1/cluster/nodes")["nodes"]["node"]
                             if n["state"] == "RUNNING")
    default = options.PROGRESS_INTERVAL.default
    on, off, slow, speculated = [], [], [], []
    outcomes: list[str] = []
    exact = True
    straggler = f"test.taskmanager.slow-hosts={args.slow_host}={args.factor:g}"
    speculation = ("execution.batch.speculative.enabled=true",
                   f"slow-task-detector.execution-time.baseline-ratio={args.ratio:g}",
                   f"slow-task-detector.execution-time.baseline-multiplier={args.multiplier:g}",
                   "slow-task-detector.execution-time.baseline-lower-bound=1 s")
    for _ in range(args.repeats):
        for times, conf in ((on, (f"metrics.progress.interval={default:g} s",)),
                            (off, ("metrics.progress.interval=0 s",)),
                            (slow, (straggler,)), (speculated, (straggler, *speculation))):
            seconds, ok, attempts = run(args, *conf)
            times.append(seconds)
            exact &= ok
            outcomes += [f"{a.task}: {a.outcome.value}" for a in attempts]
    healthy, straggler_off = statistics.median(on), statistics.median(slow)
    straggler_on = statistics.median(speculated)
    figures: dict[str, Any] = {
        "healthy_s": round(healthy, 3),
        "straggler_off_s": round(straggler_off, 3),
        "straggler_on_s": round(straggler_on, 3),
        "speculation_gain": round(straggler_off / straggler_on, 3),
        "overhead": round(straggler_on / healthy, 3),
        "live_progress_cost": round(healthy / statistics.median(off), 4),
        "healthy_runs_s": [round(t, 3) for t in on],
        "progress_off_runs_s": [round(t, 3) for t in off],
        "straggler_off_runs_s": [round(t, 3) for t in slow],
        "straggler_on_runs_s": [round(t, 3) for t in speculated],
        "speculations": outcomes,
        "exact": exact,
        "repeats": args.repeats, "parallelism": args.parallelism, "stages": args.stages,
        "work_s": args.work,
        "slow_host": args.slow_host, "factor": args.factor, "ratio": args.ratio,
        "multiplier": args.multiplier,
    }
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
