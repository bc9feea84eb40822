"""TPC-H's 22 queries (issue 56) at scale factor 0.1 on one local cluster, at
parallelism 2 and 4: each answer equals DuckDB's for the same tables (the rows, and
numeric columns within 1e-9 relative), and a query with ORDER BY gives its rows in
that order when its part files are read in name order."""
from __future__ import annotations

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
from tpch.check import difference, in_any_order, rows, same  # noqa: F401 - test_tpch_on_yarn's too
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
    assert difference(got, want, module.ORDER) == "", f"q{number:02d}"
