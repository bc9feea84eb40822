"""Slot table fencing and state machine; pipelined backpressure; Spark JVM starts."""
from __future__ import annotations

import threading

import pyarrow as pa
import pytest

from tests.conftest import wait_until
from yarnflow.core.resources import ResourceSpec
from yarnflow.taskexecutor.network.partition import PipelinedSubpartition
from yarnflow.taskexecutor.slot import SlotStateError, TaskSlotState, TaskSlotTable


def test_a_task_from_another_job_master_is_refused_by_the_slot_table():
    table = TaskSlotTable(2, ResourceSpec(1, 512))
    table.allocate(0, "job", "alloc-1", "jm-leader", "jm:1")
    with pytest.raises(SlotStateError, match="another JobMaster"):
        table.add_task("alloc-1", "jm-stale", "attempt", object())
    table.add_task("alloc-1", "jm-leader", "attempt", object())
    assert table.slots[0].state is TaskSlotState.ACTIVE


def test_a_busy_slot_cannot_be_allocated_twice_and_frees_after_its_tasks():
    table = TaskSlotTable(1, ResourceSpec(1, 512))
    table.allocate(0, "job", "alloc-1", "jm", "jm:1")
    table.allocate(0, "job", "alloc-1", "jm", "jm:1")      # the same request again: idempotent
    with pytest.raises(SlotStateError, match="already allocated"):
        table.allocate(0, "job", "alloc-2", "jm", "jm:1")
    table.add_task("alloc-1", "jm", "t1", object())
    assert table.free("alloc-1").state is TaskSlotState.RELEASING
    assert table.remove_task("alloc-1", "t1").state is TaskSlotState.FREE


def test_pipelined_subpartition_blocks_a_producer_that_gets_ahead():
    sub = PipelinedSubpartition(capacity=2)
    batch = pa.record_batch([pa.array([1])], names=["x"])
    added = []

    def produce() -> None:
        for i in range(5):
            sub.add(batch, lambda: False)
            added.append(i)
        sub.finish()
    producer = threading.Thread(target=produce, daemon=True)
    producer.start()
    wait_until(lambda: len(added) == 2, 5, "the producer to fill the subpartition")
    producer.join(0.3)   # bounded join: it must still be blocked on the full queue
    assert producer.is_alive() and len(added) == 2, "backpressure: the third batch must wait"
    assert len(list(sub.read())) == 5
    producer.join(5)
    assert not producer.is_alive()


class _Builder:
    """A SparkSession builder whose JVM exits on start ``failures`` times."""

    def __init__(self, failures: int, condition: str | None = "JAVA_GATEWAY_EXITED") -> None:
        self.failures, self.calls, self.condition = failures, 0, condition

    def getOrCreate(self) -> object:   # noqa: N802 - Spark's name
        from pyspark.errors import PySparkRuntimeError
        self.calls += 1
        if self.calls <= self.failures and self.condition is None:
            raise RuntimeError("AnalysisException: no such table")
        if self.calls <= self.failures:
            raise PySparkRuntimeError(errorClass=self.condition, messageParameters={})
        return "session"


@pytest.mark.parametrize("failures, started", [(0, True), (2, True), (3, False)])
def test_a_spark_jvm_that_exits_on_start_is_started_again_at_most_twice(monkeypatch, failures,
                                                                        started):
    pytest.importorskip("pyspark")
    from pyspark.errors import PySparkRuntimeError

    from yarnflow.conf import Configuration
    from yarnflow.taskexecutor.settings import SparkSettings
    from yarnflow.taskexecutor.spark import session
    monkeypatch.setattr(session, "_RETRY_PAUSE_S", 0.0)
    holder = session.SparkSessionHolder(SparkSettings.of(Configuration.load()), 1, ResourceSpec(1, 1024), "/nowhere")
    builder = _Builder(failures)
    if started:
        assert holder._start(builder) == "session"
    else:
        with pytest.raises(PySparkRuntimeError, match="JAVA_GATEWAY_EXITED"):
            holder._start(builder)
    assert builder.calls == min(failures + 1, session.START_ATTEMPTS)


def test_a_spark_error_other_than_a_jvm_start_is_not_retried(monkeypatch):
    pytest.importorskip("pyspark")
    from yarnflow.conf import Configuration
    from yarnflow.taskexecutor.settings import SparkSettings
    from yarnflow.taskexecutor.spark import session
    monkeypatch.setattr(session, "_RETRY_PAUSE_S", 0.0)
    holder = session.SparkSessionHolder(SparkSettings.of(Configuration.load()), 1, ResourceSpec(1, 1024), "/nowhere")
    builder = _Builder(1, condition=None)
    with pytest.raises(RuntimeError, match="no such table"):
        holder._start(builder)
    assert builder.calls == 1


def test_the_spark_jvm_gets_the_configured_java_options_and_none_by_default(monkeypatch):
    from yarnflow.conf import Configuration
    from yarnflow.conf.configuration import ENV_CONF_DIR
    from yarnflow.taskexecutor.settings import SparkSettings
    from yarnflow.taskexecutor.spark import session
    monkeypatch.delenv(ENV_CONF_DIR)      # the suite's own file sets them
    plain = session.SparkSessionHolder(SparkSettings.of(Configuration.load()), 1, ResourceSpec(1, 1024), "/nowhere")
    assert "spark.driver.extraJavaOptions" not in plain.settings()
    tuned = session.SparkSessionHolder(
        SparkSettings.of(Configuration.load(
            overrides=["taskmanager.spark.jvm-options=-XX:+UseSerialGC -Xss2m"])),
        1, ResourceSpec(1, 1024), "/nowhere")
    assert tuned.settings()["spark.driver.extraJavaOptions"] == "-XX:+UseSerialGC -Xss2m"
