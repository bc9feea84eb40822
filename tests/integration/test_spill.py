"""Data larger than memory on the local target (issue 57), in slots of 256 MB: a hash
join whose build side is four times a slot, an aggregate of 20 million keys and a
global sort of ten times a slot each give the exact answer, each spills, and no
executor's resident memory passes its container's size (its slots plus
``taskmanager.memory.overhead``), read from the kernel's high-water mark of each
executor process the job ran."""
from __future__ import annotations

import threading
from pathlib import Path
from typing import Iterator

import numpy as np
import psutil
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

import yarnflow.client as yf
from tests.conftest import FAST, NO_RESTART
from tests.integration.test_blocking_shuffle import peak_rss_mb
from yarnflow.appmaster.jobmaster.executiongraph import JobStatus
from yarnflow.client.display import spill_warning
from yarnflow.client.targets.local import LocalCluster
from yarnflow.conf import Configuration, options
from yarnflow.core.jobgraph import JobGraph

SLOT_MB = 256
CONFIG = FAST + NO_RESTART + [f"taskmanager.default-slot.memory={SLOT_MB}m",
                              "pipeline.batch-rows=16384"]
PAYLOAD = 248                   # bytes of each row's payload: few rows, many bytes


def payload(keys: np.ndarray) -> pa.FixedSizeBinaryArray:
    """Each row's key's bytes, then zeros: wide rows that Parquet compresses well."""
    raw = np.zeros((len(keys), PAYLOAD), dtype=np.uint8)
    raw[:, :8] = keys.astype(np.int64).view(np.uint8).reshape(-1, 8)
    return pa.FixedSizeBinaryArray.from_buffers(pa.binary(PAYLOAD), len(keys),
                                                [None, pa.py_buffer(raw.tobytes())])


def seeds(p: yf.Pipeline, n: int) -> yf.DataSet:
    return p.from_arrow(pa.table({"seed": list(range(n))}), name="seeds").rebalance()


def run_measured(graph: JobGraph, config: Configuration):
    """The job's result, and each of its executors' peak resident MB with its
    container's size."""
    with LocalCluster(config) as cluster:
        job = cluster.submit(graph)
        pids: dict[int, int] = {}
        done = threading.Event()

        def watch() -> None:
            while not done.wait(0.2):
                for worker in cluster.overview().workers:
                    pid = cluster.driver.pid_of(worker.resource_id)
                    if pid:
                        pids[pid] = worker.slot_profile.memory_mb * worker.num_slots \
                            + config.get(options.WORKER_OVERHEAD_MEMORY)
        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        try:
            result = job.wait(900)
            peaks = {pid: (peak_rss_mb(pid), size) for pid, size in pids.items()
                     if psutil.pid_exists(pid)}
        finally:
            done.set()
            watcher.join()
        left = list(cluster.workdir.rglob("spill-*/*"))
    assert not left, f"spill files outlived their tasks: {left[:5]}"
    return result, peaks


def check_memory(result, peaks, vertex: str) -> None:
    assert result.status is JobStatus.FINISHED, result.failure
    spilled = result.details.vertex_running(vertex).spilled()
    assert spilled[0] > 0, f"{vertex} did not spill"
    assert peaks, "no executor was seen"
    over = {pid: peak for pid, peak in peaks.items() if peak[0] > peak[1]}
    assert not over, f"executors past their container's size (peak MB, size MB): {over}"
    print(f"{vertex}: spilled {spilled[0] / 2**20:.0f} MB in {spilled[1]} files; executor "
          f"peaks (MB, container MB): {sorted(peaks.values())}")


BUILD_ROWS = 4_200_000          # x 264 bytes: 1.1 GB, four slots' memory
PROBE_ROWS = 1_000_000


def build_rows(batch: pa.RecordBatch) -> Iterator[pa.RecordBatch]:
    for seed in batch["seed"].to_pylist():
        share = BUILD_ROWS // 2
        end = (seed + 1) * share
        for start in range(seed * share, end, 16_384):
            k = np.arange(start, min(start + 16_384, end), dtype=np.int64)
            yield pa.record_batch({"k": k, "payload": payload(k)})


def probe_keys(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 2 * BUILD_ROWS, PROBE_ROWS // 2)


def probe_rows(batch: pa.RecordBatch) -> Iterator[pa.RecordBatch]:
    for seed in batch["seed"].to_pylist():
        yield pa.record_batch({"k": probe_keys(seed), "w": np.ones(PROBE_ROWS // 2, np.int64)})


def made_from(column: pa.Array) -> np.ndarray:
    """The keys a payload column was made from (0 for a null payload)."""
    filled = column.fill_null(pa.scalar(b"\0" * PAYLOAD, pa.binary(PAYLOAD)))
    raw = np.frombuffer(filled.buffers()[1], np.uint8, count=len(filled) * PAYLOAD,
                        offset=filled.offset * PAYLOAD)
    return raw.reshape(-1, PAYLOAD)[:, :8].copy().view(np.int64).ravel()


def first_eight(batch: pa.RecordBatch) -> pa.RecordBatch:
    """Each joined row's payload read back as the key it was made from (0 unmatched)."""
    return pa.record_batch({"k": batch["k"], "made": made_from(batch["payload"]),
                            "matched": pc.cast(pc.is_valid(batch["payload"]), pa.int64())})


def test_a_join_whose_build_side_is_four_slots_spills_and_stays_in_its_container(tmp_path):
    config = Configuration.load(overrides=CONFIG)
    p = yf.Pipeline("spill-join", parallelism=2)
    build = seeds(p, 2).flat_map(build_rows, name="build-side")
    probe = seeds(p, 2).flat_map(probe_rows, name="probe-side")
    # a left join holds its right side: the big one, in one subtask
    joined = probe.join(build, on="k", how="left").set_parallelism(1)
    joined.map(first_eight, name="read-back").aggregate(
        [], [("k", "sum"), ("made", "sum"), ("matched", "sum"), ("k", "count")]) \
        .write_parquet(str(tmp_path / "out"))
    result, peaks = run_measured(p.job_graph(config), config)
    check_memory(result, peaks, "join")
    # it wrote its build side twice (a bucket still too big is cut again): more than it
    # read, which the summary warns of, naming what to raise
    assert "taskmanager.default-slot.memory" in spill_warning(result.details.vertex_running("join"))
    keys = np.concatenate([probe_keys(0), probe_keys(1)])
    matched = keys[keys < BUILD_ROWS]
    out = pq.read_table(tmp_path / "out").to_pylist()
    assert out == [{"k_sum": int(keys.sum()), "made_sum": int(matched.sum()),
                    "matched_sum": len(matched), "k_count": len(keys)}]


KEYS = 20_000_000
AGG_ROWS = 25_000_000           # every key once, a quarter of them twice
STEP = 7_919                    # prime: row i's key (i * STEP) % KEYS visits every key


def agg_rows(batch: pa.RecordBatch) -> Iterator[pa.RecordBatch]:
    for seed in batch["seed"].to_pylist():
        share = AGG_ROWS // 2
        end = (seed + 1) * share
        for start in range(seed * share, end, 131_072):
            i = np.arange(start, min(start + 131_072, end), dtype=np.int64)
            yield pa.record_batch({"k": (i * STEP) % KEYS, "v": i})


def test_an_aggregate_of_twenty_million_keys_spills_and_stays_in_its_container(tmp_path):
    config = Configuration.load(overrides=CONFIG)
    p = yf.Pipeline("spill-aggregate", parallelism=2)
    seeds(p, 2).flat_map(agg_rows, name="rows").aggregate(
        ["k"], [("v", "sum"), ("v", "count")]).write_parquet(str(tmp_path / "out"))
    result, peaks = run_measured(p.job_graph(config), config)
    check_memory(result, peaks, "aggregate")
    out = pq.read_table(tmp_path / "out").sort_by("k")
    i = np.arange(AGG_ROWS, dtype=np.int64)
    keys = (i * STEP) % KEYS
    assert out["k"].to_numpy().tolist() == list(range(KEYS))
    assert np.array_equal(out["v_sum"].to_numpy(), np.bincount(keys, weights=i, minlength=KEYS).astype(np.int64))
    assert np.array_equal(out["v_count"].to_numpy(), np.bincount(keys, minlength=KEYS))


SORT_ROWS = 10_000_000          # x 256 bytes: 2.5 GB, ten slots' memory


def sort_keys(seed: int) -> np.ndarray:
    return np.random.default_rng(100 + seed).random(SORT_ROWS // 4)


def sort_rows(batch: pa.RecordBatch) -> Iterator[pa.RecordBatch]:
    for seed in batch["seed"].to_pylist():
        keys = sort_keys(seed)
        for start in range(0, len(keys), 16_384):
            k = keys[start:start + 16_384]
            yield pa.record_batch({"k": k, "payload": payload(k.view(np.int64))})


def test_a_sort_of_ten_slots_spills_and_stays_in_its_container(tmp_path):
    config = Configuration.load(overrides=CONFIG)
    p = yf.Pipeline("spill-sort", parallelism=2)
    seeds(p, 4).flat_map(sort_rows, name="rows").sort("k").write_parquet(str(tmp_path / "out"))
    result, peaks = run_measured(p.job_graph(config), config)
    check_memory(result, peaks, "sort")
    files = sorted(Path(tmp_path / "out").glob("*.parquet"))
    got = np.concatenate([pq.read_table(f, columns=["k"])["k"].to_numpy() for f in files])
    want = np.sort(np.concatenate([sort_keys(s) for s in range(4)]))
    assert np.array_equal(got, want)
    first = pq.ParquetFile(files[0]).read_row_group(0)       # the payloads moved with their keys
    assert np.array_equal(made_from(first["payload"].combine_chunks()),
                          first["k"].to_numpy().view(np.int64))

