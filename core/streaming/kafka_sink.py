"""Kafka out, at least once (Flink's ``KafkaSink`` with ``DeliveryGuarantee.AT_LEAST_ONCE``),
through confluent-kafka's producer.

Each row becomes one record: its value the row as a JSON object (``value_format='json'``)
or the bytes of its ``value`` column (``'raw'``), its key the text of the ``key`` column
when one is named (so a key's records keep their order in one partition). At a
checkpoint's barrier the sink waits until the broker has acknowledged every record it
was handed before the barrier (``flush``): the checkpoint then completes only once they
are durable, and a restart from it replays at most what came after, which is written
again (at least once; transactions, for exactly once, are the next issue's). A record
the broker refuses fails the task, naming the topic and why, and the job restarts from
its latest checkpoint.

A full producer queue blocks the task until the broker takes records off it, so a slow
broker slows the sources and no buffer grows. In a batch job the sink flushes when its
input ends, and the job fails if any record was refused.
"""
from __future__ import annotations

import json
import logging
from typing import Any, Mapping

import pyarrow as pa

from yarnflow.core.clock import SYSTEM_CLOCK
from yarnflow.core.jobgraph import ChainingStrategy
from yarnflow.core.operators.base import BatchProcessor, PlanError, require_columns
from yarnflow.core.operators.context import OperatorContext
from yarnflow.core.streaming.kafka_source import check_topics
from yarnflow.core.streaming.operators import (OperatorRestore, SnapshotResult, StreamContext,
                                               StreamOperator)

log = logging.getLogger(__name__)

VALUE_FORMATS = ("json", "raw")
# how long a checkpoint's flush may wait for the broker's acknowledgements; longer than
# librdkafka's own delivery timeout (message.timeout.ms, 300 s by default) is pointless
FLUSH_TIMEOUT_S = 120.0
FULL_QUEUE_WAIT_S = 0.05


class KafkaDeliveryFailed(RuntimeError):
    """The broker refused records, or did not acknowledge them in time: the task fails
    and the job restarts from its latest checkpoint (the records are written again)."""


class _Producer:
    """One subtask's producer: rows in, records out, delivery failures remembered."""

    def __init__(self, sink: "KafkaSink", client_id: str) -> None:
        from confluent_kafka import Producer
        conf = {"bootstrap.servers": sink.bootstrap_servers, "client.id": client_id,
                "acks": "all", "enable.idempotence": True, "linger.ms": 20,
                **sink.properties}
        self._producer = Producer(conf)
        self._sink = sink
        self._failed: list[str] = []
        self.written = 0

    def _delivered(self, err: Any, msg: Any) -> None:
        if err is not None and len(self._failed) < 5:
            self._failed.append(str(err.str() if hasattr(err, "str") else err))

    def write(self, batch: pa.RecordBatch) -> None:
        sink = self._sink
        if sink.value_format == "raw":
            values: list[Any] = batch.column(batch.schema.get_field_index("value")).to_pylist()
        else:
            values = [json.dumps(row, default=str, separators=(",", ":")).encode()
                      for row in batch.to_pylist()]
        keys: list[Any] = [None] * len(values)
        if sink.key:
            keys = [None if k is None else str(k).encode()
                    for k in batch.column(batch.schema.get_field_index(sink.key)).to_pylist()]
        produce, poll = self._producer.produce, self._producer.poll
        for value, key in zip(values, keys):
            while True:
                try:
                    produce(sink.topic, value, key, on_delivery=self._delivered)
                    break
                except BufferError:       # the queue is full: wait for the broker
                    poll(FULL_QUEUE_WAIT_S)
        poll(0)
        self.written += len(values)
        self._raise_failed()

    def flush(self, timeout: float = FLUSH_TIMEOUT_S) -> None:
        """Every record handed over so far acknowledged, or KafkaDeliveryFailed."""
        left = self._producer.flush(timeout)
        if left:
            raise KafkaDeliveryFailed(
                f"{left} records to Kafka topic '{self._sink.topic}' at "
                f"{self._sink.bootstrap_servers} were not acknowledged within {timeout:g} s. "
                "Fix: check that the brokers run and the topic accepts writes")
        self._raise_failed()

    def _raise_failed(self) -> None:
        if self._failed:
            raise KafkaDeliveryFailed(
                f"Kafka refused records to topic '{self._sink.topic}' at "
                f"{self._sink.bootstrap_servers}: {'; '.join(self._failed)}. Fix: check the "
                "topic's limits (max.message.bytes) and the producer properties")

    def close(self) -> None:
        try:
            self._producer.flush(min(5.0, FLUSH_TIMEOUT_S))
        except Exception as err:   # noqa: BLE001 - closing after a failure: named, no more
            log.info("closing the Kafka producer for %s: %s", self._sink.topic, err)


class _BatchWriter(BatchProcessor):
    def __init__(self, producer: _Producer) -> None:
        self._producer = producer

    def process(self, batch: pa.RecordBatch) -> None:
        self._producer.write(batch)

    def finish(self) -> None:
        self._producer.flush()

    def close(self) -> None:
        self._producer.close()


class KafkaSink(StreamOperator):
    chaining = ChainingStrategy.ALWAYS

    def __init__(self, topic: str, bootstrap_servers: str, value_format: str = "json",
                 key: str | None = None, properties: Mapping[str, Any] | None = None,
                 uid: str = "") -> None:
        if value_format not in VALUE_FORMATS:
            raise PlanError(f"value_format {value_format!r} is not one of "
                            f"{', '.join(VALUE_FORMATS)}", "use 'json' or 'raw'")
        if not topic:
            raise PlanError("write_kafka needs a topic", "name the topic to write to")
        self.topic = topic
        self.bootstrap_servers = bootstrap_servers
        self.value_format = value_format
        self.key = key
        self.properties = dict(properties or {})
        self.uid = uid

    def schema(self, inputs: list[pa.Schema | None]) -> pa.Schema | None:
        given = inputs[0] if inputs else None
        if given is not None:
            needed = ([self.key] if self.key else []) + (["value"] if self.value_format == "raw"
                                                         else [])
            require_columns(given, needed, f"write_kafka to {self.topic}")
        return given

    def check_submittable(self) -> None:
        """On the client, at submission: the brokers answer and the topic exists."""
        check_topics(self.bootstrap_servers, [self.topic], self.properties)

    # --- a batch job -----------------------------------------------------------------------
    def open(self, ctx: OperatorContext) -> BatchProcessor:
        return _BatchWriter(_Producer(self, f"yarnflow-{ctx.subtask_index}"))

    # --- a streaming job -------------------------------------------------------------------
    def setup(self, ctx: StreamContext, restored: OperatorRestore | None) -> None:
        super().setup(ctx, restored)
        self._producer = _Producer(self, f"yarnflow-{ctx.job_id}-{ctx.subtask_index}")

    def process(self, batch: pa.RecordBatch) -> None:
        self._producer.write(batch)
        self.ctx.count("records_written", batch.num_rows)

    def snapshot(self, checkpoint_id: int) -> SnapshotResult:
        started = SYSTEM_CLOCK.monotonic()
        self._producer.flush()
        log.debug("flushed to %s for checkpoint %d in %.3f s", self.topic, checkpoint_id,
                  SYSTEM_CLOCK.monotonic() - started)
        return SnapshotResult()

    def finish(self) -> None:
        self._producer.flush()

    def close(self) -> None:
        producer = getattr(self, "_producer", None)
        if producer is not None:
            producer.close()
