"""Run TPC-H queries as yarnflow jobs, one job per query, each writing its answer as
Parquet under --out (``q01/``...; a query with ORDER BY in order over its part files).

    yarnflow run examples/tpch/run.py                          # all 22 at scale 0.1
    yarnflow run examples/tpch/run.py -- --queries 1,3,18 --scale 1
    yarnflow run -t yarn-per-job examples/tpch/run.py -- --data hdfs:///tpch/sf1 --queries 3,9 --one-job

Without --data the tables are generated on this machine with tpchgen-cli
(``data.py``); a YARN target needs them on the cluster's file system
(``yarnflow fs put ~/.cache/yarnflow/tpch/sf1 /tpch/sf1``).
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import yarnflow.client as yf  # noqa: E402
from tpch import QUERIES  # noqa: E402
from tpch.data import generate  # noqa: E402


def query(number: int):
    return importlib.import_module(f"tpch.q{number:02d}")


def pipeline(number: int, data: str, out: str, parallelism: int | None = None) -> yf.Pipeline:
    """Query ``number``'s job: its answer written to ``out``."""
    p = yf.Pipeline(f"tpch-q{number:02d}", parallelism=parallelism)
    query(number).build(p, data).write_parquet(out, "overwrite", name="answer")
    return p


def one_job(chosen: list[int], data: str, out: str, parallelism: int | None = None) -> yf.Pipeline:
    """The ``chosen`` queries as one job (one YARN application), each answer written to
    ``out/qNN``."""
    p = yf.Pipeline("tpch-" + "-".join(f"q{n:02d}" for n in chosen), parallelism=parallelism)
    for number in chosen:
        query(number).build(p, data).write_parquet(f"{out.rstrip('/')}/q{number:02d}", "overwrite",
                                                   name=f"q{number:02d}-answer")
    return p


def numbers(text: str) -> list[int]:
    chosen = [int(part) for part in text.split(",") if part.strip()]
    unknown = [n for n in chosen if n not in QUERIES]
    if unknown:
        raise SystemExit(f"no TPC-H query {unknown}: the queries are 1 to 22")
    return chosen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=numbers, default=list(QUERIES))
    parser.add_argument("--scale", type=float, default=0.1)
    parser.add_argument("--data", help="the tables' directory (default: generated here)")
    parser.add_argument("--out", default=os.path.join(tempfile.gettempdir(), "yarnflow-tpch"))
    parser.add_argument("--parallelism", type=int)
    parser.add_argument("--one-job", action="store_true",
                        help="run the queries as one job instead of one job each")
    args = parser.parse_args()
    data = args.data or str(generate(args.scale))
    if args.one_job:
        one_job(args.queries, data, args.out, args.parallelism).execute()
        return
    for number in args.queries:
        pipeline(number, data, f"{args.out.rstrip('/')}/q{number:02d}", args.parallelism).execute()


if __name__ == "__main__":
    main()
