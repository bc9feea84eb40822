"""Jobs for bench/yarn_submit.py (run through `yarnflow run -t yarn-per-job`).

    to-running         2 x --parallelism subtasks (default 8), two profiles: 4 x (2 cores,
                       1.5 GB) feeding 4 x (1 core, 512 MB)
    alloc [--fixed]    2 subtasks of 3 GB and 6 of 512 MB; --fixed gives every slot the
                       largest profile, as one fixed container size would
    two-stage          stage 1 (source, map; --work1 s per batch) writes a BLOCKING shuffle
                       that stage 2 (map; --work s per batch, aggregate, sink) reads: for
                       bench/am_failover.py
    batch              a batch job: source, --stages maps (--work s per batch each, 1 by
                       default), sink, every exchange BLOCKING (each vertex a region of its
                       own), each stage deployed when its inputs are done
                       (LAZY_FROM_SOURCES): for bench/straggler.py
"""
import argparse
import time

import pyarrow as pa

import yarnflow.client as yf


def working(seconds: float):
    def work(batch: pa.RecordBatch) -> pa.RecordBatch:
        time.sleep(seconds)    # the workload: a task busy for a known time
        return batch
    return work


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("job", choices=["to-running", "alloc", "two-stage", "batch"])
    parser.add_argument("--work1", type=float, default=0.5)
    parser.add_argument("--rows", type=int, default=4000)
    parser.add_argument("--fixed", action="store_true")
    parser.add_argument("--work", type=float, default=5.0)
    parser.add_argument("--parallelism", type=int, default=4)
    parser.add_argument("--stages", type=int, default=1, help="batch: its work stages")
    parser.add_argument("--out", default="/tmp/yarnflow-bench-out")
    args = parser.parse_args()
    table = pa.table({"k": pa.array(range(4000), pa.int64())})
    spec = yf.ResourceSpec
    if args.job == "two-stage":
        p = yf.Pipeline("bench-two-stage", parallelism=args.parallelism)
        keyed = pa.table({"k": pa.array([i % 97 for i in range(args.rows)], pa.int64()),
                          "v": pa.array(range(args.rows), pa.int64())})
        p.from_arrow(keyed, name="stage1-source").slot_sharing_group("one") \
            .map(working(args.work1), name="stage1-map").slot_sharing_group("one") \
            .key_by("k").blocking() \
            .map(working(args.work), name="stage2-map").slot_sharing_group("two") \
            .aggregate(["k"], [("v", "sum"), ("v", "count")]).write_parquet(args.out, "overwrite")
    elif args.job == "batch":
        p = yf.Pipeline("bench-batch", parallelism=args.parallelism,
                        schedule_mode="LAZY_FROM_SOURCES")
        stream = p.from_arrow(pa.table({"k": pa.array(range(args.rows), pa.int64())}))
        for stage in range(1, args.stages + 1):
            name = "work" if args.stages == 1 else f"work{stage}"
            stream = stream.rebalance().blocking().map(working(args.work), name=name)
        stream.blocking().write_parquet(args.out, "overwrite")
    elif args.job == "to-running":
        p = yf.Pipeline("bench-to-running")
        n = args.parallelism
        heavy = p.from_arrow(table, name="heavy").set_parallelism(n) \
            .resources(spec(2, "1536m")).slot_sharing_group("heavy")
        light = heavy.rebalance().map(working(args.work), name="light").set_parallelism(n) \
            .resources(spec(1, "512m")).slot_sharing_group("light")
        light.write_parquet(args.out, "overwrite").set_parallelism(n).slot_sharing_group("light")
    else:
        big, small = spec(1, "3g"), spec(1, "512m")
        p = yf.Pipeline("bench-alloc")
        heavy = p.from_arrow(table, name="heavy").set_parallelism(2).resources(big) \
            .slot_sharing_group("heavy")
        light = heavy.rebalance().map(working(args.work), name="light").set_parallelism(6) \
            .resources(big if args.fixed else small).slot_sharing_group("light")
        light.write_parquet(args.out, "overwrite").set_parallelism(6).slot_sharing_group("light")
    p.execute()


if __name__ == "__main__":
    main()
