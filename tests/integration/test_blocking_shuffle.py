"""A shuffle larger than the executors' memory completes through BLOCKING result
partitions: producers write Arrow IPC files to local disk and consumers read them
after the producers finished, so neither side ever holds the shuffle in memory."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

import yarnflow.client as yf
from tests.conftest import FAST
from tests.executor_memory import ExecutorPeaks
from yarnflow.appmaster.jobmaster.executiongraph import JobStatus
from yarnflow.conf import Configuration, options
from yarnflow.core.jobgraph import PartitionType
from yarnflow.core.worker_spec import WorkerSpec
from yarnflow.client.targets.local import LocalCluster

BATCH_ROWS = 1 << 20                  # 8 MB of int64 per column and batch
BATCHES_PER_SEED = 40                 # 40 x 16 MB = 640 MB per producer subtask
HALF_SLOT = yf.ResourceSpec(0.5, "128m")   # producer + consumer share a 1-core, 256 MB slot


def expand(batch: pa.RecordBatch):
    """Each seed row becomes 640 MB of rows, made on the fly (never held at once)."""
    for seed in batch["seed"].to_pylist():
        rng = np.random.default_rng(seed)
        for _ in range(BATCHES_PER_SEED):
            values = rng.integers(0, 1000, BATCH_ROWS)
            yield pa.record_batch({"k": pa.array(values % 16), "v": pa.array(values)})


def summarize(batch: pa.RecordBatch) -> pa.RecordBatch:
    return pa.record_batch({"rows": [batch.num_rows], "total": [pc.sum(batch["v"]).as_py()],
                            "one": [1]})


def test_a_shuffle_larger_than_executor_memory_completes_through_blocking_partitions(tmp_path):
    config = Configuration.load(overrides=FAST + ["resourcemanager.taskmanager-timeout=60 s"])
    p = yf.Pipeline("big-shuffle", parallelism=2, schedule_mode="LAZY_FROM_SOURCES")
    seeds = p.from_arrow(pa.table({"seed": [1, 2]}), name="seeds")
    data = seeds.rebalance().flat_map(expand, name="expand").resources(HALF_SLOT)   # a seed each
    data.key_by("k").blocking().map(summarize, name="summarize").resources(HALF_SLOT) \
        .aggregate(["one"], [("rows", "sum"), ("total", "sum")]).set_parallelism(1) \
        .write_parquet(str(tmp_path / "out"))
    graph = p.job_graph(config)
    shuffle = next(e for e in graph.edges if e.source.name == "expand")
    assert shuffle.partition_type is PartitionType.BLOCKING

    with LocalCluster(config) as cluster:
        job = cluster.submit(graph)
        with ExecutorPeaks(cluster, config) as peaks:
            result = job.wait(600)
        worker = cluster.overview().workers[0]
        container_mb = WorkerSpec(worker.slot_profile, worker.num_slots,
                                  config.get(options.WORKER_OVERHEAD_MEMORY)).container.memory_mb

    assert result.status is JobStatus.FINISHED, result.failure
    expand_vertex = result.details.vertex_running("expand")
    shuffled_mb = [s.metrics.bytes_out / 2**20 for s in expand_vertex.subtasks]
    # every producer wrote more than a whole executor may hold ...
    assert min(shuffled_mb) > container_mb, (shuffled_mb, container_mb)
    # ... and no executor came near holding it
    assert peaks.peaks and peaks.largest_mb() < container_mb, (peaks.peaks, container_mb)
    out = pq.read_table(tmp_path / "out")
    assert out["rows_sum"].to_pylist() == [2 * BATCHES_PER_SEED * BATCH_ROWS]
    want_total = 0
    for seed in (1, 2):
        rng = np.random.default_rng(seed)
        want_total += sum(int(rng.integers(0, 1000, BATCH_ROWS).sum())
                          for _ in range(BATCHES_PER_SEED))
    assert out["total_sum"].to_pylist() == [want_total]
