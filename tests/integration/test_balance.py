"""Balance by construction on the local target (issue 15): rows per subtask, read from
the job's details."""
from __future__ import annotations

import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

import yarnflow.client as yf
from yarnflow.appmaster.jobmaster.executiongraph import JobStatus
from yarnflow.conf import options
from yarnflow.core.details import JobDetails
from yarnflow.client.targets.local import LocalCluster
from yarnflow.taskexecutor.network.partitioner import MIN_SLICE_ROWS

BATCH_ROWS = 5000   # two batches per source subtask: too few to deal whole


def records_in(details: JobDetails, operator: str) -> list[int]:
    """What each subtask of the vertex ``operator`` heads (alone or chained) read."""
    return [s.metrics.records_in for s in details.vertex_running(operator).subtasks]


def test_rebalance_gives_every_subtask_its_share_of_the_rows(fast_config, tmp_path):
    """20,000 rows read by two source subtasks in 5,000-row batches (whole batches
    round-robin gave 5000/10000/5000/0): each of the four receivers gets 5,000, within
    one slice (finer than the issue's "± one batch")."""
    config = fast_config.copy().set(options.BATCH_ROWS, BATCH_ROWS)
    table = pa.table({"x": pa.array(range(20_000), pa.int64())})
    p = yf.Pipeline("rebalance", parallelism=4)
    p.from_arrow(table).set_parallelism(2).rebalance().map(lambda b: b, name="spread") \
     .write_parquet(str(tmp_path / "out"))
    with LocalCluster(config) as cluster:
        result = cluster.submit(p.job_graph(config)).wait(120)
    assert result.status is JobStatus.FINISHED, result.failure
    got = records_in(result.details, "spread")
    assert sum(got) == 20_000 and all(abs(n - 5000) <= MIN_SLICE_ROWS for n in got), got
    assert sorted(pq.read_table(tmp_path / "out")["x"].to_pylist()) == list(range(20_000))


ROWS = 80_000


def late_python(tmp_path: Path) -> str:
    """An interpreter for the executors (``local.python``) that makes the first executor
    started begin its source subtask two seconds late (a ``sitecustomize`` on its path
    delays ``Task.start``): that subtask asks for splits long after the others did."""
    late = tmp_path / "late"
    late.mkdir()
    (late / "sitecustomize.py").write_text(
        "import threading\n"
        "from yarnflow.taskexecutor import task\n"
        "_start = task.Task.start\n"
        "task.Task.start = lambda self: threading.Timer(\n"
        "    2.0 if self.name.startswith('instruments') else 0, _start, (self,)).start()\n")
    marker, script = tmp_path / "late-once", tmp_path / "python-late"
    script.write_text(f"#!/bin/sh\nif mkdir {marker} 2>/dev/null; then\n"
                      f"  export PYTHONPATH={late}${{PYTHONPATH:+:$PYTHONPATH}}\nfi\n"
                      f'exec {sys.executable} "$@"\n')
    script.chmod(0o755)
    return str(script)


def instruments() -> pa.Table:
    """Every row the same width as text (two-digit codes, six-digit values): a CSV
    input is shared out in bytes, so equal bytes are then equal rows."""
    return pa.table({"code": pa.array([10 + i % 50 for i in range(ROWS)], pa.int64()),
                     "v": pa.array(range(100_000, 100_000 + ROWS), pa.int64())})


CODES = pa.table({"code": pa.array(range(10, 60), pa.int64()),
                  "name": pa.array([f"currency-{i}" for i in range(10, 60)])})


def source_of(kind: str, p: yf.Pipeline, tmp_path: Path) -> yf.DataSet:
    if kind == "in-memory":
        return p.from_arrow(instruments(), name="instruments")
    (tmp_path / kind).mkdir()
    if kind == "csv-directory":       # three files: half, three tenths and a fifth
        for i, (lo, hi) in enumerate([(0, ROWS // 2), (ROWS // 2, ROWS * 8 // 10),
                                      (ROWS * 8 // 10, ROWS)]):
            pacsv.write_csv(instruments().slice(lo, hi - lo), tmp_path / kind / f"{i}.csv")
        return p.read_csv(str(tmp_path / kind), name="instruments")
    row_group = ROWS if kind == "one-row-group" else ROWS // 40
    pq.write_table(instruments(), tmp_path / kind / "part-0.parquet", row_group_size=row_group)
    return p.read_parquet(str(tmp_path / kind), name="instruments")


@pytest.mark.parametrize("kind", ["in-memory", "one-row-group", "many-row-groups",
                                  "csv-directory"])
def test_the_forward_side_of_a_broadcast_join_is_balanced_when_an_executor_starts_late(
        fast_config, tmp_path, kind):
    """Seed 003's promise, whatever order the executors start in (issue 15): every
    subtask of the FORWARD side reads its share, max/mean at most 1.1."""
    config = fast_config.copy().set(options.BATCH_ROWS, 1000) \
        .set(options.LOCAL_PYTHON, late_python(tmp_path))
    p = yf.Pipeline("balanced-join", parallelism=4)
    codes = p.from_arrow(CODES, name="codes").set_parallelism(1)
    source_of(kind, p, tmp_path).join(codes, on="code", name="join") \
        .write_parquet(str(tmp_path / "out"))
    graph = p.job_graph(config)
    plan = next(iter(graph.join_plans.values()))
    assert plan.strategy.value == "broadcast" and plan.broadcast_input == 1
    with LocalCluster(config) as cluster:
        result = cluster.submit(graph).wait(180)
    assert result.status is JobStatus.FINISHED, result.failure
    rows = [s.metrics.records_out for s in result.details.vertex_running("instruments").subtasks]
    assert sum(rows) == ROWS and max(rows) / (ROWS / 4) <= 1.1, rows
    join = result.details.vertex_running("join")
    assert [(i.producer, i.ship) for i in join.inputs] == \
        [("instruments", "forward"), ("codes", "broadcast")]
    per_input = [s.metrics.records_in_per_input for s in join.subtasks]
    assert [probe for probe, _ in per_input] == rows, "the probe side, as the source sent it"
    assert [build for _, build in per_input] == [50] * 4, "the broadcast side whole, everywhere"
    got = pq.read_table(tmp_path / "out").sort_by("v")
    want = instruments().join(CODES, "code").sort_by("v")
    assert got.select(want.column_names).equals(want)


def test_job_details_give_each_subtask_its_slot_profile_and_worker_spec(fast_config, tmp_path):
    """A source of parallelism 2 (1 core, 1 GB) shares slots with a map of parallelism
    1 (2 cores, 2 GB): the source's first subtask and the map run in a 3c/3g slot of a
    one-slot executor of that size, the source's second subtask in a 1c/1g one."""
    p = yf.Pipeline("profiles", parallelism=2)
    src = p.from_arrow(pa.table({"x": list(range(1000))}), name="src").resources(
        yf.ResourceSpec(1, "1g"))
    src.rebalance().map(lambda b: b, name="heavy").set_parallelism(1) \
       .resources(yf.ResourceSpec(2, "2g")).write_parquet(str(tmp_path / "out")).set_parallelism(1)
    with LocalCluster(fast_config) as cluster:
        result = cluster.submit(p.job_graph(fast_config)).wait(120)
    assert result.status is JobStatus.FINISHED, result.failure
    placed = {(v.name, s.index): (s.slot_profile.label(), s.worker_spec)
              for v in result.details.vertices for s in v.subtasks}
    assert placed == {("src", 0): ("3c-3072m", "1x3c-3072m"),
                      ("heavy -> parquet-sink", 0): ("3c-3072m", "1x3c-3072m"),
                      ("src", 1): ("1c-1024m", "1x1c-1024m")}, placed


def test_executors_pack_only_the_slots_each_profile_uses_at_once(fast_config, tmp_path):
    """Issue 32, item 6, on the local target: with taskmanager.numberOfTaskSlots 4, a
    profile used 4-wide runs on one 4-slot executor, one used 2-wide on one 2-slot
    executor (not 4 slots of which 2 are never used)."""
    config = fast_config.copy().set(options.NUM_TASK_SLOTS, 4)
    p = yf.Pipeline("four-and-two", parallelism=4)
    wide = p.from_arrow(pa.table({"x": list(range(1000))}), name="wide") \
        .resources(yf.ResourceSpec(1, "512m")).slot_sharing_group("wide")
    wide.rebalance().map(lambda b: b, name="narrow").set_parallelism(2) \
        .resources(yf.ResourceSpec(1, "768m")).slot_sharing_group("narrow") \
        .write_parquet(str(tmp_path / "out")).set_parallelism(2).slot_sharing_group("narrow")
    result = p.execute("local", config).wait(0)
    assert result.status is JobStatus.FINISHED, result.failure
    executors = {(s.worker_spec, s.resource_id) for v in result.details.vertices
                 for s in v.subtasks}
    assert sorted(spec for spec, _ in executors) == ["2x1c-768m", "4x1c-512m"], executors
    assert pq.read_table(tmp_path / "out").num_rows == 1000
