"""``collect()``, ``to_arrow()`` and ``to_pandas()`` on the local target (issue 56): the
rows come back through the JobMaster, in the DataSet's order, in the same job as the
pipeline's other sinks; past ``pipeline.collect.max-result-size`` the job fails in one
line naming it, whether one subtask alone or all of them together pass it."""
from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import yarnflow.client as yf
from tests.conftest import FAST, NO_RESTART
from yarnflow.client.context import JobFailedError
from yarnflow.conf import Configuration

N = 20_000
# a skewed sort column: one value in half the rows
ROWS = pa.table({"k": pa.array([7 if i % 2 else (i * 7919) % 5_003 for i in range(N)], pa.int64()),
                 "v": pa.array([f"row-{i}" for i in range(N)])})
SORTED = ROWS.sort_by([("k", "descending"), ("v", "ascending")])


def config(*more: str) -> Configuration:
    return Configuration.load(overrides=FAST + NO_RESTART + ["pipeline.batch-rows=1000", *more])


def test_a_sorted_dataset_comes_back_in_order_with_the_other_sinks_run_in_the_same_job(tmp_path):
    p = yf.Pipeline("collect", parallelism=3)
    ordered = p.from_arrow(ROWS).rebalance().sort("k", "v", descending=[True, False])
    ordered.write_parquet(str(tmp_path / "out"))
    got = ordered.to_arrow(config=config())
    assert got.schema == SORTED.schema
    assert got.to_pylist() == SORTED.to_pylist()
    assert pq.read_table(tmp_path / "out").num_rows == N      # written by the same job
    # the collect sink left the pipeline with its run: a second collect runs the
    # pipeline again (as execute() would), its sink included, without the first one
    p2 = yf.Pipeline("again", parallelism=2)
    top = p2.from_arrow(ROWS).top(5, by=["k", "v"], descending=[True, False])
    top.write_parquet(str(tmp_path / "top"), mode="overwrite")
    for _ in range(2):
        frame = top.to_pandas(config=config())
        assert frame.to_dict("records") == SORTED.slice(0, 5).to_pylist()
    assert pq.read_table(tmp_path / "top").num_rows == 5


def test_rows_that_a_filter_drops_all_come_back_as_an_empty_table_of_their_columns():
    p = yf.Pipeline("nothing", parallelism=2)
    none = p.from_arrow(ROWS).filter(lambda b: pc.less(b["k"], -1), name="negative")
    got = none.to_arrow(config=config())
    assert got.num_rows == 0
    assert got.schema == ROWS.schema
    assert none.collect(config=config()) == []


def test_an_aggregate_without_keys_comes_back_as_dicts():
    p = yf.Pipeline("sum", parallelism=2)
    rows = p.from_arrow(ROWS).aggregate([], [("k", "sum"), ("k", "count")]).collect(config=config())
    assert rows == [{"k_sum": pc.sum(ROWS["k"]).as_py(), "k_count": N}]


@pytest.mark.parametrize("limit,where", [("16kb", "in one subtask alone"),
                                         ("300kb", "from its 4 subtasks")])
def test_a_result_over_its_limit_fails_the_job_in_one_line_naming_the_option(limit, where):
    """16 KB: a subtask's ~100 KB of rows pass it on their own; 300 KB: each subtask's
    stays under it, their sum does not."""
    p = yf.Pipeline("too-big", parallelism=4)
    with pytest.raises(JobFailedError) as failed:
        p.from_arrow(ROWS).rebalance().map(lambda b: b, name="copy").to_arrow(
            config=config(f"pipeline.collect.max-result-size={limit}"))
    cause = failed.value.result.failure
    assert "over pipeline.collect.max-result-size" in cause and where in cause, cause
    assert "Fix: write it with write_parquet" in cause
    assert "(not restarted" in cause or where.startswith("from"), cause


def test_a_limit_the_message_cannot_carry_is_refused_with_its_bounds():
    with pytest.raises(Exception) as refused:
        Configuration.load(overrides=["pipeline.collect.max-result-size=1gb"])
    assert "at most 192 mb" in str(refused.value)


def test_explain_runs_nothing_and_gives_the_planned_columns(capsys):
    p = yf.Pipeline("explained", parallelism=2)
    got = p.from_arrow(ROWS).sort("k").to_arrow(target="explain", config=config())
    assert got.num_rows == 0 and got.schema == ROWS.schema
    assert capsys.readouterr().out.startswith("plan of explained")
