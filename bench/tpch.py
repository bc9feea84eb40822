"""TPC-H's 22 queries: yarnflow against PySpark, with DuckDB as the single-node
reference, on the same tables in the same run (issue 56). Prints one JSON object.

    python bench/tpch.py                         # scale factor 1, N = 2, all 22
    python bench/tpch.py --scale 0.1 --queries 1,3,18 --parallelism 4

The tables are tpchgen-cli's (``examples/tpch/data.py``: generated once per scale
factor under ~/.cache/yarnflow/tpch). Per query, on this machine:

- ``yarnflow_s``: the whole ``yarnflow run examples/tpch/run.py -- --queries N`` on
  ``local`` at parallelism N, a fresh process as a user starts it: the client, the
  local cluster and its executors, the job, its answer written as Parquet;
- ``spark_s``: the whole of a fresh process as ``spark-submit`` would start it
  (``python bench/tpch.py --spark-query N``): a SparkSession on ``local[N]`` with
  ``--spark-memory`` (8g) of driver memory, the
  tables as views over the same Parquet files, the query's text (the spec's, with its
  validation parameters: the module's ``SQL``) as Spark SQL, its rows collected;
- ``duckdb_s``: the same text in DuckDB in this process, ``threads`` = N;
- ``ratio`` = yarnflow_s / spark_s; ``exact``: yarnflow's answer is DuckDB's
  (``examples/tpch/check.py``: rows, numbers within 1e-9 relative, ORDER BY's order
  over the part files read in name order), else ``difference`` says how.

On top: ``geomean`` (of the ratios), ``max_ratio``, ``all_exact``, and
``geomean_vs_duckdb`` (of yarnflow_s / duckdb_s). Goals at scale factor 1, N = 2:
all_exact, geomean <= 0.6, max_ratio <= 1.2.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples"))

from tpch import QUERIES  # noqa: E402
from tpch.data import generate  # noqa: E402
from tpch.engines import duckdb_over, spark_query  # noqa: E402
from tpch.run import numbers, query  # noqa: E402

RUN_TIMEOUT_S = 1800


def timed(command: list[str]) -> tuple[float, subprocess.CompletedProcess]:
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, timeout=RUN_TIMEOUT_S,
                          cwd=ROOT)
    return time.perf_counter() - started, done


def failed(what: str, done: subprocess.CompletedProcess) -> str:
    return f"{what} exited {done.returncode}: {(done.stderr or done.stdout).strip()[-2000:]}"


def yarnflow_answer(number: int, data: Path, out: Path, parallelism: int) -> tuple[float, Any]:
    import pyarrow as pa
    import pyarrow.parquet as pq
    beside = Path(sys.executable).parent / "yarnflow"     # this environment's, as pip put it
    yarnflow = str(beside) if beside.exists() else shutil.which("yarnflow") or "yarnflow"
    seconds, done = timed([yarnflow, "run", "--no-progress", str(ROOT / "examples/tpch/run.py"),
                           "--", "--queries", str(number), "--data", str(data), "--out", str(out),
                           "--parallelism", str(parallelism)])
    if done.returncode != 0:
        raise RuntimeError(failed(f"yarnflow run of q{number:02d}", done))
    files = sorted((out / f"q{number:02d}").glob("*.parquet"))
    return seconds, pa.concat_tables([pq.read_table(f) for f in files]) if files else None


def spark_seconds(number: int, data: Path, parallelism: int, memory: str) -> float:
    seconds, done = timed([sys.executable, __file__, "--spark-query", str(number), "--data",
                           str(data), "--parallelism", str(parallelism), "--spark-memory", memory])
    if done.returncode != 0:
        raise RuntimeError(failed(f"PySpark's q{number:02d}", done))
    return seconds


def geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--parallelism", type=int, default=2)
    parser.add_argument("--queries", type=numbers, default=list(QUERIES))
    parser.add_argument("--data", help="the tables' directory (default: generated here)")
    parser.add_argument("--spark-memory", default="8g",
                        help="PySpark's spark.driver.memory (local mode runs in the driver); "
                        "its 1g default fails Q21 at scale factor 10")
    parser.add_argument("--spark-query", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.spark_query:
        spark_query(args.spark_query, args.data, args.parallelism, args.spark_memory)
        return
    from tpch.check import difference
    data = Path(args.data) if args.data else generate(args.scale)
    con = duckdb_over(data, args.parallelism)
    result: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="yarnflow-tpch-bench-") as scratch:
        for number in args.queries:
            module = query(number)
            started = time.perf_counter()
            want = con.sql(module.SQL).to_arrow_table()
            duck = time.perf_counter() - started
            ours, got = yarnflow_answer(number, data, Path(scratch), args.parallelism)
            spark = spark_seconds(number, data, args.parallelism, args.spark_memory)
            differs = difference(got, want, module.ORDER)
            result[f"q{number}"] = {"yarnflow_s": round(ours, 2), "spark_s": round(spark, 2),
                                    "duckdb_s": round(duck, 3), "ratio": round(ours / spark, 3),
                                    "exact": not differs, **({"difference": differs} if differs else {})}
            print(f"q{number:02d}: {json.dumps(result[f'q{number}'])}", file=sys.stderr, flush=True)
    per_query = list(result.values())
    print(json.dumps({
        "scale": args.scale, "parallelism": args.parallelism,
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        **result,
        "geomean": round(geomean([q["ratio"] for q in per_query]), 3),
        "max_ratio": max(q["ratio"] for q in per_query),
        "all_exact": all(q["exact"] for q in per_query),
        "geomean_vs_duckdb": round(geomean([q["yarnflow_s"] / max(q["duckdb_s"], 1e-3)
                                            for q in per_query]), 1)}))


if __name__ == "__main__":
    main()
