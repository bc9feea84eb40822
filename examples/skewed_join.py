"""Seed 003's skewed join: instruments joined to the 492-row currencies table.

13/14 of the instruments are priced in one currency. A hash join on the currency id
sends those rows to one subtask; the planner instead sees (from the Parquet footers,
carried through the Spark SQL step) that currencies are tiny, broadcasts them, and
keeps the instruments where their source read them, so every join subtask gets an
equal share. ``CurrencyCode`` is the seed's CASE expression, run in Spark SQL.

    yarnflow run examples/skewed_join.py                       # 200,000 instruments
    yarnflow run examples/skewed_join.py -- --rows 14000000    # the seed's size
    yarnflow run -t yarn-per-job examples/skewed_join.py       # on YARN, data on HDFS
    yarnflow explain examples/skewed_join.py                   # the plan, not a run

The data are generated with PySpark on this machine the first time (or when --rows
changes). On a YARN target the job reads and writes the cluster's file system: the
data are put there (as `yarnflow fs put` does) under
/user/<user>/yarnflow-examples/skewed_join/ unless --data says where, and the output
goes beside them.
"""
from __future__ import annotations

import argparse
import fcntl
import os
import shutil
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

import yarnflow.client as yf
from yarnflow.client import files

HERE = os.path.dirname(os.path.abspath(__file__))
NUM_CURRENCIES = 492
DOMINANT_CURRENCY = 44
CURRENCY_CODE_SQL = """
    SELECT CurrencyId,
           CASE WHEN ISOCode IS NULL OR ISOCode = '' THEN ISOExtended ELSE ISOCode END
               AS CurrencyCode
    FROM input"""


def default_files(rows: int) -> int:
    """Enough Parquet files (one input split each) that subtasks asking for splits end
    up with near-equal shares, and none larger than ~250,000 rows."""
    return max(32, -(-rows // 250_000))


def spark_uri(path: str) -> str:
    """A local path as a file: URI, so Spark does not resolve it against a cluster's
    fs.defaultFS (HADOOP_CONF_DIR may point at HDFS)."""
    return path if "://" in path else Path(path).resolve().as_uri()


def generate(data_dir: str, rows: int, files: int | None = None, seed: int = 3) -> None:
    """Write ``instruments`` (``rows`` rows, 13/14 in one currency) and ``currencies``
    (492 rows; every fifth has no ISO code, every seventh an empty one) as Parquet,
    with PySpark."""
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F  # noqa: N812 - PySpark's own idiom

    spark = (SparkSession.builder.master("local[*]").appName("skewed-join-data")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.driver.memory", "2g")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    try:
        cid = F.col("id")
        currencies = spark.range(NUM_CURRENCIES).select(
            cid.alias("CurrencyId"),
            F.when(cid % 5 == 0, F.lit(None)).when(cid % 7 == 0, F.lit(""))
             .otherwise(F.format_string("C%03d", cid)).alias("ISOCode"),
            F.format_string("X-%03d", cid).alias("ISOExtended"))
        currencies.coalesce(1).write.mode("overwrite").parquet(
            spark_uri(os.path.join(data_dir, "currencies")))
        instruments = spark.range(0, rows, 1, files or default_files(rows)).select(
            cid.alias("InstrumentId"),
            F.format_string("RIC%010d", cid).alias("RIC"),
            F.when(F.rand(seed) < 13 / 14, F.lit(DOMINANT_CURRENCY))
             .otherwise((F.rand(seed + 1) * NUM_CURRENCIES).cast("long")).alias("CurrencyId"),
            F.round(F.rand(seed + 2) * 100, 2).alias("Price"))
        instruments.write.mode("overwrite").parquet(spark_uri(os.path.join(data_dir, "instruments")))
    finally:
        spark.stop()


def ensure_data(data: str, rows: int) -> None:
    """``data`` holds ``rows`` instruments: generated here with PySpark, and put on the
    cluster's file system when that is where ``data`` is."""
    marker = f".rows-{rows}"
    if files.on_cluster() or "://" in data:
        if files.exists(f"{data}/{marker}"):
            return
        local = os.path.join(HERE, "data", f"skewed_join-{rows}")
        ensure_local_data(local, rows)
        print(f"putting the data on {files.put(local, data, overwrite=True)}", flush=True)
    else:
        ensure_local_data(data, rows)


def ensure_local_data(data_dir: str, rows: int) -> None:
    """Generated once however many runs start at once (two terminals, or hosts that
    share the directory): the later ones wait on a lock, and the data appear whole,
    by a rename, never half-written."""
    marker = os.path.join(data_dir, f".rows-{rows}")
    if os.path.exists(marker):
        return
    parent, name = os.path.split(os.path.abspath(data_dir))
    os.makedirs(parent, exist_ok=True)
    with open(os.path.join(parent, f".{name}.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.path.exists(marker):
            return
        print(f"generating {rows:,} instruments with PySpark into {data_dir}", flush=True)
        staging = tempfile.mkdtemp(dir=parent, prefix=f".{name}.")
        try:
            generate(staging, rows)
            open(os.path.join(staging, f".rows-{rows}"), "w").close()
            shutil.rmtree(data_dir, ignore_errors=True)
            os.rename(staging, data_dir)
        finally:
            shutil.rmtree(staging, ignore_errors=True)


def build(data_dir: str, out_dir: str, strategy: str = "auto",
          parallelism: int = 2, instruments_table: pa.Table | None = None) -> yf.Pipeline:
    """``instruments_table``: the instruments as an in-memory table instead of read
    from ``data_dir`` (the benchmark runs both)."""
    pipeline = yf.Pipeline("skewed-join", parallelism=parallelism)
    instruments = pipeline.read_parquet(f"{data_dir}/instruments", name="instruments") \
        if instruments_table is None else pipeline.from_arrow(instruments_table,
                                                              name="instruments")
    currencies = pipeline.read_parquet(f"{data_dir}/currencies",
                                       name="currencies").set_parallelism(1)
    codes = currencies.spark_sql(CURRENCY_CODE_SQL, name="currency-code").set_parallelism(1)
    instruments.join(codes, on="CurrencyId", strategy=strategy, name="join") \
        .write_parquet(out_dir, mode="overwrite", name="sink")
    return pipeline


def reference(data_dir: str) -> pa.Table:
    """The same answer computed with plain pyarrow, for comparison."""
    instruments = files.read_table(f"{data_dir}/instruments")
    currencies = files.read_table(f"{data_dir}/currencies")
    iso = currencies["ISOCode"]
    use_extended = pc.or_kleene(pc.is_null(iso), pc.equal(iso, ""))   # SQL OR: null OR true
    codes = pa.table({"CurrencyId": currencies["CurrencyId"],
                      "CurrencyCode": pc.if_else(use_extended, currencies["ISOExtended"], iso)})
    return instruments.join(codes, keys="CurrencyId")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=200_000, help="instruments to generate")
    parser.add_argument("--data", default=None,
                        help="where the data are (default: examples/data/skewed_join "
                             "locally, yarnflow-examples/skewed_join/data on a cluster)")
    parser.add_argument("--out", default=None, help="where the join goes (default: beside "
                        "the data's default, .../output/skewed_join or .../skewed_join/output)")
    parser.add_argument("--strategy", choices=["auto", "broadcast", "hash"], default="auto")
    parser.add_argument("--parallelism", type=int, default=2)
    args = parser.parse_args()
    cluster = files.on_cluster()
    data = args.data or ("yarnflow-examples/skewed_join/data" if cluster
                         else os.path.join(HERE, "data", "skewed_join"))
    out = args.out or ("yarnflow-examples/skewed_join/output" if cluster
                       else os.path.join(HERE, "output", "skewed_join"))
    ensure_data(data, args.rows)
    job = build(data, out, args.strategy, args.parallelism).execute()
    if job.status() is yf.JobStatus.FINISHED:    # a detached YARN run is still running here
        rows = files.read_table(out, columns=["InstrumentId"]).num_rows
        print(f"wrote {rows:,} rows to {files.resolve(out)[1]}")


if __name__ == "__main__":
    main()
