"""Job shapes for the YARN end-to-end tests, run with `yarnflow run ... shapes.py --
SHAPE [--out DIR] [--work SECONDS] [--memory SIZE] [--mode MODE] [--input DIR]`.
Sleeping maps stand in for real work of a known duration (they are the workload, not
synchronisation)."""
import argparse
import hashlib
import json
import time
import urllib.error
import urllib.request

import os
import sys

import cloudpickle
import numpy as np
import pyarrow as pa

import yarnflow.client as yf

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))   # imported by a test too
import spill_jobs

# the executors have yarnflow, not this folder: the spill jobs' functions travel by value
cloudpickle.register_pickle_by_value(spill_jobs)


def rows(n: int) -> pa.Table:
    return pa.table({"k": pa.array(range(n), pa.int64()), "v": pa.array([1.0] * n)})


def keyed(n: int) -> pa.Table:
    """97 keys; two-stage's output is its group-by (k, v_sum, v_count)."""
    return pa.table({"k": pa.array([i % 97 for i in range(n)], pa.int64()),
                     "v": pa.array(range(n), pa.int64())})


def working(seconds: float):
    def work(batch: pa.RecordBatch) -> pa.RecordBatch:
        time.sleep(seconds)
        return batch
    return work


def held(seconds: float, hold: str):
    """Works ``seconds`` a batch while the file behind ``hold`` (a WebHDFS GETFILESTATUS
    URL) exists, then at full speed: a test that inspects a running job removes the file
    when it is done, however long that took, instead of guessing how long the job must run."""
    released = False

    def work(batch: pa.RecordBatch) -> pa.RecordBatch:
        nonlocal released
        if not released:
            try:
                urllib.request.urlopen(hold, timeout=10).close()
            except urllib.error.HTTPError as error:
                released = error.code == 404
            except OSError:              # the NameNode did not answer: still held
                pass
            if not released:
                time.sleep(seconds)
        return batch
    return work


def digest(table: pa.Table) -> str:
    """Of the rows in their order: a collected result checked exactly, in one line."""
    return hashlib.sha256(json.dumps(table.to_pylist()).encode()).hexdigest()


def hog(gb: float, seconds: float):
    """Touches ``gb`` of memory and holds it ``seconds`` (longer than a NodeManager's
    monitoring interval), then passes its batch on."""
    def touch(batch: pa.RecordBatch) -> pa.RecordBatch:
        held = np.ones(int(gb * 2**30) // 8)        # every page written: resident
        time.sleep(seconds)
        return batch.append_column("held", pa.array([float(held[-1])] * batch.num_rows))
    return touch


def explode(batch: pa.RecordBatch) -> pa.RecordBatch:
    raise ValueError(f"bad input: {batch.num_rows} rows of which none is valid")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("shape", choices=["two-profiles", "lazy", "long", "raise", "huge",
                                          "copy", "narrow-heavy", "two-stage", "four-and-two",
                                          "bad-column", "batch", "labelled",
                                          "adaptive-stages", "profiles", "regions", "collect",
                                          "memory-hog", "spill-join", "spill-aggregate",
                                          "spill-sort"])
    parser.add_argument("--out", default="yarnflow-shapes-out")
    parser.add_argument("--work", type=float, default=4.0)
    parser.add_argument("--memory", default="512m")
    parser.add_argument("--mode", default="overwrite", help="the sink's write mode")
    parser.add_argument("--input", help="copy: the Parquet input")
    parser.add_argument("--parallelism", type=int, default=3, help="copy, batch: its parallelism")
    parser.add_argument("--cores", type=float, default=3.0, help="regions: stage 1's cores")
    parser.add_argument("--work1", type=float, default=0.1, help="two-stage: stage 1's work")
    parser.add_argument("--label", default="highmem", help="labelled: the map's node label")
    parser.add_argument("--rows", type=int, default=2000, help="long: its rows")
    parser.add_argument("--gb", type=float, default=3.0, help="memory-hog: what its map touches")
    parser.add_argument("--hold", help="long, profiles: work while this WebHDFS file status URL "
                        "answers")
    args = parser.parse_args()
    mode = args.mode
    R = yf.ResourceSpec  # noqa: N806 - short, as the tests spell a profile
    if args.shape == "two-profiles":     # 2 x (2 cores, 1.5 GB) and 2 x (1 core, 512 MB)
        p = yf.Pipeline("two-profiles", parallelism=2)
        src = p.from_arrow(rows(2000)).slot_sharing_group("cpu")
        heavy = src.map(working(args.work), name="cpu-heavy").resources(R(2, "1536m")) \
            .slot_sharing_group("cpu")
        light = heavy.map(working(args.work), name="light").resources(R(1, "512m")) \
            .slot_sharing_group("light")
        light.write_parquet(args.out, mode).slot_sharing_group("light")
    elif args.shape == "four-and-two":   # 4 slots of (1 core, 512 MB), then 2 of (1 core, 768 MB)
        p = yf.Pipeline("four-and-two", parallelism=4)
        wide = p.from_arrow(rows(2000)).slot_sharing_group("wide") \
            .map(working(args.work), name="wide").resources(R(1, "512m")).slot_sharing_group("wide")
        narrow = wide.rebalance().map(working(args.work), name="narrow").set_parallelism(2) \
            .resources(R(1, "768m")).slot_sharing_group("narrow")
        narrow.write_parquet(args.out, mode).set_parallelism(2).slot_sharing_group("narrow")
    elif args.shape == "narrow-heavy":   # shared slots of 3c/3g (source + map) and 1c/1g (source)
        p = yf.Pipeline("narrow-heavy", parallelism=2)
        src = p.from_arrow(rows(2000)).resources(R(1, "1g"))
        src.rebalance().map(working(args.work), name="heavy").set_parallelism(1) \
            .resources(R(2, "2g")).write_parquet(args.out, mode).set_parallelism(1)
    elif args.shape == "lazy":           # stage 1 (512 MB) feeds stage 2 (768 MB) that works on
        p = yf.Pipeline("lazy", parallelism=1, schedule_mode="LAZY_FROM_SOURCES")
        src = p.from_arrow(rows(1000)).resources(R(1, "512m")).slot_sharing_group("stage1")
        stage2 = src.rebalance().map(working(args.work), name="stage2") \
            .resources(R(1, "768m")).slot_sharing_group("stage2")
        stage2.write_parquet(args.out, mode).slot_sharing_group("stage2")
    elif args.shape == "long":           # two executors busy for a while
        p = yf.Pipeline("long", parallelism=2)
        work = held(args.work, args.hold) if args.hold else working(args.work)
        p.from_arrow(rows(args.rows)).rebalance().map(work, name="work") \
            .write_parquet(args.out, mode)
    elif args.shape == "raise":
        p = yf.Pipeline("raises", parallelism=1)
        p.from_arrow(rows(10)).map(explode, name="explode").write_parquet(args.out, mode)
    elif args.shape == "two-stage":      # stage 1 writes a BLOCKING shuffle stage 2 reads
        p = yf.Pipeline("two-stage", parallelism=2)
        p.from_arrow(keyed(4000), name="stage1-source").slot_sharing_group("one") \
            .map(working(args.work1), name="stage1-map").slot_sharing_group("one") \
            .key_by("k").blocking() \
            .map(working(args.work), name="stage2-map").slot_sharing_group("two") \
            .aggregate(["k"], [("v", "sum"), ("v", "count")]).write_parquet(args.out, mode)
    elif args.shape == "bad-column":     # an aggregate over a column the input lacks
        p = yf.Pipeline("bad-column", parallelism=2)
        p.from_arrow(keyed(100)).aggregate(["k"], [("value", "sum")]).write_parquet(args.out, mode)
    elif args.shape == "batch":          # source → work → sink, BLOCKING, stage by stage
        p = yf.Pipeline("batch", parallelism=args.parallelism, schedule_mode="LAZY_FROM_SOURCES")
        p.from_arrow(rows(1200)).rebalance().blocking().map(working(args.work), name="work") \
            .blocking().write_parquet(args.out, mode)
    elif args.shape == "labelled":       # a map in --label's partition, between plain slots
        p = yf.Pipeline("labelled", parallelism=2)
        p.from_arrow(rows(2000)).resources(R(1, "512m")).rebalance() \
            .map(working(args.work), name="labelled-op").resources(R(1, "768m", node_label=args.label)) \
            .slot_sharing_group("labelled").rebalance() \
            .write_parquet(args.out, mode).resources(R(1, "512m")).slot_sharing_group("default")
    elif args.shape == "adaptive-stages":   # two stages after a rebalance, 10x apart in bytes
        p = yf.Pipeline("adaptive-stages", parallelism=2)
        big, light = keyed(args.rows), R(1, "64m")
        p.from_arrow(big, name="big").resources(light).rebalance() \
            .map(working(0), name="big-stage").write_parquet(f"{args.out}/big", mode, name="big-sink")
        p.from_arrow(big.slice(0, args.rows // 10), name="small").resources(light).rebalance() \
            .map(working(0), name="small-stage") \
            .write_parquet(f"{args.out}/small", mode, name="small-sink")
    elif args.shape == "profiles":       # issue 53's job: three slot profiles, a BLOCKING
        # aggregate and a broadcast join over --input (keyed rows on the cluster)
        p = yf.Pipeline("profiles", parallelism=args.parallelism)
        work = held(args.work, args.hold) if args.hold else working(args.work)
        names = pa.table({"k": pa.array(range(97), pa.int64()),
                          "name": [f"key-{k}" for k in range(97)]})
        p.read_parquet(args.input, name="parquet-source").resources(R(1, "300m")) \
            .slot_sharing_group("source").rebalance() \
            .map(work, name="slow-map").resources(R(1, "600m")).slot_sharing_group("map") \
            .blocking().aggregate(["k"], [("v", "sum"), ("v", "count")]) \
            .resources(R(1, "400m")).slot_sharing_group("aggregate") \
            .join(p.from_arrow(names, name="names"), on="k", strategy="broadcast") \
            .write_parquet(args.out, mode)
    elif args.shape == "regions":        # issue 81's job: each source subtask's chain
        # (source, slow map, partial aggregate: --cores in all) ends at a BLOCKING
        # exchange, so it is a pipelined region of its own; the same output as profiles
        p = yf.Pipeline("regions", parallelism=args.parallelism)
        work = held(args.work, args.hold) if args.hold else working(args.work)
        names = pa.table({"k": pa.array(range(97), pa.int64()),
                          "name": [f"key-{k}" for k in range(97)]})
        p.read_parquet(args.input, name="parquet-source").resources(R(args.cores, "300m")) \
            .map(work, name="slow-map").blocking() \
            .aggregate(["k"], [("v", "sum"), ("v", "count")]).resources(R(1, "400m")) \
            .join(p.from_arrow(names, name="names"), on="k", strategy="broadcast") \
            .write_parquet(args.out, mode)
    elif args.shape == "collect":        # keyed rows sorted, brought back to the client
        p = yf.Pipeline("collect", parallelism=args.parallelism)
        got = p.from_arrow(keyed(args.rows)).rebalance() \
            .sort("k", "v", descending=[False, True]).to_arrow()
        print(f"collected {got.num_rows} rows, sha256 {digest(got)}")
        return
    elif args.shape == "memory-hog":     # a map touching --gb in a slot of --memory
        p = yf.Pipeline("memory-hog", parallelism=1)
        p.from_arrow(rows(10)).map(hog(args.gb, args.work), name="hog") \
            .resources(R(1, args.memory)).write_parquet(args.out, mode)
    elif args.shape.startswith("spill-"):   # issue 57's three, in slots of --memory
        p = yf.Pipeline(args.shape, parallelism=2)
        job = args.shape.removeprefix("spill-")
        if job == "aggregate":
            spill_jobs.aggregate_job(p, args.out, checked=True)
        else:
            {"join": spill_jobs.join_job, "sort": spill_jobs.sort_job}[job](p, args.out)
    elif args.shape == "copy":           # read a Parquet input, write it back
        p = yf.Pipeline("copy", parallelism=args.parallelism)
        p.read_parquet(args.input).write_parquet(args.out, mode)
    else:                                # a profile of --memory
        p = yf.Pipeline("huge", parallelism=1)
        p.from_arrow(rows(10)).map(working(0), name="huge-op").resources(R(1, args.memory)) \
            .write_parquet(args.out, mode)
    p.execute()


if __name__ == "__main__":
    main()
