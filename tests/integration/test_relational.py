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
