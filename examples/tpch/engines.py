"""The other engines the benchmarks run TPC-H's text on (bench/tpch.py, bench/spill.py):
DuckDB as the single-node reference, PySpark as the engine to beat, each over the
same Parquet tables."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tpch.data import TABLES
from tpch.run import query


def duckdb_over(data: Path, threads: int) -> Any:
    """A DuckDB connection with each table a view over its Parquet files."""
    import duckdb
    con = duckdb.connect()
    con.execute(f"set threads = {threads}")
    for name in TABLES:
        con.execute(f"create view {name} as select * from read_parquet('{data}/{name}/*.parquet')")
    return con


def spark_query(number: int, data: str, parallelism: int, memory: str,
                executor_memory: str | None = None) -> None:
    """Query ``number``'s text as Spark SQL on ``local[parallelism]``, its rows
    collected (what a benchmark times as a fresh process); ``memory`` is the driver's,
    which runs local mode's executor."""
    from pyspark.sql import SparkSession
    builder = SparkSession.builder.master(f"local[{parallelism}]") \
        .appName(f"tpch-q{number:02d}").config("spark.driver.memory", memory) \
        .config("spark.sql.shuffle.partitions", str(parallelism)) \
        .config("spark.ui.enabled", "false")
    if executor_memory:
        builder = builder.config("spark.executor.memory", executor_memory)
    spark = builder.getOrCreate()
    for name in TABLES:
        spark.read.parquet(f"{data}/{name}").createOrReplaceTempView(name)
    collected = spark.sql(query(number).SQL).collect()
    print(json.dumps({"rows": len(collected)}))
    spark.stop()
