"""Adaptive batch execution against plans fixed before the job runs (issue 36), on the
local target, in one run. Prints one JSON object.

    python bench/adaptive_batch.py [--rows 1000000] [--parallelism 16] [--repeats 1]

Three pipelines, each run with ``execution.batch.adaptive.enabled`` on and off on a
fresh local cluster (its executors start with the job, as a per-job application's do);
``parallelism.default`` (and the adaptive maximum) is ``--parallelism``, what a user sets
for large inputs; the sources read with 4 subtasks (a skewed partition splits no finer
than its producers: Spark's skew join alike); one slot per executor (the default):

- filter_agg: a filter keeping 1 % of the rows, then a grouped aggregate. Off, the
  aggregate and its sink run ``--parallelism`` tiny subtasks; on, what the filter left
  decides.
- join: a join whose right side a map's selectivity hint calls tiny (0.1 %) and which
  keeps every row. Off, the planner broadcasts it to every subtask; on, both sides
  measured large and it runs as a hash join.
- skew: a hash join whose top key holds 35 % of the facts, then an enrichment map of a
  known per-row latency (a lookup service's; the repository's benchmarks stand in
  sleeping maps for work of known duration). Off, one subtask gets the top key's rows;
  on, its partition is split.

Keys: ``filter_agg_ratio``, ``join_ratio``, ``skew_ratio``: the job's time (submission to
its end, output committed) on ÷ off, medians of ``--repeats``; the ``*_on_s``/``*_off_s``
themselves; ``memory_efficiency``: over the executors that ran the stages after an
exchange, their peak resident memory ÷ their containers' memory, summed, with adaptive
slot profiles; ``memory_efficiency_fixed``: the same with adaptive parallelism but fixed
profiles (``execution.batch.adaptive.slot-memory.enabled=false``); ``exact``: every
output equals a pyarrow reference.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import psutil  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.compute as pc  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

import yarnflow.client as yf  # noqa: E402
from yarnflow.appmaster.jobmaster.executiongraph import JobStatus  # noqa: E402
from yarnflow.client.targets.base import planned_worker_specs  # noqa: E402
from yarnflow.client.targets.local import LocalCluster  # noqa: E402
from yarnflow.conf import Configuration, options  # noqa: E402

SOURCES = 4
LOOKUP_S_PER_ROW = 50e-6          # the enrichment map's latency per row


def enrich(batch: pa.RecordBatch) -> pa.RecordBatch:
    time.sleep(batch.num_rows * LOOKUP_S_PER_ROW)      # the workload: a lookup per row
    return batch


def filter_agg(rows: int, out: str) -> tuple[yf.Pipeline, Callable[[], pa.Table]]:
    table = pa.table({"k": pa.array([i % 10_000 for i in range(rows)], pa.int64()),
                      "v": pa.array(range(rows), pa.int64())})
    p = yf.Pipeline("filter-agg")
    p.from_arrow(table, name="rows").set_parallelism(SOURCES) \
     .filter(lambda b: pc.less(pc.bit_wise_and(b["v"], 127), 1), name="one-percent") \
     .set_parallelism(SOURCES).aggregate(["k"], [("v", "sum")]).write_parquet(out)

    def reference() -> pa.Table:
        kept = table.filter(pc.less(pc.bit_wise_and(table["v"], 127), 1))
        return kept.group_by("k").aggregate([("v", "sum")])
    return p, reference


def misestimated_join(rows: int, out: str) -> tuple[yf.Pipeline, Callable[[], pa.Table]]:
    facts = pa.table({"k": pa.array([i % 50_000 for i in range(rows)], pa.int64()),
                      "v": pa.array(range(rows), pa.int64())})
    other = pa.table({"k": pa.array([(i * 7) % 50_000 for i in range(rows)], pa.int64()),
                      "w": pa.array(range(rows), pa.int64())})
    p = yf.Pipeline("misestimated-join")
    right = p.from_arrow(other, name="other").set_parallelism(SOURCES) \
        .map(lambda b: b, name="keeps-all", selectivity=0.001).set_parallelism(SOURCES)
    p.from_arrow(facts, name="facts").set_parallelism(SOURCES).join(right, on="k") \
     .write_parquet(out)
    return p, lambda: facts.join(other, keys="k", join_type="inner")


def skewed_join(rows: int, out: str) -> tuple[yf.Pipeline, Callable[[], pa.Table]]:
    facts = pa.table({"k": pa.array([0 if (i * 7919) % 100 < 35 else 1 + i % 9_999
                                     for i in range(rows)], pa.int64()),
                      "v": pa.array(range(rows), pa.int64())})
    dims = pa.table({"k": pa.array(range(10_000), pa.int64()),
                     "name": pa.array([f"d{i}" for i in range(10_000)])})
    p = yf.Pipeline("skewed-join")
    p.from_arrow(facts, name="facts").set_parallelism(SOURCES) \
     .join(p.from_arrow(dims, name="dims").set_parallelism(SOURCES), on="k", strategy="hash") \
     .map(enrich, name="enrich").write_parquet(out)
    return p, lambda: facts.join(dims, keys="k", join_type="inner")


PIPELINES = {"filter_agg": filter_agg, "join": misestimated_join, "skew": skewed_join}
# The skewed join's data is small, and its work is the enrichment: a smaller volume per
# subtask and skew threshold, as a user sets them for such a stage (both runs get them;
# without adaptive execution they change nothing). The defaults (16 MB, 256 MB) are for
# production volumes.
TUNED = {"skew": ["execution.batch.adaptive.auto-parallelism.avg-data-volume-per-task=1 mb",
                  "table.optimizer.skewed-join-optimization.skewed-threshold=1 mb"]}


class PeakMemory:
    """Every executor's peak resident memory, sampled while the job runs, and its
    container's memory, by resource id."""

    def __init__(self, cluster: LocalCluster, overhead_mb: int) -> None:
        self._cluster = cluster
        self._overhead_mb = overhead_mb
        self.peak_mb: dict[str, float] = {}
        self.container_mb: dict[str, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> "PeakMemory":
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(10)

    def _sample(self) -> None:
        while not self._stop.is_set():
            for worker in self._cluster.overview().workers:
                pid = self._cluster.driver.pid_of(worker.resource_id)
                if pid is None or worker.slot_profile is None:
                    continue
                try:
                    rss = psutil.Process(pid).memory_info().rss / 2**20
                except psutil.Error:
                    continue
                rid = worker.resource_id
                self.peak_mb[rid] = max(self.peak_mb.get(rid, 0.0), rss)
                self.container_mb[rid] = worker.slot_profile.memory_mb * worker.num_slots \
                    + self._overhead_mb
            self._stop.wait(0.05)


def run(name: str, rows: int, config: Configuration, work: Path) -> dict[str, Any]:
    out = str(work / f"{name}-{time.monotonic_ns()}")
    pipeline, reference = PIPELINES[name](rows, out)
    graph = pipeline.job_graph(config)
    # as the local target runs a job: the executors its plan declares (planned_worker_specs)
    with LocalCluster(config, worker_specs=planned_worker_specs(graph, config)) as cluster, \
            PeakMemory(cluster, config.get(options.WORKER_OVERHEAD_MEMORY)) as memory:
        start = time.monotonic()
        result = cluster.submit(graph).wait(1800)
        seconds = time.monotonic() - start
    if result.status is not JobStatus.FINISHED:
        sys.exit(f"{name} failed: {result.failure}")
    after_exchange = {s.resource_id for v in result.details.vertices
                      if not any(v.runs(name) for name in ("rows", "one-percent", "facts",
                                                           "dims", "other", "keeps-all"))
                      for s in v.subtasks}
    got, want = pq.read_table(out), reference()
    columns = sorted(want.column_names)
    exact = got.num_rows == want.num_rows and got.select(columns).sort_by(
        [(c, "ascending") for c in columns]).equals(want.select(columns).sort_by(
            [(c, "ascending") for c in columns]))
    return {"seconds": seconds, "exact": exact,
            "peak_mb": sum(memory.peak_mb.get(r, 0.0) for r in after_exchange),
            "container_mb": sum(memory.container_mb.get(r, 0.0) for r in after_exchange),
            "parallelism": {v.name: v.parallelism for v in result.details.vertices}}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--parallelism", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    base = [f"parallelism.default={args.parallelism}",
            f"execution.batch.adaptive.auto-parallelism.max-parallelism={args.parallelism}",
            "heartbeat.interval=0.5 s", "resourcemanager.taskmanager-timeout=2 s",
            "slot.idle.timeout=1 s"]
    modes = {"on": ["execution.batch.adaptive.enabled=true"], "off": [],
             "fixed": ["execution.batch.adaptive.enabled=true",
                       "execution.batch.adaptive.slot-memory.enabled=false"]}
    figures: dict[str, Any] = {}
    exact = True
    memory = {"on": [0.0, 0.0], "fixed": [0.0, 0.0]}
    with tempfile.TemporaryDirectory(prefix="adaptive-bench-") as tmp:
        work = Path(tmp)
        for name in PIPELINES:
            times: dict[str, list[float]] = {"on": [], "off": []}
            for _ in range(args.repeats):
                for mode in ("on", "off", "fixed"):
                    config = Configuration.load(overrides=base + TUNED.get(name, []) + modes[mode])
                    ran = run(name, args.rows, config, work)
                    exact = exact and ran["exact"]
                    if mode in times:
                        times[mode].append(ran["seconds"])
                    if mode in memory:
                        memory[mode][0] += ran["peak_mb"]
                        memory[mode][1] += ran["container_mb"]
                    figures.setdefault(f"{name}_parallelism_{mode}", ran["parallelism"])
            on, off = statistics.median(times["on"]), statistics.median(times["off"])
            figures[f"{name}_on_s"], figures[f"{name}_off_s"] = round(on, 2), round(off, 2)
            figures[f"{name}_ratio"] = round(on / off, 3)
    figures["memory_efficiency"] = round(memory["on"][0] / max(memory["on"][1], 1.0), 3)
    figures["memory_efficiency_fixed"] = round(memory["fixed"][0] / max(memory["fixed"][1], 1.0), 3)
    figures["exact"] = exact
    figures.update({"rows": args.rows, "parallelism": args.parallelism, "repeats": args.repeats})
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
