"""Spark operators on the local target: real PySpark in real TaskExecutors."""
from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import yarnflow.client as yf
from tests.conftest import FAST, NO_RESTART, executor_logs
from yarnflow.appmaster.jobmaster.executiongraph import JobStatus
from yarnflow.conf import Configuration
from yarnflow.client.targets.local import LocalCluster

pytest.importorskip("pyspark", reason="Spark operators need pip install 'yarnflow[spark]'")

# Executors stay up between the two jobs, as warm executors do in a session.
WARM = FAST + ["resourcemanager.taskmanager-timeout=120 s", "slot.idle.timeout=1 s"]


def jvm_pid(spark, df):
    from pyspark.sql import functions
    pid = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()
    return df.withColumn("jvm_pid", functions.lit(int(pid)))


def test_spark_sql_gives_pyarrows_answer_and_later_tasks_reuse_the_executors_session(tmp_path):
    config = Configuration.load(overrides=WARM)
    table = pa.table({"k": pa.array([i % 7 for i in range(5000)], pa.int64()),
                      "v": pa.array(range(5000), pa.int64())})
    with LocalCluster(config) as cluster:
        pids = []
        for run in range(2):
            p = yf.Pipeline(f"spark-{run}", parallelism=1)
            p.from_arrow(table).spark_sql(
                "SELECT k, SUM(v) AS total, COUNT(*) AS n FROM input GROUP BY k") \
             .spark(jvm_pid).write_parquet(str(tmp_path / f"out{run}"))
            result = cluster.submit(p.job_graph(config)).wait(180)
            assert result.status is JobStatus.FINISHED, \
                result.failure + executor_logs(cluster.log_dir)
            got = pq.read_table(tmp_path / f"out{run}").sort_by("k")
            want = table.group_by("k").aggregate([("v", "sum"), ("v", "count")]).sort_by("k")
            assert got["total"].to_pylist() == want["v_sum"].to_pylist()
            assert got["n"].to_pylist() == want["v_count"].to_pylist()
            pids.append(set(got["jvm_pid"].to_pylist()))
        assert sum(cluster.overview().workers_started_per_spec.values()) == 1
        logs = "".join(f.read_text() for f in cluster.log_dir.glob("*.log"))
    assert len(pids[0]) == 1 and pids[0] == pids[1], \
        f"the second job ran in another Spark JVM: {pids}"
    assert logs.count("started a SparkSession") == 1


def test_a_spark_error_fails_the_job_with_sparks_message_and_the_vertex_name(tmp_path):
    config = Configuration.load(overrides=FAST + NO_RESTART)
    p = yf.Pipeline("bad-sql", parallelism=1)
    p.from_arrow(pa.table({"k": [1, 2, 3]})) \
     .spark_sql("SELECT no_such_column FROM input", name="enrich") \
     .write_parquet(str(tmp_path / "out"))
    with LocalCluster(config) as cluster:
        result = cluster.submit(p.job_graph(config)).wait(180)
    assert result.status is JobStatus.FAILED
    assert "enrich" in result.failure and "no_such_column" in result.failure
    assert "UNRESOLVED_COLUMN" in result.failure
    assert "\tat org.apache" not in result.failure and "py4j" not in result.failure.lower()
