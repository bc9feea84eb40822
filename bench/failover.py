"""Failover on the local target: what a lost executor costs.

    python bench/failover.py [--work SECONDS]

1. The pipelined job (source -> map -> key_by -> aggregate -> Parquet sink, parallelism
   4, about WORK seconds of work per subtask) without a kill, then with one executor
   SIGKILLed once half the rows went through its map: ``detect_ms`` (kill -> the
   JobMaster records the failure), ``recover_ms`` (kill -> every restarted subtask
   RUNNING again), ``restarted_subtasks`` / ``total_subtasks``, ``slowdown`` (job time
   with the kill / without), ``exact`` (the output equals pyarrow's).
2. A two-stage job whose stages meet at a BLOCKING shuffle, its stage-two executor
   killed while stage two runs, once with region failover and once with full:
   ``restarted_subtasks_region`` and ``restarted_subtasks_full``.

Prints one JSON object. Production defaults, except where named below.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

import yarnflow.client as yf
from yarnflow.core.clock import poll_until
from yarnflow.conf import Configuration, options
from yarnflow.core.details import JobDetails
from yarnflow.client.targets.local import LocalCluster

ROWS, BATCH_ROWS, KEYS = 16_000, 200, 97


def table() -> pa.Table:
    return pa.table({"k": pa.array([i % KEYS for i in range(ROWS)], pa.int64()),
                     "v": pa.array(range(ROWS), pa.int64())})


def working(progress: Path, pause: float):
    def work(batch: pa.RecordBatch) -> pa.RecordBatch:
        time.sleep(pause)          # the workload: a subtask busy for a known time
        with open(progress, "a") as out:
            out.write(f"{batch.num_rows}\n")
        return batch
    return work


def rows_through(progress: Path) -> int:
    return sum(int(n) for n in progress.read_text().split()) if progress.exists() else 0


def exact(out: Path) -> bool:
    got = pq.read_table(out).sort_by("k")
    want = table().group_by("k").aggregate([("v", "sum"), ("v", "count")]).sort_by("k")
    return got.num_rows == want.num_rows and \
        got["v_sum"].to_pylist() == want["v_sum"].to_pylist() and \
        got["v_count"].to_pylist() == want["v_count"].to_pylist()


def pipelined(out: Path, progress: Path, pause: float) -> yf.Pipeline:
    p = yf.Pipeline("bench-failover", parallelism=4)
    p.from_arrow(table()).map(working(progress, pause), name="work") \
     .aggregate(["k"], [("v", "sum"), ("v", "count")]).write_parquet(str(out))
    return p


def two_stage(out: Path, progress: Path, pause: float) -> yf.Pipeline:
    p = yf.Pipeline("bench-regions", parallelism=2)
    p.from_arrow(table()).slot_sharing_group("one").map(lambda b: b, name="one") \
     .slot_sharing_group("one").key_by("k").blocking() \
     .map(working(progress, pause), name="two").resources(yf.ResourceSpec(2, "1g")) \
     .slot_sharing_group("two") \
     .aggregate(["k"], [("v", "sum"), ("v", "count")]).write_parquet(str(out))
    return p


def wait_for(condition, timeout: float, what: str) -> None:
    if poll_until(lambda: condition() or None, timeout, 0.02) is None:
        raise SystemExit(f"bench: timed out after {timeout:g} s waiting for {what}")


def run(config: Configuration, make, workdir: Path, kill_in: str | None,
        when_rows: int) -> tuple[JobDetails, float, bool]:
    """The job's details, the kill's epoch time (0 without one), and exactness."""
    out, progress = workdir / "out", workdir / "progress"
    with LocalCluster(config) as cluster:
        client = cluster.submit(make(out, progress).job_graph(config))
        killed_at = 0.0
        if kill_in is not None:
            wait_for(lambda: rows_through(progress) >= when_rows, 300, "the rows before the kill")
            details = client.details()
            victim = next(s.resource_id for s in details.vertex_running(kill_in).subtasks
                          if s.resource_id)
            killed_at = time.time()
            os.kill(cluster.driver.pid_of(victim), signal.SIGKILL)
        result = client.wait(600)
    if result.status.value != "FINISHED":
        raise SystemExit(f"bench: the job ended {result.status.value}: {result.failure}")
    return result.details, killed_at, exact(out)


def duration(details: JobDetails) -> float:
    return details.end_time - details.start_time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=float, default=20.0,
                        help="seconds of work per subtask of the pipelined job")
    args = parser.parse_args()
    pause = args.work / (ROWS / BATCH_ROWS / 4)
    config = Configuration.load(overrides=[f"pipeline.batch-rows={BATCH_ROWS}"])
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        calm, _, calm_exact = run(config, lambda o, p: pipelined(o, p, pause), root / "calm",
                                  None, 0)
        hit, killed_at, hit_exact = run(config, lambda o, p: pipelined(o, p, pause),
                                        root / "kill", "work", ROWS // 2)
        restarted = [s for v in hit.vertices for s in v.subtasks if s.attempt > 0]
        recovered = max(s.state_timestamps.get("RUNNING", 0.0) for s in restarted) \
            if restarted else killed_at
        counts = {}
        for strategy in ("region", "full"):
            regional = config.copy().set(options.FAILOVER_STRATEGY, strategy)
            details, _, ok = run(regional, lambda o, p: two_stage(o, p, pause / 4),
                                 root / strategy, "two", ROWS // 4)
            if not ok:
                raise SystemExit(f"bench: the two-stage job's output is wrong ({strategy})")
            counts[strategy] = sum(1 for v in details.vertices for s in v.subtasks
                                   if s.attempt > 0)
    print(json.dumps({
        "detect_ms": round((hit.exceptions[0].timestamp - killed_at) * 1000, 1),
        "recover_ms": round((recovered - killed_at) * 1000, 1),
        "restarted_subtasks": len(restarted),
        "total_subtasks": sum(v.parallelism for v in hit.vertices),
        "job_s": round(duration(calm), 2),
        "job_with_kill_s": round(duration(hit), 2),
        "slowdown": round(duration(hit) / duration(calm), 3),
        "exact": calm_exact and hit_exact,
        "restarted_subtasks_region": counts["region"],
        "restarted_subtasks_full": counts["full"],
    }))


if __name__ == "__main__":
    sys.exit(main())
