"""Data larger than memory (issue 57): TPC-H Q3 and Q18 in small slots, yarnflow
against PySpark given the same memory, in one run. Prints one JSON object.

    python bench/spill.py                        # scale factor 10, 512 MB slots, N = 2
    python bench/spill.py --scale 0.1 --slot-memory 64m

Per query, on this machine and the tables of ``examples/tpch/data.py``:

- ``yarnflow_s``: the job on ``local`` at parallelism N (the client here, its cluster
  and executors as ``yarnflow run`` starts them), slots of ``--slot-memory``;
- ``pyspark_s``: a fresh PySpark process on ``local[N]`` running the query's SQL, its
  driver memory (local mode's executor is the driver) the total yarnflow's executors
  were given: their containers, slots and overhead;
- ``ratio`` = yarnflow_s / pyspark_s (goal: <= 1.0);
- ``spilled_mb``: what the job's operators spilled to local disk;
- ``peak_rss_mb``: the largest executor's peak resident memory (the kernel's
  high-water mark), ``within_container``: every executor's peak within its
  container's size (slots plus ``taskmanager.memory.overhead``), which a NodeManager
  with its memory check on enforces;
- ``exact``: yarnflow's answer is DuckDB's (``examples/tpch/check.py``).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples"))
sys.path.insert(0, str(ROOT))

from tests.executor_memory import ExecutorPeaks  # noqa: E402  (read as the tests read them)

from tpch.data import generate  # noqa: E402
from tpch.engines import duckdb_over, spark_query  # noqa: E402
from tpch.run import pipeline, query  # noqa: E402

QUERIES = (3, 18)


def run_yarnflow(number: int, data: Path, out: Path, parallelism: int,
                 overrides: list[str]) -> dict[str, Any]:
    """The query as a local job; its executors' peaks read while they live."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from yarnflow.appmaster.jobmaster.executiongraph import JobStatus
    from yarnflow.client.targets.base import planned_worker_specs
    from yarnflow.client.targets.local import LocalCluster
    from yarnflow.conf import Configuration
    config = Configuration.load(overrides=overrides)
    graph = pipeline(number, str(data), str(out), parallelism).job_graph(config)
    started = time.perf_counter()
    with LocalCluster(config, worker_specs=planned_worker_specs(graph, config)) as cluster:
        job = cluster.submit(graph)
        with ExecutorPeaks(cluster, config, interval=0.1) as peaks:
            result = job.wait(3600)
    seconds = time.perf_counter() - started
    if result.status is not JobStatus.FINISHED:
        raise RuntimeError(f"q{number:02d} {result.status.value}: {result.failure}")
    spilled = sum(v.spilled()[0] for v in result.details.vertices)
    files = sorted(out.glob("*.parquet"))
    answer = pa.concat_tables([pq.read_table(f) for f in files]) if files else None
    return {"seconds": seconds, "answer": answer, "spilled_mb": spilled / 2**20,
            "peak_rss_mb": peaks.largest_mb(),
            "within_container": bool(peaks.peaks) and not peaks.over(),
            "memory_mb": peaks.containers_mb()}


def run_spark(number: int, data: Path, parallelism: int, memory_mb: int) -> float:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, __file__, "--spark-query", str(number), "--data",
                           str(data), "--parallelism", str(parallelism), "--spark-memory",
                           f"{memory_mb}m"], capture_output=True, text=True, timeout=3600)
    if done.returncode != 0:
        raise RuntimeError(f"PySpark's q{number:02d} exited {done.returncode}: "
                           f"{(done.stderr or done.stdout).strip()[-2000:]}")
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=10.0)
    parser.add_argument("--slot-memory", default="512m")
    parser.add_argument("--parallelism", type=int, default=2)
    parser.add_argument("--data", help="the tables' directory (default: generated here)")
    parser.add_argument("--spark-query", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--spark-memory", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.spark_query:
        spark_query(args.spark_query, args.data, args.parallelism, args.spark_memory,
                    executor_memory=args.spark_memory)
        return
    from tpch.check import difference
    data = Path(args.data) if args.data else generate(args.scale)
    con = duckdb_over(data, args.parallelism)
    overrides = [f"taskmanager.default-slot.memory={args.slot_memory}"]
    result: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="yarnflow-spill-bench-") as scratch:
        for number in QUERIES:
            module = query(number)
            ours = run_yarnflow(number, data, Path(scratch) / f"q{number:02d}",
                                args.parallelism, overrides)
            spark = run_spark(number, data, args.parallelism, ours["memory_mb"])
            differs = difference(ours["answer"], con.sql(module.SQL).to_arrow_table(),
                                 module.ORDER)
            result[f"q{number}"] = {
                "yarnflow_s": round(ours["seconds"], 2), "pyspark_s": round(spark, 2),
                "ratio": round(ours["seconds"] / spark, 3),
                "spilled_mb": round(ours["spilled_mb"], 1),
                "peak_rss_mb": round(ours["peak_rss_mb"], 1),
                "within_container": ours["within_container"],
                "memory_mb": ours["memory_mb"], "exact": not differs,
                **({"difference": differs} if differs else {})}
            print(f"q{number:02d}: {json.dumps(result[f'q{number}'])}", file=sys.stderr, flush=True)
    queries = list(result.values())
    print(json.dumps({
        "scale": args.scale, "slot_memory": args.slot_memory, "parallelism": args.parallelism,
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        **result,
        "yarnflow_s": round(sum(q["yarnflow_s"] for q in queries), 2),
        "pyspark_s": round(sum(q["pyspark_s"] for q in queries), 2),
        "ratio": max(q["ratio"] for q in queries),
        "spilled_mb": round(sum(q["spilled_mb"] for q in queries), 1),
        "peak_rss_mb": max(q["peak_rss_mb"] for q in queries),
        "within_container": all(q["within_container"] for q in queries),
        "exact": all(q["exact"] for q in queries)}))


if __name__ == "__main__":
    main()
