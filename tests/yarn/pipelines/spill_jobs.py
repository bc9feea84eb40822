"""The three jobs of issue 57's acceptance, larger than their slots' memory, built the
same way on ``local`` (tests/integration/test_spill.py) and as YARN per-job
applications (shapes.py's ``spill-*``): their rows are made on the fly by the
executors, and each job checks its own answer into one row, so a cluster's test reads
back a few bytes, not gigabytes.

- join: 4.2 million build rows of 264 bytes (1.1 GB, four slots of 256 MB) on the
  right of a left join (its held side) against 1 million probe keys;
- aggregate: 25 million rows over 20 million keys;
- sort: 10 million rows of 256 bytes (2.5 GB, ten slots).
"""
from __future__ import annotations

from typing import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import yarnflow.client as yf

PAYLOAD = 248                   # bytes of each row's payload: few rows, many bytes
BATCH = 16_384                  # rows per generated batch (pipeline.batch-rows' size)


def payload(keys: np.ndarray) -> pa.FixedSizeBinaryArray:
    """Each row's key's bytes, then zeros: wide rows that Parquet compresses well."""
    raw = np.zeros((len(keys), PAYLOAD), dtype=np.uint8)
    raw[:, :8] = keys.astype(np.int64).view(np.uint8).reshape(-1, 8)
    return pa.FixedSizeBinaryArray.from_buffers(pa.binary(PAYLOAD), len(keys),
                                                [None, pa.py_buffer(raw.tobytes())])


def made_from(column: pa.Array) -> np.ndarray:
    """The keys a payload column was made from (0 for a null payload)."""
    filled = column.fill_null(pa.scalar(b"\0" * PAYLOAD, pa.binary(PAYLOAD)))
    raw = np.frombuffer(filled.buffers()[1], np.uint8, count=len(filled) * PAYLOAD,
                        offset=filled.offset * PAYLOAD)
    return raw.reshape(-1, PAYLOAD)[:, :8].copy().view(np.int64).ravel()


def seeds(p: yf.Pipeline, n: int) -> yf.DataSet:
    return p.from_arrow(pa.table({"seed": list(range(n))}), name="seeds").rebalance()


# --- join ---------------------------------------------------------------------------
BUILD_ROWS = 4_200_000
PROBE_ROWS = 1_000_000


def build_rows(batch: pa.RecordBatch) -> Iterator[pa.RecordBatch]:
    for seed in batch["seed"].to_pylist():
        share = BUILD_ROWS // 2
        end = (seed + 1) * share
        for start in range(seed * share, end, BATCH):
            k = np.arange(start, min(start + BATCH, end), dtype=np.int64)
            yield pa.record_batch({"k": k, "payload": payload(k)})


def probe_keys(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 2 * BUILD_ROWS, PROBE_ROWS // 2)


def probe_rows(batch: pa.RecordBatch) -> Iterator[pa.RecordBatch]:
    for seed in batch["seed"].to_pylist():
        yield pa.record_batch({"k": probe_keys(seed), "w": np.ones(PROBE_ROWS // 2, np.int64)})


def read_back(batch: pa.RecordBatch) -> pa.RecordBatch:
    """Each joined row's payload read back as the key it was made from (0 unmatched)."""
    return pa.record_batch({"k": batch["k"], "made": made_from(batch["payload"]),
                            "matched": pc.cast(pc.is_valid(batch["payload"]), pa.int64())})


def join_job(p: yf.Pipeline, out: str) -> None:
    build = seeds(p, 2).flat_map(build_rows, name="build-side")
    probe = seeds(p, 2).flat_map(probe_rows, name="probe-side")
    # a left join holds its right side: the big one, in one subtask
    probe.join(build, on="k", how="left").set_parallelism(1) \
        .map(read_back, name="read-back") \
        .aggregate([], [("k", "sum"), ("made", "sum"), ("matched", "sum"), ("k", "count")]) \
        .write_parquet(out, "overwrite")


def join_answer() -> dict[str, int]:
    keys = np.concatenate([probe_keys(0), probe_keys(1)])
    matched = keys[keys < BUILD_ROWS]
    return {"k_sum": int(keys.sum()), "made_sum": int(matched.sum()),
            "matched_sum": len(matched), "k_count": len(keys)}


# --- aggregate ----------------------------------------------------------------------
KEYS = 20_000_000
AGG_ROWS = 25_000_000           # every key once, a quarter of them twice
STEP = 7_919                    # prime: row i's key (i * STEP) % KEYS visits every key
INVERSE = pow(STEP, -1, KEYS)   # key k's first row: (k * INVERSE) % KEYS


def agg_rows(batch: pa.RecordBatch) -> Iterator[pa.RecordBatch]:
    for seed in batch["seed"].to_pylist():
        share = AGG_ROWS // 2
        end = (seed + 1) * share
        for start in range(seed * share, end, 131_072):
            i = np.arange(start, min(start + 131_072, end), dtype=np.int64)
            yield pa.record_batch({"k": (i * STEP) % KEYS, "v": i})


def wrong_groups(batch: pa.RecordBatch) -> pa.RecordBatch:
    """1 for each group whose sum or count is not what its rows give: key k's rows are
    i = (k * INVERSE) % KEYS and, below AGG_ROWS, i + KEYS."""
    k = batch["k"].to_numpy()
    first = (k * INVERSE) % KEYS
    twice = first + KEYS < AGG_ROWS
    want_sum = first + np.where(twice, first + KEYS, 0)
    wrong = (batch["v_sum"].to_numpy() != want_sum) | \
        (batch["v_count"].to_numpy() != 1 + twice.astype(np.int64))
    return pa.record_batch({"k": batch["k"], "wrong": wrong.astype(np.int64)})


def aggregate_job(p: yf.Pipeline, out: str, checked: bool = False) -> None:
    """``checked``: the groups checked in the job, its answer one row (groups, wrong
    ones, the keys' sum); else every group written."""
    groups = seeds(p, 2).flat_map(agg_rows, name="rows").aggregate(
        ["k"], [("v", "sum"), ("v", "count")])
    if checked:
        groups = groups.map(wrong_groups, name="check").aggregate(
            [], [("k", "count"), ("wrong", "sum"), ("k", "sum")], name="check-sums")
    groups.write_parquet(out, "overwrite")


AGGREGATE_ANSWER = {"k_count": KEYS, "wrong_sum": 0, "k_sum": KEYS * (KEYS - 1) // 2}


# --- sort ---------------------------------------------------------------------------
SORT_ROWS = 10_000_000
SORT_SEEDS = 4


def sort_keys(seed: int) -> np.ndarray:
    return np.random.default_rng(100 + seed).random(SORT_ROWS // SORT_SEEDS)


def sort_rows(batch: pa.RecordBatch) -> Iterator[pa.RecordBatch]:
    for seed in batch["seed"].to_pylist():
        keys = sort_keys(seed)
        for start in range(0, len(keys), BATCH):
            k = keys[start:start + BATCH]
            yield pa.record_batch({"k": k, "payload": payload(k.view(np.int64))})


def sort_job(p: yf.Pipeline, out: str) -> None:
    seeds(p, SORT_SEEDS).flat_map(sort_rows, name="rows").sort("k").write_parquet(out, "overwrite")


def sorted_keys() -> np.ndarray:
    return np.sort(np.concatenate([sort_keys(s) for s in range(SORT_SEEDS)]))
