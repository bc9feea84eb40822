"""TPC-H's 22 queries (issue 56) at scale factor 0.1 on one local cluster, at
parallelism 2 and 4: each answer equals DuckDB's for the same tables (the rows, and
numeric columns within 1e-9 relative), and a query with ORDER BY gives its rows in
that order when its part files are read in name order."""
from __future__ import annotations

import decimal
import math
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.conftest import FAST, NO_RESTART
from yarnflow.appmaster.jobmaster.executiongraph import JobStatus
from yarnflow.client.targets.local import LocalCluster
from yarnflow.conf import Configuration

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
from tpch import QUERIES
from tpch.data import TABLES, generate
from tpch.run import pipeline, query

duckdb = pytest.importorskip("duckdb")
CONFIG = FAST + NO_RESTART
SCALE = 0.1


@pytest.fixture(scope="module")
def data() -> Path:
    return generate(SCALE)


@pytest.fixture(scope="module")
def cluster():
    with LocalCluster(Configuration.load(overrides=CONFIG)) as local:
        yield local


@pytest.fixture(scope="module")
def duck(data):
    con = duckdb.connect()
    for name in TABLES:
        con.execute(f"create view {name} as select * from read_parquet('{data}/{name}/*.parquet')")
    yield con
    con.close()


def plain(value):
    if isinstance(value, decimal.Decimal):
        return float(value)
    return value


def rows(table: pa.Table) -> list[tuple]:
    return [tuple(plain(v) for v in row.values()) for row in table.to_pylist()]


def same(got: tuple, want: tuple) -> bool:
    for a, b in zip(got, want):
        if isinstance(a, float) or isinstance(b, float):
            if a is None or b is None:
                if a is not b:
                    return False
            elif not math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9):
                return False
        elif a != b:
            return False
    return len(got) == len(want)


def in_any_order(values: list[tuple]) -> list[tuple]:
    """Rows sorted by their exact columns first: floats that differ in the last bits
    sort the same."""
    def key(row):
        return ([(v is None, v) for v in row if not isinstance(v, float)],
                [(v is None, round(v, 6) if v is not None else 0) for v in row
                 if isinstance(v, float)])
    return sorted(values, key=key)


@pytest.mark.parametrize("parallelism", [2, 4])
@pytest.mark.parametrize("number", QUERIES)
def test_the_answer_is_duckdbs(cluster, data, duck, tmp_path, number, parallelism):
    module = query(number)
    out = tmp_path / "answer"
    graph = pipeline(number, str(data), str(out), parallelism).job_graph(Configuration.load(
        overrides=CONFIG))
    result = cluster.submit(graph).wait(300)
    assert result.status is JobStatus.FINISHED, result.failure
    want = duck.sql(module.SQL).to_arrow_table()
    files = sorted(out.glob("*.parquet"))
    got = pa.concat_tables([pq.read_table(f) for f in files]) if files else None
    assert got is not None or want.num_rows == 0, "no answer written"
    got_rows = rows(got) if got is not None else []
    assert (got.column_names if got is not None else want.column_names) == want.column_names
    want_rows = rows(want)
    assert len(got_rows) == len(want_rows), (len(got_rows), len(want_rows))
    if module.ORDER:                # in the query's order, read in the files' name order
        keys = [want.column_names.index(c) for c in module.ORDER]
        assert all(same([g[k] for k in keys], [w[k] for k in keys])
                   for g, w in zip(got_rows, want_rows)), f"q{number:02d} out of order"
    for g, w in zip(in_any_order(got_rows), in_any_order(want_rows)):
        assert same(g, w), (g, w)
