"""Union, distinct, limit and top-N on the local target (issue 56): one job with all
four over two sources, every output equal to pyarrow's answer for the same rows, the
top-N's rows in order in its one part file, and each local step run in its producer's
task (its figures under the producer's chain)."""
from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import yarnflow.client as yf
from tests.conftest import FAST, NO_RESTART
from yarnflow.appmaster.jobmaster.executiongraph import JobStatus
from yarnflow.client.display import key_ranges
from yarnflow.client.targets.local import LocalCluster
from yarnflow.conf import Configuration

N = 30_000
FACTS = pa.table({"k": pa.array([i % 101 if i % 17 else None for i in range(N)], pa.int64()),
                  "v": pa.array([float(i % 1_003) for i in range(N)])})
MORE = FACTS.slice(0, 5_000)
BOTH = pa.concat_tables([FACTS, MORE])
CONFIG = FAST + NO_RESTART + ["pipeline.batch-rows=2000"]


@pytest.fixture(scope="module")
def cluster():
    with LocalCluster(Configuration.load(overrides=CONFIG)) as local:
        yield local


def by_value(table: pa.Table) -> list[dict]:
    return sorted(table.to_pylist(), key=lambda r: [(v is None, v) for v in r.values()])


@pytest.mark.parametrize("parallelism", [2, 3])
def test_union_distinct_limit_and_top_give_pyarrows_answers(cluster, tmp_path, parallelism):
    out = {name: str(tmp_path / name) for name in ("distinct", "rows", "limit", "top")}
    p = yf.Pipeline("relational", parallelism=parallelism)
    both = p.from_arrow(FACTS, name="facts").union(p.from_arrow(MORE, name="more"))
    both.distinct("k").write_parquet(out["distinct"], name="distinct-sink")
    both.distinct().write_parquet(out["rows"], name="rows-sink")
    both.limit(1_234).write_parquet(out["limit"], name="limit-sink")
    both.top(50, by=["v", "k"], descending=[True, False]).write_parquet(out["top"], name="top-sink")
    result = cluster.submit(p.job_graph(Configuration.load(overrides=CONFIG))).wait(300)
    assert result.status is JobStatus.FINISHED, result.failure

    got = {name: pq.read_table(path) for name, path in out.items()}
    assert by_value(got["distinct"]) == by_value(BOTH.group_by(["k"]).aggregate([]))
    assert by_value(got["rows"]) == by_value(BOTH.group_by(["k", "v"]).aggregate([]))
    assert got["limit"].num_rows == 1_234
    every = {tuple(r.values()) for r in BOTH.to_pylist()}
    assert all(tuple(r.values()) in every for r in got["limit"].to_pylist())
    keys = [("v", "descending"), ("k", "ascending")]
    want = BOTH.sort_by(keys).slice(0, 50)
    files = sorted((tmp_path / "top").glob("*.parquet"))
    in_order = pa.concat_tables([pq.read_table(f) for f in files])
    assert in_order.to_pylist() == want.to_pylist(), "the top rows, in order, in name order"

    # the local steps ran in the union's task: what crossed each exchange is what
    # survived them, not the union's 35,000 rows
    details = result.details
    union = next(v for v in details.vertices if v.name.startswith("union"))
    for step in ("distinct-local", "limit-local", "top-local"):
        figures = union.operator_totals()
        local = next(op for op in figures if op.name == step)
        assert local.records_in == N + 5_000, (step, local)
        assert local.records_out < N + 5_000, (step, local)
    top = next(v for v in details.vertices if v.name.startswith("top ->"))
    assert len(top.subtasks) == 1
    assert details.operator_metrics("top").records_in == 50 * parallelism


DIMS = pa.table({"k": pa.array([i for i in range(0, 150, 3)] + [None], pa.int64()),
                 "name": pa.array([f"d{i}" for i in range(0, 150, 3)] + ["null-key"])})
KINDS = ["inner", "left", "right", "full", "left_semi", "left_anti"]


@pytest.mark.parametrize("adaptive", [False, True])
@pytest.mark.parametrize("strategy", ["auto", "hash"])
def test_every_join_type_and_a_cross_join_give_pyarrows_answers(cluster, tmp_path, strategy,
                                                               adaptive):
    config = Configuration.load(overrides=CONFIG + [
        f"execution.batch.adaptive.enabled={str(adaptive).lower()}"])
    p = yf.Pipeline("joins", parallelism=3)
    # one source of each side for all: joins that read them in opposite orders (a right
    # join builds facts, the others build dims) over bounded pipelined exchanges would
    # wait on each other, but for the probe exchanges the planner makes BLOCKING
    facts, dims = p.from_arrow(FACTS, name="facts"), p.from_arrow(DIMS, name="dims")
    for how in KINDS:
        facts.join(dims, on="k", how=how, strategy=strategy, name=f"join-{how}") \
             .write_parquet(str(tmp_path / how), name=f"sink-{how}")
    facts.limit(7).cross_join(dims.select("name").limit(4)) \
         .write_parquet(str(tmp_path / "cross"), name="sink-cross")
    graph = p.job_graph(config)
    result = cluster.submit(graph).wait(300)
    assert result.status is JobStatus.FINISHED, result.failure
    pyarrow_names = {"left": "left outer", "right": "right outer", "full": "full outer",
                     "left_semi": "left semi", "left_anti": "left anti"}
    for how in KINDS:
        want = FACTS.join(DIMS, keys="k", join_type=pyarrow_names.get(how, how),
                          right_suffix="_right", coalesce_keys=True)
        got = pq.read_table(tmp_path / how)
        assert by_value(got.select(want.column_names)) == by_value(want), how
    cross = pq.read_table(tmp_path / "cross")
    assert cross.num_rows == 28 and cross.column_names == ["k", "v", "name"]


def test_a_union_of_two_paths_from_one_source_reads_both_as_they_come(cluster, tmp_path):
    """The source feeds both inputs over bounded pipelined exchanges: a union that read
    its first input to the end before its second would wait forever for a source blocked
    on the second's full buffer."""
    config = Configuration.load(overrides=CONFIG + ["execution.batch.adaptive.enabled=false"])
    p = yf.Pipeline("diamond", parallelism=2)
    facts = p.from_arrow(FACTS, name="facts")
    low = facts.filter(lambda b: pa.compute.less(b["v"], 500.0), name="low")
    high = facts.filter(lambda b: pa.compute.greater_equal(b["v"], 500.0), name="high")
    low.union(high).write_parquet(str(tmp_path / "out"), name="sink")
    result = cluster.submit(p.job_graph(config)).wait(120)
    assert result.status is JobStatus.FINISHED, result.failure
    assert by_value(pq.read_table(tmp_path / "out")) == by_value(FACTS)


IDS = pa.table({"k": pa.array(range(N), pa.int64()), "v": pa.array(range(N), pa.int64())})


@pytest.mark.parametrize("strategy, keep, store", [
    ("auto", "none", "local"), ("auto", "most", "local"), ("hash", "none", "local"),
    ("hash", "most", "local"), ("auto", "most", "dfs")])
def test_a_self_join_run_stage_by_stage_ends_whatever_its_filtered_side_keeps(
        cluster, tmp_path, strategy, keep, store):
    """Stage by stage (LAZY_FROM_SOURCES), one source feeds a join twice: its build side
    through a filter, PIPELINED, and its probe side BLOCKING (so the source never waits
    on it while the join reads its build side). The source reports FINISHED only once
    the join has read the build side, more batches than a pipelined exchange holds, so
    the join must not wait for that report to read the probe side, nor for a first
    build batch that a filter keeping nothing never sends. With BLOCKING results on the
    cluster file system (dfs) that probe side stays on the executor: a stored result is
    read only once reported FINISHED."""
    pq.write_table(IDS, tmp_path / "ids.parquet", row_group_size=2_000)
    p = yf.Pipeline("self-join", parallelism=2, schedule_mode="LAZY_FROM_SOURCES")
    ids = p.read_parquet(str(tmp_path / "ids.parquet"), name="ids")
    kept = ids.filter(lambda b: pa.compute.greater(pa.compute.bit_wise_and(b["v"], 3), 0)
                      if keep == "most" else pa.compute.less(b["v"], 0), name="kept")
    ids.join(kept, on="k", strategy=strategy).write_parquet(str(tmp_path / "out"), name="sink")
    config = Configuration.load(overrides=CONFIG + [f"execution.batch.partition-store={store}"])
    if store == "local":
        result = cluster.submit(p.job_graph(config)).wait(120)
    else:                         # where results go is the ApplicationMaster's setting
        with LocalCluster(config) as own:
            result = own.submit(p.job_graph(config)).wait(120)
    assert result.status is JobStatus.FINISHED, result.failure
    got = pq.read_table(tmp_path / "out")
    want = [k for k in range(N) if k % 4] if keep == "most" else []
    assert sorted(got["k"].to_pylist() if got.num_rows else []) == want
    if got.num_rows:
        assert got["v"].equals(got["v_right"])


@pytest.mark.parametrize("adaptive", [False, True])
def test_a_sort_writes_its_rows_in_order_over_part_files_read_in_name_order(cluster, tmp_path,
                                                                            adaptive):
    """Keys with nulls, one value in half the rows (skewed), two directions; the sort's
    ranges balanced (no subtask read more than twice its share), the order global."""
    config = Configuration.load(overrides=CONFIG + [
        f"execution.batch.adaptive.enabled={str(adaptive).lower()}",
        "execution.batch.adaptive.auto-parallelism.avg-data-volume-per-task=64 kb"])
    skewed = FACTS.set_column(0, "k", pa.array([7 if i % 2 else k for i, k in
                                                enumerate(FACTS.column("k").to_pylist())],
                                               pa.int64()))
    p = yf.Pipeline("sorted", parallelism=3)
    p.from_arrow(skewed, name="facts").sort("k", "v", descending=[True, False]) \
        .write_parquet(str(tmp_path / "out"), name="sink")
    result = cluster.submit(p.job_graph(config)).wait(300)
    assert result.status is JobStatus.FINISHED, result.failure
    files = sorted((tmp_path / "out").glob("*.parquet"))
    got = pa.concat_tables([pq.read_table(f) for f in files])
    keys = [("k", "descending"), ("v", "ascending")]
    assert got.to_pylist() == skewed.sort_by(keys).to_pylist()
    sort = next(v for v in result.details.vertices if v.name.startswith("sort ->"))
    read = [s.metrics.records_in for s in sort.subtasks]
    assert len(read) > 1 and max(read) <= 2 * N / len(read), read
    # the details show each range's first and last key, the ranges in order, and the
    # summary lists them with their bytes
    ranges = sort.key_ranges()
    assert [s.index for s, _, _ in ranges] == list(range(len(read)))
    start = 0
    for s, first, last in ranges:
        rows = got.slice(start, s.metrics.records_in)
        assert (first, last) == (str((rows["k"][0].as_py(), rows["v"][0].as_py())),
                                 str((rows["k"][-1].as_py(), rows["v"][-1].as_py())))
        start += s.metrics.records_in
    assert key_ranges(sort).startswith(f"{sort.name} ranges: 1 [{ranges[0][1]} … ")
