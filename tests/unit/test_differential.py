"""The differential run's own checks (``tests/differential.py``): a wrong output is
found, and its SQL says what the pipeline computes, on trees fixed by hand."""
from __future__ import annotations

import duckdb
import pyarrow as pa

from tests.differential import (Aggregate, Ending, Filter, Join, Job, Source, Union, check,
                                expected, rows)

DATA = {
    "t0": pa.table({"k": pa.array([1, 2, None, 2], pa.int64()), "g": ["a", None, "b", "b"],
                    "v": pa.array([10, None, 5, -3], pa.int64())}),
    "t1": pa.table({"k": pa.array([2, 3, None], pa.int64()), "g": ["c", "d", "e"],
                    "v": pa.array([7, 8, 9], pa.int64())}),
    "t2": pa.table({"k": pa.array([], pa.int64()), "g": pa.array([], pa.string()),
                    "v": pa.array([], pa.int64())}),
}


def job(tree, ending=Ending()) -> Job:
    return Job(0, 0, tree, ending, DATA, {}, 1, "EAGER")


def test_the_sql_of_a_full_join_coalesces_its_key_and_suffixes_the_right_columns():
    tree = Join(Source("t0"), Source("t1"), "k", "full", "auto")
    want, _ = expected(job(tree), duckdb)
    assert [n for n, _ in tree.columns] == ["k", "g", "v", "g_right", "v_right"]
    assert sorted(want, key=repr) == sorted([
        (1, "a", 10, None, None), (2, None, None, "c", 7), (2, "b", -3, "c", 7),
        (None, "b", 5, None, None), (3, None, None, "d", 8), (None, None, None, "e", 9)],
        key=repr)


def test_the_sql_of_an_aggregate_of_a_union_with_a_filter_of_itself():
    t0 = Source("t0")
    tree = Aggregate(Union(t0, Filter(t0, "v", "gt", 0)), ["g"], [("v", "sum"), ("k", "count")])
    want, _ = expected(job(tree), duckdb)
    assert sorted(want, key=repr) == sorted([("a", 20, 2), (None, None, 1), ("b", 7, 1)], key=repr)


def test_a_missing_an_extra_or_a_misplaced_row_is_wrong():
    tree = Source("t1")
    right = rows(DATA["t1"])
    assert check(job(tree), DATA["t1"], right, right) == ""
    assert "missing" in check(job(tree), DATA["t1"].slice(0, 2), right, right)
    doubled = pa.concat_tables([DATA["t1"], DATA["t1"].slice(0, 1)])
    assert "extra" in check(job(tree), doubled, right, right)
    by_k = Ending("sort", ["k"], [False])
    assert check(job(tree, by_k), DATA["t1"], right, right) == ""       # nulls last
    assert "out of order" in check(job(tree, by_k), DATA["t1"].take([1, 0, 2]), right, right)
    limited = Ending("limit", n=2)
    assert check(job(tree, limited), DATA["t1"].slice(1), right, right) == ""
    assert "not in the input" in check(job(tree, limited), DATA["t0"].slice(0, 2), right, right)
