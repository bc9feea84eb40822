"""Jobs for bench/session_latency.py.

    yarnflow OUT WORK   (run by `yarnflow run`) a source, a working map and a Parquet
                        sink, 4 subtasks each, sharing 4 slots of the default profile
    spark OUT WORK      (run by spark-submit) 4 Spark tasks that each note when they
                        started into OUT/<partition> and then work WORK seconds
"""
from __future__ import annotations

import sys
import time

import pyarrow as pa


def working(seconds: float):
    def work(batch: pa.RecordBatch) -> pa.RecordBatch:
        time.sleep(seconds)    # the workload: a task busy for a known time
        return batch
    return work


def four_subtasks(out: str, work: float):
    import yarnflow.client as yf
    table = pa.table({"k": pa.array(range(400), pa.int64())})
    p = yf.Pipeline("bench-four-subtasks", parallelism=4)
    p.from_arrow(table).map(working(work), name="work").write_parquet(out)
    return p


def spark_trivial(out: str, work: float) -> None:
    from pyspark.sql import SparkSession

    def mark(i: int) -> int:
        with open(f"{out}/{i}", "w") as stamp:
            stamp.write(repr(time.time()))
        time.sleep(work)
        return i
    spark = SparkSession.builder.appName("bench-spark-trivial").getOrCreate()
    spark.sparkContext.parallelize(range(4), 4).map(mark).collect()
    spark.stop()


if __name__ == "__main__":
    if sys.argv[1] == "spark":
        spark_trivial(sys.argv[2], float(sys.argv[3]))
    else:
        four_subtasks(sys.argv[2], float(sys.argv[3])).execute()
