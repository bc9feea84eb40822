"""Seed 003's skewed join at scale: yarnflow's `auto` plan against a forced hash join
and against the same job as one plain PySpark program, on the same data, in one run.
Prints one JSON object.

    python bench/skewed_join.py --rows 14000000 [--repeats 3] [--parallelism N]
                                [--source parquet|memory]

- auto_s, hash_s: `examples/skewed_join.py` with strategy auto / hash on a local
  cluster kept up across runs, so executors and their SparkSessions are already
  started; the first (cold) run is discarded. Each run: planning, submission and the
  job to its end (output committed). Medians of --repeats.
- auto_cold_s: that first auto run, including cluster and Spark start.
- pyspark_s: the same job (currency-code CASE in Spark SQL, join, Parquet out) as one
  PySpark program, local[cores] with adaptive query execution on, its SparkSession
  started and warmed by one discarded run.
- auto/hash_max_over_mean: the join subtasks' input rows, max ÷ mean, from the jobs'
  metrics (the worst auto run, the median hash run); auto_probe_max_over_mean: the same
  of the instruments side alone (the broadcast side is alike everywhere). plan: the
  strategy `auto` chose. results_equal: every output (auto, hash,
  PySpark) has exactly the rows of a pyarrow reference join.
- source: the instruments read from Parquet (its row groups as splits), or given to
  the pipeline as an in-memory table (``--source memory``: row ranges as splits).
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def load_example():
    spec = importlib.util.spec_from_file_location("skewed_join", ROOT / "examples" / "skewed_join.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def join_skew(result, input_index=None) -> float:
    from yarnflow.client.display import input_skew
    vertex = result.details.vertex_running("join")
    return input_skew([s.metrics for s in vertex.subtasks], input_index)


def run_yarnflow(cluster, example, config, data: str, out: str, strategy: str,
                 parallelism: int, table=None):
    from yarnflow.appmaster.jobmaster.executiongraph import JobStatus
    from yarnflow.client.explain import join_strategies
    start = time.monotonic()
    graph = example.build(data, out, strategy, parallelism, table).job_graph(config)
    result = cluster.submit(graph).wait(1800)
    elapsed = time.monotonic() - start
    if result.status is not JobStatus.FINISHED:
        raise SystemExit(f"the {strategy} run failed: {result.failure}")
    return elapsed, join_skew(result), join_skew(result, 0), join_strategies(graph)["join"]


def run_pyspark(spark, example, data: str, out: str) -> float:
    start = time.monotonic()
    uri = example.spark_uri
    spark.read.parquet(uri(os.path.join(data, "currencies"))).createOrReplaceTempView("input")
    codes = spark.sql(example.CURRENCY_CODE_SQL)
    instruments = spark.read.parquet(uri(os.path.join(data, "instruments")))
    instruments.join(codes, "CurrencyId").write.mode("overwrite").parquet(uri(out))
    return time.monotonic() - start


def same_rows(path: str, want) -> bool:
    got = pq.read_table(path).select(want.column_names).sort_by("InstrumentId")
    return got.num_rows == want.num_rows and got.equals(want)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=14_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--parallelism", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--source", choices=["parquet", "memory"], default="parquet")
    parser.add_argument("--data", default=os.path.join(os.path.expanduser("~"), ".cache",
                                                       "yarnflow", "bench-skewed-join"))
    args = parser.parse_args()
    example = load_example()
    data = os.path.join(args.data, f"rows-{args.rows}")
    out = os.path.join(args.data, "out")
    example.ensure_data(data, args.rows)

    from yarnflow.conf import Configuration
    from yarnflow.client.targets.local import LocalCluster
    config = Configuration.load(overrides=["resourcemanager.taskmanager-timeout=600 s",
                                           "slot.idle.timeout=1 s"])
    table = example.files.read_table(f"{data}/instruments") if args.source == "memory" else None
    times: dict[str, list[float]] = {"auto": [], "hash": []}
    skew: dict[str, list[float]] = {"auto": [], "hash": []}
    probe_skew: list[float] = []
    start = time.monotonic()
    with LocalCluster(config) as cluster:
        _, _, _, plan = run_yarnflow(cluster, example, config, data, f"{out}/auto", "auto",
                                     args.parallelism, table)
        auto_cold_s = time.monotonic() - start
        for _ in range(args.repeats):
            for strategy in ("auto", "hash"):
                elapsed, balance, probe, _ = run_yarnflow(
                    cluster, example, config, data, f"{out}/{strategy}", strategy,
                    args.parallelism, table)
                times[strategy].append(elapsed)
                skew[strategy].append(balance)
                if strategy == "auto":
                    probe_skew.append(probe)

    from pyspark.sql import SparkSession
    cores = os.cpu_count() or 2
    spark = (SparkSession.builder.master(f"local[{cores}]").appName("skewed-join-pyspark")
             .config("spark.sql.adaptive.enabled", "true").config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.driver.memory", "4g").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    run_pyspark(spark, example, data, f"{out}/pyspark")          # warm-up, discarded
    pyspark_times = [run_pyspark(spark, example, data, f"{out}/pyspark")
                     for _ in range(args.repeats)]
    spark.stop()

    want = example.reference(data).sort_by("InstrumentId")
    results_equal = all(same_rows(f"{out}/{name}", want) for name in ("auto", "hash", "pyspark"))
    shutil.rmtree(out, ignore_errors=True)
    auto_s, hash_s = statistics.median(times["auto"]), statistics.median(times["hash"])
    pyspark_s = statistics.median(pyspark_times)
    print(json.dumps({
        "rows": args.rows, "source": args.source, "parallelism": args.parallelism,
        "cores": cores,
        "plan": plan, "auto_s": round(auto_s, 3), "hash_s": round(hash_s, 3),
        "pyspark_s": round(pyspark_s, 3), "auto_cold_s": round(auto_cold_s, 3),
        "auto_max_over_mean": round(max(skew["auto"]), 3),
        "auto_probe_max_over_mean": round(max(probe_skew), 3),
        "hash_max_over_mean": round(statistics.median(skew["hash"]), 3),
        "results_equal": results_equal,
        "auto_over_pyspark": round(auto_s / pyspark_s, 3),
        "auto_over_hash": round(auto_s / hash_s, 3),
        "repeats": args.repeats,
    }))


if __name__ == "__main__":
    main()
