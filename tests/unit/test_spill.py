"""Operators past their memory (issue 57): each spilling operator, given a budget far
smaller than its data, spills and gives the answer it gives in memory; its files are
gone once it ends; the sorted-run merge and the spill buckets on their own."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from yarnflow.core.memory import UNLIMITED, OperatorMemory
from yarnflow.core.operators.aggregate import AggregateOperator
from yarnflow.core.operators.join import HashJoinOperator
from yarnflow.core.operators.sort import SortOperator
from yarnflow.core.operators.spill import SPILL_FILES_PER_LEVEL, Buckets, SpilledRun, merge_sorted
from yarnflow.core.operators.phase import Phase
from tests.unit.fakes import TestingOperatorContext


def data(rows: int, keys: int, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    k = rng.integers(0, keys, rows)
    return pa.table({"k": pa.array(k, pa.int64()),
                     "s": pa.array([None if x % 13 == 0 else f"s{x % 97}" for x in k]),
                     "v": pa.array(rng.random(rows))})


def run(operator, *tables, limit=UNLIMITED, directory=None, chunk=700):
    ctx = TestingOperatorContext(*[t.to_batches(max_chunksize=chunk) for t in tables],
                                 batch_rows=500, memory=OperatorMemory.fixed(limit, directory))
    operator.run(ctx)
    out = pa.Table.from_batches(ctx.out) if ctx.out else None
    return out, ctx.budget


def ordered(table: pa.Table) -> list[tuple]:
    """Rows in one order, floats to 9 places (a sum's order of addition differs)."""
    return sorted((tuple(round(v, 9) if isinstance(v, float) else v for v in r.values())
                   for r in table.to_pylist()),
                  key=lambda r: [(v is None, str(v)) for v in r])


@pytest.mark.parametrize("how", ["inner", "left", "right", "full", "left_semi", "left_anti"])
def test_a_join_whose_build_side_outgrows_its_memory_spills_and_answers_the_same(how, tmp_path):
    left, right = data(6000, 3000, seed=1), data(5000, 2500, seed=2)
    build = 0 if how == "right" else 1
    operator = HashJoinOperator(["k"], ["k"], how, build_input=build)
    operator.schema([left.schema, right.schema])
    expected, _ = run(operator, left, right)
    spilled, memory = run(operator, left, right, limit=20_000, directory=tmp_path / "s")
    assert memory.spilled_bytes > 0 and memory.spill_files > SPILL_FILES_PER_LEVEL   # cut at least twice
    assert ordered(spilled) == ordered(expected)
    assert not list((tmp_path / "s").glob("*.arrow"))


@pytest.mark.parametrize("functions", [[("v", "sum"), ("v", "max"), ("k", "count")],
                                       [("v", "count_distinct")]])
def test_an_aggregate_whose_groups_outgrow_its_memory_spills_and_answers_the_same(
        functions, tmp_path):
    rows = data(20000, 8000, seed=3)
    operator = AggregateOperator(["k", "s"], functions)
    operator.schema([rows.schema])
    expected, _ = run(operator, rows)
    spilled, memory = run(operator, rows, limit=30_000, directory=tmp_path / "s")
    assert memory.spilled_bytes > 0
    assert ordered(spilled) == ordered(expected)
    assert not list((tmp_path / "s").glob("*.arrow"))


def test_a_local_step_emits_its_groups_early_instead_of_growing(tmp_path):
    rows = data(20000, 8000, seed=4)
    local = AggregateOperator(["k"], [("v", "sum")], Phase.LOCAL)
    local.schema([rows.schema])
    partial, memory = run(local, rows, limit=30_000, directory=tmp_path / "s")
    assert memory.spilled_bytes == 0                   # partial results need no disk
    final = AggregateOperator(["k"], [("v", "sum")], Phase.FINAL)
    final.schema([partial.schema])
    merged, _ = run(final, partial)
    expected = rows.group_by("k").aggregate([("v", "sum")])
    assert merged.num_rows == expected.num_rows
    assert ordered(merged.select(["k"])) == ordered(expected.select(["k"]))
    assert np.isclose(sum(merged.column("v_sum").to_pylist()),
                      sum(expected.column("v_sum").to_pylist()))


@pytest.mark.parametrize("descending", [False, True])
def test_a_sort_of_ten_times_its_memory_merges_its_runs_into_the_same_order(descending, tmp_path):
    rows = data(30000, 100_000, seed=5)
    keys = [("s", "descending" if descending else "ascending"), ("k", "ascending")]
    spilled, memory = run(SortOperator(keys), rows, limit=rows.nbytes // 10,
                          directory=tmp_path / "s")
    assert memory.spill_files >= 8          # and the last run, still in memory
    assert spilled.select(["s", "k"]).equals(rows.sort_by(keys).select(["s", "k"]))
    assert not list((tmp_path / "s").glob("*.arrow"))


def test_a_sort_of_more_runs_than_it_merges_at_once_merges_in_passes(tmp_path, monkeypatch):
    from yarnflow.core.operators import sort
    monkeypatch.setattr(sort, "FAN_IN", 3)
    rows = data(5000, 100_000, seed=6)
    spilled, memory = run(SortOperator([("v", "ascending")]), rows, limit=rows.nbytes // 40,
                          directory=tmp_path / "s", chunk=200)
    assert memory.spill_files > 25                # the runs, and the passes' merged runs
    assert spilled.column("v").to_pylist() == sorted(rows.column("v").to_pylist())


def test_the_merge_holds_equal_keys_together_and_ends_with_every_row(tmp_path):
    memory = OperatorMemory.fixed(UNLIMITED, tmp_path)
    keys = [("k", "ascending")]
    runs = []
    for seed in range(4):
        part = pa.table({"k": pa.array(np.random.default_rng(seed).integers(0, 5, 400))}).sort_by(keys)
        run_ = SpilledRun(memory, "run", part.schema)
        run_.write(part, rows_per_batch=37)
        runs.append(run_)
    pieces = list(merge_sorted([r.read() for r in runs], keys))
    merged = pa.concat_tables(pieces).column("k").to_pylist()
    assert merged == sorted(merged) and len(merged) == 1600 and len(pieces) > 4


def test_a_keys_rows_go_to_one_bucket_and_each_level_cuts_differently(tmp_path):
    memory = OperatorMemory.fixed(UNLIMITED, tmp_path)
    rows = data(40000, 20000)
    first = Buckets(memory, "b", ["k"], 0, 1000)
    first.write(rows)
    first.close()
    seen = {}
    for index in range(SPILL_FILES_PER_LEVEL):
        for key in pa.Table.from_batches(list(first.bucket(index)), rows.schema).column("k").to_pylist():
            assert seen.setdefault(key, index) == index
    second = Buckets(memory, "b", ["k"], 1, 1000)
    second.write(pa.Table.from_batches(list(first.bucket(0)), rows.schema))
    second.close()
    assert sum(1 for i in range(SPILL_FILES_PER_LEVEL) if second.size(i)) > SPILL_FILES_PER_LEVEL // 2


def test_a_slots_operators_share_its_managed_memory_and_take_it_back_as_they_end(tmp_path):
    from yarnflow.taskexecutor.memory_manager import MemoryManager
    manager = MemoryManager(256, 0.5)
    seen = []
    first = manager.register("slot-a", tmp_path / "a", lambda b, f: seen.append((b, f)))
    assert first.limit == 128 * 2**20
    second = manager.register("slot-a", tmp_path / "b", lambda b, f: None)
    other = manager.register("slot-b", tmp_path / "c", lambda b, f: None)
    assert first.limit == second.limit == 64 * 2**20 and other.limit == 128 * 2**20
    second.release()
    second.release()                                   # once only
    assert first.limit == 128 * 2**20 and manager.holders("slot-a") == 1
    run_ = SpilledRun(first, "r", pa.schema([("x", pa.int64())]))
    run_.write(pa.table({"x": [1, 2, 3]}), 1000)
    run_.close()
    assert seen == [(run_.nbytes, 1)] and run_.path.parent == tmp_path / "a"


def test_the_summary_shows_spilled_bytes_and_warns_of_a_vertex_that_spilled_more_than_it_read():
    from rich.console import Console
    from yarnflow.client.display import print_summary
    from yarnflow.core.details import JobDetails, SubtaskDetails, VertexDetails
    from yarnflow.core.messages import TaskMetrics
    from yarnflow.core.status import ExecutionState, JobStatus

    def vertex(name, read, spilled):
        return VertexDetails(name, name, 1, [SubtaskDetails(0, ExecutionState.FINISHED, metrics=TaskMetrics(
            10, 10, read, read, spilled_bytes=spilled, spill_files=2 if spilled else 0))])
    shown = Console(width=250, record=True)
    print_summary(JobDetails("j", "job", JobStatus.FINISHED, 0.0, 1.0, [
        vertex("join", 100 * 2**20, 300 * 2**20), vertex("sort", 100 * 2**20, 50 * 2**20),
        vertex("map", 100 * 2**20, 0)]), shown)
    text = shown.export_text()
    assert "MB spilled" in text and "300.0 (2 files)" in text and "50.0 (2 files)" in text
    warnings = [line for line in text.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and warnings[0].startswith("warning: join spilled 300.0 MB")
    assert "taskmanager.memory.managed.fraction" in warnings[0]
    quiet = Console(width=250, record=True)
    print_summary(JobDetails("j", "job", JobStatus.FINISHED, 0.0, 1.0, [vertex("map", 1, 0)]), quiet)
    assert "spilled" not in quiet.export_text()


def test_batches_told_apart_by_metadata_or_nullability_spill_into_one_file(tmp_path):
    """A join's output mixes them (TPC-H Q18 failed on it): one stream, one schema."""
    memory = OperatorMemory.fixed(UNLIMITED, tmp_path)
    tagged = pa.table({"x": [1, 2]}).replace_schema_metadata({"origin": "parquet"})
    plain = pa.table({"x": pa.array([3, None])})
    run_ = SpilledRun(memory, "r", tagged.schema)
    run_.write(tagged, 1000)
    run_.write(plain, 1000)
    assert pa.Table.from_batches(list(run_.read())).column("x").to_pylist() == [1, 2, 3, None]


def _runs_of(memory, table: pa.Table, keys, parts: int, seed: int) -> list:
    """``table`` dealt into ``parts`` sorted runs of unequal lengths, written in small
    batches."""
    rng = np.random.default_rng(seed)
    cuts = np.sort(rng.choice(np.arange(1, table.num_rows), parts - 1, replace=False))
    runs = []
    for start, end in zip([0, *cuts], [*cuts, table.num_rows]):
        part = table.slice(int(start), int(end - start)).sort_by(keys)
        run_ = SpilledRun(memory, "run", part.schema)
        run_.write(part, rows_per_batch=int(rng.integers(5, 60)))
        runs.append(run_)
    return runs


@pytest.mark.parametrize("keys", [
    [("a", "ascending"), ("b", "descending")],
    [("b", "ascending")],
    [("b", "descending")],
    [("s", "descending"), ("a", "ascending")],
])
def test_the_merge_of_runs_with_nulls_and_nans_is_one_sort_of_all_rows(tmp_path, keys):
    rng = np.random.default_rng(11)
    n = 3000
    b = rng.integers(0, 40, n).astype(float)
    b[rng.random(n) < 0.05] = np.nan
    table = pa.table({
        "a": pa.array(rng.integers(0, 8, n), mask=rng.random(n) < 0.05),
        "b": pa.array(b, mask=rng.random(n) < 0.05),
        "s": pa.array([f"s{v:02d}" for v in rng.integers(0, 30, n)], mask=rng.random(n) < 0.05),
        "payload": pa.array(np.arange(n))})
    memory = OperatorMemory.fixed(UNLIMITED, tmp_path)
    merged = pa.concat_tables(list(merge_sorted([r.read() for r in _runs_of(memory, table, keys, 7, 3)],
                                                keys)))
    want = table.sort_by(keys)
    columns = [column for column, _ in keys]
    assert merged.num_rows == n
    # (as text: a NaN equals no NaN)
    assert [repr(r) for r in merged.select(columns).to_pylist()] == \
        [repr(r) for r in want.select(columns).to_pylist()]
    # every payload stays with its keys: the same rows, whatever order equal keys take
    assert sorted(map(repr, merged.to_pylist())) == sorted(map(repr, table.to_pylist()))


@pytest.mark.parametrize("values", [
    pa.array(np.arange(600, dtype="int64") * 7 % 251, pa.timestamp("ns")),
    pa.array([f"k{v:03d}" for v in np.arange(600) * 7 % 251]),
    pa.array([f"k{v:03d}".encode() for v in np.arange(600) * 7 % 251]),
], ids=["ns-times", "strings", "bytes"])
@pytest.mark.parametrize("order", ["ascending", "descending"])
def test_the_merge_of_one_key_of_any_comparable_type_is_in_order(tmp_path, values, order):
    keys = [("k", order)]
    table = pa.table({"k": values, "payload": pa.array(np.arange(len(values)))})
    memory = OperatorMemory.fixed(UNLIMITED, tmp_path)
    merged = pa.concat_tables(list(merge_sorted([r.read() for r in _runs_of(memory, table, keys, 5, 4)],
                                                keys)))
    assert merged.column("k").equals(table.sort_by(keys).column("k"))
    assert sorted(merged.column("payload").to_pylist()) == list(range(len(values)))
