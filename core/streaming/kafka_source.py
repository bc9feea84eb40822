"""Kafka in (Flink's ``KafkaSource``), through confluent-kafka (librdkafka).

Each subtask reads the partitions it owns: Flink's assignment, a topic's partitions
dealt round-robin over the subtasks from a start that depends on the topic, so that
the partitions of several topics spread. Every ``partition-discovery.interval`` the
subtask looks for partitions added since, and reads new ones from their start.

The offsets read are the source's state: a checkpoint snapshots them, a restore
seeks to them, and a completed checkpoint commits them to the consumer group, for
monitoring only (lag tools read them), never to restore from. A value that does not
parse fails the job naming its partition and offset, or is skipped and counted
(``deserialization_errors='skip'``). With ``stopping_offsets='latest'`` the source
is bounded: it ends at the log end offsets it found when it started.
"""
from __future__ import annotations

import io
import json
import logging
import zlib
from typing import Any, Mapping, Sequence

import pyarrow as pa
import pyarrow.json as pajson

from yarnflow.core.clock import SYSTEM_CLOCK
from yarnflow.core.failures import ContractError
from yarnflow.core.operators.base import PlanError
from yarnflow.core.streaming.operators import (OperatorRestore, SnapshotResult, StreamContext,
                                               StreamSource)

log = logging.getLogger(__name__)

VALUE_FORMATS = ("json", "raw")
METADATA_TIMEOUT_S = 10.0
RAW_SCHEMA = pa.schema([("value", pa.binary())])
# a record's own columns a source can add (kafka_timestamp: ms, as the broker stamped it)
METADATA_COLUMNS = {"timestamp": pa.int64(), "partition": pa.int32(), "offset": pa.int64()}


class KafkaUnreachable(RuntimeError):
    """The brokers did not answer: perhaps for a moment (a restart may find them), so
    the job's restart strategy decides; at submission it is refused in one line."""


class KafkaUnavailable(ContractError):
    """A topic that is not there: the same on every attempt, the user's to fix."""


def owner_of(topic: str, partition: int, parallelism: int) -> int:
    """The subtask that reads ``partition`` of ``topic`` (Flink's
    ``KafkaSourceEnumerator.getSplitOwner``, with a stable hash of the topic)."""
    start = (zlib.crc32(topic.encode()) * 31 & 0x7FFFFFFF) % parallelism
    return (start + partition) % parallelism


def list_partitions(admin_or_consumer: Any, topics: Sequence[str], bootstrap: str,
                    timeout: float = METADATA_TIMEOUT_S) -> dict[str, list[int]]:
    """Each topic's partitions, or a one-line error naming what is wrong."""
    from confluent_kafka import KafkaException
    try:
        metadata = admin_or_consumer.list_topics(timeout=timeout)
    except KafkaException as err:
        raise KafkaUnreachable(
            f"the Kafka brokers at {bootstrap} did not answer within {timeout:g} s "
            f"({err.args[0].str() if err.args else err}). Fix: check bootstrap_servers, that "
            "the brokers run, and the security properties (security.protocol, sasl.*, "
            "ssl.*)") from None
    out = {}
    for topic in topics:
        found = metadata.topics.get(topic)
        if found is None or found.error is not None or not found.partitions:
            raise KafkaUnavailable(f"Kafka topic '{topic}' does not exist at {bootstrap}. Fix: "
                                   "create it, or name an existing topic")
        out[topic] = sorted(found.partitions)
    return out


def check_topics(bootstrap: str, topics: Sequence[str], properties: Mapping[str, Any]) -> None:
    """At submission (a source's or a sink's): the brokers answer and every topic
    exists, or a ContractError in one line."""
    from confluent_kafka.admin import AdminClient
    admin = AdminClient({"bootstrap.servers": bootstrap, **properties})
    try:
        list_partitions(admin, topics, bootstrap)
    except KafkaUnreachable as err:
        raise ContractError(str(err)) from None


class KafkaSource(StreamSource):
    def __init__(self, topics: Sequence[str], bootstrap_servers: str, schema: pa.Schema | None,
                 value_format: str = "json", starting_offsets: Any = "earliest",
                 stopping_offsets: str | None = None, properties: Mapping[str, Any] | None = None,
                 group_id: str = "", discovery_interval_s: float = 300.0,
                 deserialization_errors: str = "fail", uid: str = "",
                 metadata: Sequence[str] = ()) -> None:
        if value_format not in VALUE_FORMATS:
            raise PlanError(f"value_format {value_format!r} is not one of "
                            f"{', '.join(VALUE_FORMATS)}", "use 'json' or 'raw'")
        if value_format == "json" and schema is None:
            raise PlanError("read_kafka with value_format='json' needs the values' schema",
                            "pass schema=pyarrow.schema([...])")
        if stopping_offsets not in (None, "latest"):
            raise PlanError(f"stopping_offsets {stopping_offsets!r} is not None or 'latest'",
                            "leave it unset (unbounded) or 'latest'")
        if isinstance(starting_offsets, str) and \
                starting_offsets not in ("earliest", "latest", "committed"):
            raise PlanError(f"starting_offsets {starting_offsets!r} is not 'earliest', "
                            "'latest', 'committed' or a {partition: offset} mapping",
                            "use one of those")
        if deserialization_errors not in ("fail", "skip"):
            raise PlanError("deserialization_errors must be 'fail' or 'skip'", "use one of those")
        self.topics = [topics] if isinstance(topics, str) else list(topics)
        self.bootstrap_servers = bootstrap_servers
        self.value_schema = schema if value_format == "json" else RAW_SCHEMA
        self.value_format = value_format
        self.starting_offsets = starting_offsets
        self.stopping_offsets = stopping_offsets
        self.bounded = stopping_offsets == "latest"
        self.properties = dict(properties or {})
        self.group_id = group_id
        self.discovery_interval_s = discovery_interval_s
        self.deserialization_errors = deserialization_errors
        self.uid = uid
        unknown = set(metadata) - set(METADATA_COLUMNS)
        if unknown:
            raise PlanError(f"metadata {sorted(unknown)} is not one of "
                            f"{', '.join(METADATA_COLUMNS)}", "name those it has")
        self.metadata = [m for m in METADATA_COLUMNS if m in metadata]

    def schema(self, inputs: list[pa.Schema | None]) -> pa.Schema | None:
        if self.value_schema is None:
            return None
        return pa.schema(list(self.value_schema) + [
            pa.field(f"kafka_{m}", METADATA_COLUMNS[m]) for m in self.metadata])

    def check_submittable(self) -> None:
        """On the client, at submission: the brokers answer and every topic exists."""
        check_topics(self.bootstrap_servers, self.topics, self.properties)

    # --- running --------------------------------------------------------------------------
    def setup(self, ctx: StreamContext, restored: OperatorRestore | None) -> None:
        from confluent_kafka import Consumer
        super().setup(ctx, restored)
        group = self.group_id or f"yarnflow-{ctx.job_id}"
        conf = {"bootstrap.servers": self.bootstrap_servers, "group.id": group,
                "enable.auto.commit": False, "enable.auto.offset.store": False,
                "enable.partition.eof": False, "auto.offset.reset": "earliest",
                **self.properties}
        self._consumer = Consumer(conf)
        self._offsets: dict[str, int] = {}       # "topic:partition" -> next offset to read
        if restored is not None and restored.inline:
            self._offsets = {k: int(v) for k, v in json.loads(restored.inline)["offsets"].items()}
        self._stops: dict[str, int] = {}
        self._assigned: set[str] = set()
        self._by_checkpoint: dict[int, dict[str, int]] = {}
        self._next_discovery = 0.0
        self._discover()

    def _discover(self) -> None:
        from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, OFFSET_STORED, TopicPartition
        partitions = list_partitions(self._consumer, self.topics, self.bootstrap_servers)
        new: list[Any] = []
        first_time = not self._assigned
        for topic, numbers in partitions.items():
            for number in numbers:
                key = f"{topic}:{number}"
                if key in self._assigned or \
                        owner_of(topic, number, self.ctx.parallelism) != self.ctx.subtask_index:
                    continue
                if key in self._offsets:
                    offset = self._offsets[key]
                elif not first_time:
                    offset = OFFSET_BEGINNING          # a partition added while running
                elif isinstance(self.starting_offsets, Mapping):
                    offset = int(self.starting_offsets.get(number, self.starting_offsets.get(
                        key, OFFSET_BEGINNING)))
                else:
                    offset = {"earliest": OFFSET_BEGINNING, "latest": OFFSET_END,
                              "committed": OFFSET_STORED}[self.starting_offsets]
                new.append(TopicPartition(topic, number, offset))
                self._assigned.add(key)
                if self.bounded:
                    _, high = self._consumer.get_watermark_offsets(
                        TopicPartition(topic, number), timeout=METADATA_TIMEOUT_S)
                    self._stops[key] = high
        if new:
            self._consumer.incremental_assign(new)
            log.info("%s reads %s", self.ctx.vertex_name,
                     ", ".join(f"{tp.topic}:{tp.partition}" for tp in new))
        self._next_discovery = SYSTEM_CLOCK.monotonic() + self.discovery_interval_s

    def splits(self) -> list[str]:
        return sorted(self._assigned)

    def _done(self) -> bool:
        return self.bounded and all(self._offsets.get(k, 0) >= stop
                                    for k, stop in self._stops.items())

    def poll(self, timeout: float) -> list[tuple[str, pa.RecordBatch]] | None:
        if self._done():
            return None
        if not self.bounded and SYSTEM_CLOCK.monotonic() >= self._next_discovery:
            self._discover()
        messages = self._consumer.consume(num_messages=self.ctx.batch_rows, timeout=timeout)
        by_split: dict[str, list[Any]] = {}
        for message in messages:
            error = message.error()
            if error is not None:
                if error.fatal():
                    raise KafkaUnreachable(f"Kafka consumer error: {error.str()}")
                log.warning("Kafka: %s", error.str())
                continue
            key = f"{message.topic()}:{message.partition()}"
            offset = int(message.offset() or 0)
            stop = self._stops.get(key)
            if stop is not None and offset >= stop:
                self._offsets[key] = max(self._offsets.get(key, 0), stop)
                continue
            by_split.setdefault(key, []).append(message)
            self._offsets[key] = offset + 1
        out = []
        for key, batch in by_split.items():
            parsed = self._parse(key, batch)
            if parsed is not None and parsed.num_rows:
                out.append((key, parsed))
        return out

    def _parse(self, key: str, messages: list[Any]) -> pa.RecordBatch | None:
        batch, kept = self._values(key, messages)
        if batch is None or not self.metadata:
            return batch
        for name in self.metadata:
            if name == "timestamp":
                values: list[Any] = [m.timestamp()[1] for m in kept]
            else:
                values = [m.partition() if name == "partition" else m.offset() for m in kept]
            batch = batch.append_column(f"kafka_{name}", pa.array(values, METADATA_COLUMNS[name]))
        return batch

    def _values(self, key: str, messages: list[Any]) -> tuple[pa.RecordBatch | None, list[Any]]:
        """The records' values as a batch, and the records it holds (those that parsed)."""
        if self.value_format == "raw":
            return pa.record_batch([pa.array([m.value() for m in messages], pa.binary())],
                                   schema=RAW_SCHEMA), messages
        values = [m.value() or b"" for m in messages]
        try:
            return _read_json(b"\n".join(values), self.value_schema), messages
        except (pa.ArrowInvalid, ValueError):
            pass
        good, kept = [], []
        for message, value in zip(messages, values):   # find the one that does not parse
            try:
                good.append(_read_json(value, self.value_schema))
                kept.append(message)
            except (pa.ArrowInvalid, ValueError) as err:
                where = f"partition {key}, offset {message.offset()}"
                if self.deserialization_errors == "fail":
                    raise ContractError(
                        f"a Kafka record at {where} is not JSON of the source's schema "
                        f"({str(err).splitlines()[0]}). Fix: correct the producer, or set "
                        "deserialization_errors='skip' to count and skip such records") from None
                self.ctx.count("records-skipped")
        if not good:
            return None, []
        return pa.Table.from_batches(good).combine_chunks().to_batches()[0], kept

    def snapshot(self, checkpoint_id: int) -> SnapshotResult:
        offsets = dict(self._offsets)
        self._by_checkpoint[checkpoint_id] = offsets
        return SnapshotResult(inline=json.dumps({"offsets": offsets}).encode())

    def checkpoint_complete(self, checkpoint_id: int) -> None:
        from confluent_kafka import TopicPartition
        done = [i for i in self._by_checkpoint if i <= checkpoint_id]
        if not done:
            return
        offsets = self._by_checkpoint[max(done)]
        for i in done:
            del self._by_checkpoint[i]
        commits = [TopicPartition(k.rsplit(":", 1)[0], int(k.rsplit(":", 1)[1]), v)
                   for k, v in offsets.items()]
        if commits:
            try:
                self._consumer.commit(offsets=commits, asynchronous=True)
            except Exception as err:  # noqa: BLE001 - for monitoring only: never fails the job
                log.info("committing offsets to the consumer group failed: %s", err)

    def lag(self) -> int:
        """Records behind the log end over this subtask's partitions, from the offsets
        the consumer last fetched with (no call to the brokers)."""
        from confluent_kafka import TopicPartition
        total = 0
        for key in self._assigned:
            topic, partition = key.rsplit(":", 1)
            try:
                _, high = self._consumer.get_watermark_offsets(
                    TopicPartition(topic, int(partition)), cached=True)
            except Exception:  # noqa: BLE001 - not fetched yet: unknown
                return -1
            if high is None or high < 0:
                return -1
            total += max(0, high - self._offsets.get(key, 0))
        return total

    def close(self) -> None:
        consumer = getattr(self, "_consumer", None)
        if consumer is not None:
            try:
                consumer.close()
            except Exception:  # noqa: BLE001 - closing on the way out
                pass


def _read_json(data: bytes, schema: pa.Schema) -> pa.RecordBatch:
    table = pajson.read_json(io.BytesIO(data), parse_options=pajson.ParseOptions(
        explicit_schema=schema, unexpected_field_behavior="ignore"),
        read_options=pajson.ReadOptions(use_threads=False, block_size=max(1 << 20, len(data) + 1)))
    return table.select(schema.names).combine_chunks().to_batches()[0] \
        if table.num_rows else pa.RecordBatch.from_pylist([], schema=schema)
