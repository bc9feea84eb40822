"""TPC-H Q3, Q9 and Q18 (issue 56) as one per-job YARN application on the dockerised
cluster, their tables on HDFS: each answer equals DuckDB's for the same tables, in
ORDER BY's order over its part files. The tables are tpchgen-cli's at scale factor
0.1, made on this machine and put on HDFS from the edge host (through the checkout,
which the edge host mounts); DuckDB answers here."""
from __future__ import annotations

import shutil
import uuid

import pyarrow as pa
import pyarrow.parquet as pq

from tests.conftest import artifacts_dir
from tests.docker.conftest import DockerCluster
from tests.integration.test_tpch import (SCALE, TABLES, duckdb, generate, in_any_order, query, rows,
                                        same)

QUERIES = (3, 9, 18)
# On the edge host: each answer's part files, read in name order, into one local file
FETCH = """
import sys, pyarrow as pa, pyarrow.parquet as pq
from yarnflow.client import files
out, local = sys.argv[1], sys.argv[2]
for name in sys.argv[3:]:
    fs, uri = files.resolve(f"{out}/{name}")
    parts = [pq.read_table(fs.open_input(f)) for f, _ in fs.list_files(uri, ".parquet")]
    pq.write_table(pa.concat_tables(parts), f"{local}/{name}.parquet")
"""


def test_q3_q9_q18_per_job_with_tables_on_hdfs_give_duckdbs_answers(warm_hosts: DockerCluster):
    cluster = warm_hosts
    tables = generate(SCALE)
    staged = artifacts_dir() / f"tpch-{uuid.uuid4().hex[:8]}"
    shutil.copytree(tables, staged / "data")
    base = f"hdfs://rm:9000/tmp/yarnflow-tests/tpch-{uuid.uuid4().hex[:8]}"
    try:
        put = cluster.edge("yarnflow", "fs", "put", str(staged / "data"), f"{base}/data",
                           timeout=600)
        assert put.returncode == 0, put.stdout[-2000:] + put.stderr[-2000:]
        run = cluster.edge("yarnflow", "run", "-t", "yarn-per-job", "--attach", "--no-progress",
                           "-D", "slot.request.timeout=600 s", "examples/tpch/run.py", "--",
                           "--data", f"{base}/data", "--out", f"{base}/out", "--one-job",
                           "--parallelism", "2", "--queries", ",".join(map(str, QUERIES)),
                           timeout=1800)
        assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
        names = [f"q{n:02d}" for n in QUERIES]
        fetched = cluster.edge("python", "-c", FETCH, f"{base}/out", str(staged), *names,
                               timeout=300)
        assert fetched.returncode == 0, fetched.stdout[-2000:] + fetched.stderr[-2000:]
        con = duckdb.connect()
        for name in TABLES:
            con.execute(f"create view {name} as select * from "
                        f"read_parquet('{tables}/{name}/*.parquet')")
        for number, name in zip(QUERIES, names):
            module = query(number)
            want = con.sql(module.SQL).to_arrow_table()
            got: pa.Table = pq.read_table(staged / f"{name}.parquet")
            assert got.column_names == want.column_names, name
            got_rows, want_rows = rows(got), rows(want)
            assert len(got_rows) == len(want_rows) > 0, (name, len(got_rows), len(want_rows))
            keys = [want.column_names.index(c) for c in module.ORDER]
            assert all(same([g[k] for k in keys], [w[k] for k in keys])
                       for g, w in zip(got_rows, want_rows)), f"{name} out of order"
            assert all(same(g, w) for g, w in zip(in_any_order(got_rows), in_any_order(want_rows))), name
    finally:
        shutil.rmtree(staged, ignore_errors=True)
        cluster.edge("yarnflow", "fs", "rm", base, timeout=300)
