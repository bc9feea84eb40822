"""Data larger than memory on the local target (issue 57), in slots of 256 MB: a hash
join whose build side is four times a slot, an aggregate of 20 million keys and a
global sort of ten times a slot (tests/yarn/pipelines/spill_jobs.py) each give the
exact answer, each spills, its spill files are gone when it ends, and no executor's
resident memory passes its container's size (its slots plus
``taskmanager.memory.overhead``), read from the kernel's high-water mark of each
executor process the job ran."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq

import yarnflow.client as yf
from tests.conftest import FAST, NO_RESTART
from tests.executor_memory import ExecutorPeaks
from tests.yarn.pipelines import spill_jobs
from yarnflow.appmaster.jobmaster.executiongraph import JobStatus
from yarnflow.client.display import spill_warning
from yarnflow.client.targets.local import LocalCluster
from yarnflow.conf import Configuration
from yarnflow.core.jobgraph import JobGraph

SLOT_MB = 256
CONFIG = FAST + NO_RESTART + [f"taskmanager.default-slot.memory={SLOT_MB}m",
                              "pipeline.batch-rows=16384"]


def run_measured(graph: JobGraph, config: Configuration) -> tuple[Any, ExecutorPeaks]:
    """The job's result, and its executors' peaks read while each one lived."""
    with LocalCluster(config) as cluster:
        job = cluster.submit(graph)
        with ExecutorPeaks(cluster, config) as peaks:
            result = job.wait(900)
        left = list(cluster.workdir.rglob("spill-*/*"))
    assert not left, f"spill files outlived their tasks: {left[:5]}"
    return result, peaks


def check_memory(result, peaks: ExecutorPeaks, vertex: str) -> None:
    assert result.status is JobStatus.FINISHED, result.failure
    spilled = result.details.vertex_running(vertex).spilled()
    assert spilled[0] > 0, f"{vertex} did not spill"
    assert peaks.peaks, "no executor was seen"
    assert not peaks.over(), \
        f"executors past their container's size (peak MB, size MB): {peaks.over()}"
    print(f"{vertex}: spilled {spilled[0] / 2**20:.0f} MB in {spilled[1]} files; executor "
          f"peaks (MB, container MB): {sorted(peaks.peaks.values())}")


def test_a_join_whose_build_side_is_four_slots_spills_and_stays_in_its_container(tmp_path):
    config = Configuration.load(overrides=CONFIG)
    p = yf.Pipeline("spill-join", parallelism=2)
    spill_jobs.join_job(p, str(tmp_path / "out"))
    result, peaks = run_measured(p.job_graph(config), config)
    check_memory(result, peaks, "join")
    assert pq.read_table(tmp_path / "out").to_pylist() == [spill_jobs.join_answer()]
    # it wrote its build side twice (a bucket still too big is cut again): more than it
    # read, which the summary warns of, naming what to raise
    assert "taskmanager.default-slot.memory" in spill_warning(result.details.vertex_running("join"))


def test_an_aggregate_of_twenty_million_keys_spills_and_stays_in_its_container(tmp_path):
    config = Configuration.load(overrides=CONFIG)
    p = yf.Pipeline("spill-aggregate", parallelism=2)
    spill_jobs.aggregate_job(p, str(tmp_path / "out"), checked=True)
    result, peaks = run_measured(p.job_graph(config), config)
    check_memory(result, peaks, "aggregate")
    assert pq.read_table(tmp_path / "out").to_pylist() == [spill_jobs.AGGREGATE_ANSWER]


def test_a_sort_of_ten_slots_spills_and_stays_in_its_container(tmp_path):
    config = Configuration.load(overrides=CONFIG)
    p = yf.Pipeline("spill-sort", parallelism=2)
    spill_jobs.sort_job(p, str(tmp_path / "out"))
    result, peaks = run_measured(p.job_graph(config), config)
    check_memory(result, peaks, "sort")
    files = sorted(Path(tmp_path / "out").glob("*.parquet"))
    got = np.concatenate([pq.read_table(f, columns=["k"])["k"].to_numpy() for f in files])
    assert np.array_equal(got, spill_jobs.sorted_keys())
    first = pq.ParquetFile(files[0]).read_row_group(0)       # the payloads moved with their keys
    assert np.array_equal(spill_jobs.made_from(first["payload"].combine_chunks()),
                          first["k"].to_numpy().view(np.int64))
