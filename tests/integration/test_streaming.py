"""Unbounded pipelines on the local target against a real Kafka broker (issue 83):
Kafka → watermarks → keyed tumbling windows → Parquet in hourly directories, with
checkpoints, executors killed at random moments, and the committed output compared
with what pyarrow computes from the records put into the topic."""
from __future__ import annotations

import json
import os
import random
import signal
import time
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

import yarnflow.client as yf
from tests.conftest import FAST, executor_logs, wait_until
# the records (events 40 ms apart, shuffled within 600 ms: out of order, never late),
# as the dockerised cluster's streaming tests make them on its edge host
from tests.yarn.pipelines.streams import SCHEMA, START_MS, records
from yarnflow.appmaster.components import JobClient
from yarnflow.appmaster.jobmaster.executiongraph import JobStatus
from yarnflow.client.targets.local import LocalCluster
from yarnflow.conf import Configuration
from yarnflow.core.jobgraph import InvalidPipelineError

WINDOW = "10 s"
RESTART_FAST = ["restart-strategy.exponential-delay.initial-backoff=0.5 s",
                "restart-strategy.exponential-delay.jitter-factor=0"]


def produce(broker: str, table: pa.Table, partitions: int) -> str:
    topic = f"events-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": broker})
    for future in admin.create_topics([NewTopic(topic, partitions, 1)]).values():
        future.result(30)
    producer = Producer({"bootstrap.servers": broker, "linger.ms": 5})
    for i, row in enumerate(table.to_pylist()):
        producer.produce(topic, json.dumps(row).encode(), partition=i % partitions)
        if i % 10_000 == 0:
            producer.poll(0)
    assert producer.flush(60) == 0
    return topic


def oracle(table: pa.Table) -> pa.Table:
    """Each user's count and sum per 10 s window, by pyarrow."""
    window_start = pc.multiply(pc.divide(table["ts"], 10_000), 10_000)   # integer division
    keyed = table.append_column("window_start", window_start)
    return keyed.group_by(["user", "window_start"]).aggregate(
        [("amount", "count"), ("amount", "sum")]).sort_by([("user", "ascending"),
                                                          ("window_start", "ascending")])


def committed(out: Path) -> pa.Table:
    """The committed output (hidden in-progress files are not part of it)."""
    table = ds.dataset(str(out), format="parquet", partitioning="hive").to_table()
    if "user" not in table.schema.names:          # nothing committed yet
        return pa.table({"user": [], "window_start": [], "amount_count": [], "amount_sum": []},
                        schema=pa.schema([("user", pa.string()), ("window_start", pa.int64()),
                                          ("amount_count", pa.int64()),
                                          ("amount_sum", pa.int64())]))
    table = table.select(["user", "window_start", "amount_count", "amount_sum"])
    starts = pc.cast(table["window_start"], pa.int64())
    table = table.set_column(1, "window_start", starts)
    return table.sort_by([("user", "ascending"), ("window_start", "ascending")])


def slow_map(progress: Path, pause: float):
    def work(batch: pa.RecordBatch) -> pa.RecordBatch:
        time.sleep(pause)
        with open(progress, "a") as f:
            f.write(f"{batch.num_rows}\n")
        return batch
    return work


def rows_through(progress: Path) -> int:
    try:
        return sum(int(line) for line in progress.read_text().split())
    except FileNotFoundError:
        return 0


def window_job(broker: str, topic: str, out: Path, progress: Path | None = None,
               pause: float = 0.0, parallelism: int = 2, bounded: bool = True) -> yf.Pipeline:
    p = yf.Pipeline("kafka-windows", parallelism=parallelism)
    events = p.read_kafka(topic, broker, schema=SCHEMA,
                          stopping_offsets="latest" if bounded else None) \
        .assign_watermarks("ts", "2 s")
    if progress is not None:
        events = events.map(slow_map(progress, pause), name="work")
    events.window("user", yf.tumbling(WINDOW), [("amount", "count"), ("amount", "sum")]) \
        .map(lambda b: b.append_column("hour_of", pc.cast(b["window_start"], pa.timestamp(
            "ms", tz="UTC"))), name="stamp") \
        .write_parquet(str(out), partition_by=[yf.TimeBuckets("hour_of")])
    return p


def records_out(client: JobClient, operator: str) -> int:
    """What the operator named so has emitted, over its subtasks, as last reported."""
    totals = client.details().vertex_running(operator).operator_totals()
    return sum(op.records_out for op in totals if op.name == operator)


def streaming_config(tmp_path: Path, *extra: str) -> Configuration:
    return Configuration.load(overrides=FAST + RESTART_FAST + [
        "execution.checkpointing.interval=1 s", f"state.checkpoints.dir={tmp_path / 'chk'}",
        "pipeline.batch-rows=1000", *extra])


def assert_exact(out: Path, want: pa.Table) -> None:
    got = committed(out)
    keys = list(zip(got["user"].to_pylist(), got["window_start"].to_pylist()))
    assert len(keys) == len(set(keys)), "a window was written twice"
    assert got.num_rows == want.num_rows, f"{got.num_rows} windows, not {want.num_rows}"
    assert got["amount_count"].to_pylist() == want["amount_count"].to_pylist()
    assert got["amount_sum"].to_pylist() == want["amount_sum"].to_pylist()


def test_kafka_windows_to_parquet_are_exact(kafka_broker: str, tmp_path: Path) -> None:
    table = records(20_000, 23, seed=1)
    topic = produce(kafka_broker, table, partitions=3)
    out = tmp_path / "out"
    config = streaming_config(tmp_path)
    with LocalCluster(config) as cluster:
        result = cluster.submit(window_job(kafka_broker, topic, out).job_graph(config)).wait(120)
        assert result.status is JobStatus.FINISHED, result.failure + executor_logs(cluster.log_dir)
    assert_exact(out, oracle(table))
    hours = sorted(p.name for p in (out / "dt=2026-01-01").iterdir())
    assert hours == ["hour=00"], hours      # 800 s of events, in hourly directories


def test_three_executors_killed_at_random_moments_and_the_output_is_exact(
        kafka_broker: str, tmp_path: Path) -> None:
    table = records(60_000, 31, seed=2)
    topic = produce(kafka_broker, table, partitions=4)
    out, progress = tmp_path / "out", tmp_path / "progress"
    config = streaming_config(tmp_path)
    rng = random.Random(3)
    with LocalCluster(config) as cluster:
        client = cluster.submit(window_job(kafka_broker, topic, out, progress, pause=0.25)
                                .job_graph(config))
        for kill in range(3):
            threshold = rows_through(progress) + rng.randrange(4_000, 9_000)
            ended = client.result_future
            wait_until(lambda: rows_through(progress) >= threshold or ended.done(), 120,
                       f"{threshold} rows through the map before kill {kill + 1}")
            if ended.done():
                break
            running = [s.resource_id for v in client.details().vertices for s in v.subtasks
                       if s.resource_id and s.state.name == "RUNNING"]
            if not running:
                break
            pid = cluster.driver.pid_of(rng.choice(running))
            if pid is not None:
                os.kill(pid, signal.SIGKILL)
        result = client.wait(240)
        assert result.status is JobStatus.FINISHED, result.failure + executor_logs(cluster.log_dir)
        assert result.details.restarts >= 1
    assert_exact(out, oracle(table))


def test_a_frozen_executor_is_found_by_heartbeats_and_the_output_is_exact(
        kafka_broker: str, tmp_path: Path) -> None:
    table = records(30_000, 19, seed=6)
    topic = produce(kafka_broker, table, partitions=2)
    out, progress = tmp_path / "out", tmp_path / "progress"
    config = streaming_config(tmp_path)
    with LocalCluster(config) as cluster:
        client = cluster.submit(window_job(kafka_broker, topic, out, progress, pause=0.2)
                                .job_graph(config))
        wait_until(lambda: rows_through(progress) >= 8_000, 120, "8000 rows through the map")
        victim = next(s.resource_id for v in client.details().vertices for s in v.subtasks
                      if s.resource_id and "kafka" in v.name)
        pid = cluster.driver.pid_of(victim)
        assert pid is not None
        os.kill(pid, signal.SIGSTOP)
        result = client.wait(240)
        assert result.status is JobStatus.FINISHED, result.failure + executor_logs(cluster.log_dir)
        assert any("heartbeat.timeout" in x.cause for x in result.details.exceptions), \
            result.details.exceptions
    assert_exact(out, oracle(table))


@pytest.mark.parametrize("fault", ["drop", "drop-answer"])
def test_lost_control_messages_are_retried_or_reconciled_and_the_output_is_exact(
        kafka_broker: str, tmp_path: Path, fault: str) -> None:
    """2 % of every call between components is lost, and 10 % of the checkpoints' own
    (triggers, acknowledgements, notifications): each is retried or made good later."""
    table = records(20_000, 17, seed=7)
    topic = produce(kafka_broker, table, partitions=3)
    out, progress = tmp_path / "out", tmp_path / "progress"
    checkpoint_calls = ("TriggerCheckpoint", "AcknowledgeCheckpoint", "NotifyCheckpoint")
    rules = ";".join([f"{call}={fault}:0.1" for call in checkpoint_calls] + [f"*={fault}:0.02"])
    config = streaming_config(tmp_path, f"test.rpc.faults={rules}",
                              "test.rpc.faults.seed=5", "execution.checkpointing.interval=0.2 s",
                              "execution.checkpointing.tolerable-failed-checkpoints=1000")
    (tmp_path / "logs").mkdir()
    with LocalCluster(config, log_dir=tmp_path / "logs") as cluster:
        result = cluster.submit(window_job(kafka_broker, topic, out, progress, pause=0.4)
                                .job_graph(config)).wait(240)
        assert result.status is JobStatus.FINISHED, result.failure + executor_logs(cluster.log_dir)
    assert_exact(out, oracle(table))
    injected = [line.split("injected fault: ", 1)[1]
                for line in executor_logs(tmp_path / "logs", lines=100_000).splitlines()
                if "injected fault: " in line]
    assert any("Checkpoint" in line for line in injected), injected[:20]


def test_stop_with_a_savepoint_then_resume_from_it_and_the_output_is_exact(
        kafka_broker: str, tmp_path: Path) -> None:
    """The first job reads an unbounded topic and is stopped with a savepoint (its
    complete windows committed, the open ones kept in the savepoint); more records
    arrive; a second job starts from the savepoint and reads to the end."""
    first_half, second_half = records(12_000, 13, seed=4), records(24_000, 13, seed=4)[12_000:]
    topic = produce(kafka_broker, first_half, partitions=3)
    out, progress = tmp_path / "out", tmp_path / "progress"
    config = streaming_config(tmp_path, f"state.savepoints.dir={tmp_path / 'savepoints'}")
    with LocalCluster(config) as cluster:
        client = cluster.submit(window_job(kafka_broker, topic, out, progress, pause=0.05,
                                           bounded=False).job_graph(config))
        wait_until(lambda: rows_through(progress) >= first_half.num_rows, 60,
                   "the first records through the map")
        location = client.savepoint("", terminate=True).result(60)
        result = client.wait(60)
        assert result.status is JobStatus.FINISHED, result.failure + executor_logs(cluster.log_dir)
    assert Path(location.removeprefix("file://"), "_metadata").exists()
    fired_first = committed(out).num_rows
    assert 0 < fired_first < oracle(first_half).num_rows   # the last windows were still open
    produce_more(kafka_broker, topic, second_half, partitions=3)
    resumed = streaming_config(tmp_path, f"execution.savepoint.path={location}")
    with LocalCluster(resumed) as cluster:
        result = cluster.submit(window_job(kafka_broker, topic, out).job_graph(resumed)).wait(120)
        assert result.status is JobStatus.FINISHED, result.failure + executor_logs(cluster.log_dir)
    assert_exact(out, oracle(pa.concat_tables([first_half, second_half])))


def produce_more(broker: str, topic: str, table: pa.Table, partitions: int) -> None:
    producer = Producer({"bootstrap.servers": broker, "linger.ms": 5})
    for i, row in enumerate(table.to_pylist()):
        producer.produce(topic, json.dumps(row).encode(), partition=i % partitions)
    assert producer.flush(60) == 0


def test_a_savepoint_of_another_job_is_refused_naming_the_uid(kafka_broker: str,
                                                              tmp_path: Path) -> None:
    from yarnflow.client.planner.streaming import check_streaming_submission
    savepoint = tmp_path / "sp"
    savepoint.mkdir()
    (savepoint / "_metadata").write_text(json.dumps({
        "format": "yarnflow-checkpoint", "version": 1, "job_id": "x", "checkpoint_id": 3,
        "kind": "savepoint", "trigger_ms": 0, "completed_ms": 0, "finished": [],
        "operators": {"old-window": {"vertex": "w", "parallelism": 1, "max_parallelism": 128,
                                     "subtasks": {}}}}))
    config = streaming_config(tmp_path, f"execution.savepoint.path={savepoint}")
    graph = window_job(kafka_broker, "t", tmp_path / "out").job_graph(config)
    with pytest.raises(InvalidPipelineError, match="uid 'old-window'.*allow-non-restored-state"):
        check_streaming_submission(graph, config)
    config.set(__import__("yarnflow.conf", fromlist=["options"]).options.SAVEPOINT_IGNORE_UNCLAIMED,
               True)
    check_streaming_submission(graph, config)


def test_a_watched_directory_streams_new_files_with_no_broker(tmp_path: Path) -> None:
    """Parquet files appear in a directory while the job runs (written hidden, then
    renamed, as writers publish); once they are read, a last record far in the future
    moves event time past every window (the subtask that reads no more files goes idle,
    so it holds nothing back); the job is then stopped, and its output is exact.

    The last record waits until the others are read because idleness means exactly
    that (in Flink too): a subtask idle when the far-future watermark passes, and then
    given older files, would deliver late records, which are dropped."""
    incoming, out = tmp_path / "incoming", tmp_path / "out"
    incoming.mkdir()
    table = records(9_000, 11, seed=5)
    config = streaming_config(tmp_path, f"state.savepoints.dir={tmp_path / 'savepoints'}")
    p = yf.Pipeline("watched", parallelism=2)
    p.read_parquet(str(incoming), watch="0.2 s", name="files").assign_watermarks("ts", "2 s", idleness="1 s") \
        .window("user", yf.tumbling(WINDOW), [("amount", "count"), ("amount", "sum")]) \
        .write_parquet(str(out))
    want = oracle(table)
    with LocalCluster(config) as cluster:
        client = cluster.submit(p.job_graph(config))
        for index, part in enumerate(range(0, table.num_rows, 1_500)):
            hidden = incoming / f".part-{index}.parquet"
            pq.write_table(table.slice(part, 1_500), hidden)
            hidden.rename(incoming / f"part-{index}.parquet")
        wait_until(lambda: records_out(client, "files") >= table.num_rows, 60,
                   f"the {table.num_rows} records read from the watched directory")
        end = pa.table({"user": ["end"], "ts": [START_MS + 10**9], "amount": [0]}, schema=SCHEMA)
        pq.write_table(end, incoming / ".end.parquet")
        (incoming / ".end.parquet").rename(incoming / "end.parquet")
        wait_until(lambda: out.exists() and committed(out).num_rows >= want.num_rows, 60,
                   f"{want.num_rows} windows committed")
        client.savepoint("", terminate=True).result(60)
        result = client.wait(60)
        assert result.status is JobStatus.FINISHED, result.failure + executor_logs(cluster.log_dir)
        assert result.details.checkpoints["counts"]["completed"] >= 1
    assert_exact(out, want)


def test_a_union_of_two_topics_windows_both(kafka_broker: str, tmp_path: Path) -> None:
    left, right = records(6_000, 7, seed=8), records(6_000, 7, seed=9)
    topics = produce(kafka_broker, left, partitions=2), produce(kafka_broker, right, partitions=1)
    out = tmp_path / "out"
    config = streaming_config(tmp_path)
    p = yf.Pipeline("union", parallelism=2)
    a, b = (p.read_kafka(t, kafka_broker, schema=SCHEMA, stopping_offsets="latest",
                         name=f"source-{i}").assign_watermarks("ts", "2 s")
            for i, t in enumerate(topics))
    a.union(b).window("user", yf.tumbling(WINDOW), [("amount", "count"), ("amount", "sum")]) \
        .write_parquet(str(out))
    with LocalCluster(config) as cluster:
        result = cluster.submit(p.job_graph(config)).wait(120)
        assert result.status is JobStatus.FINISHED, result.failure + executor_logs(cluster.log_dir)
    assert_exact(out, oracle(pa.concat_tables([left, right])))


def test_a_file_sink_without_checkpoints_is_refused_in_one_line(kafka_broker: str,
                                                                  tmp_path: Path) -> None:
    config = Configuration.load(overrides=FAST)
    with pytest.raises(InvalidPipelineError, match="execution.checkpointing.interval"):
        window_job(kafka_broker, "any", tmp_path / "out").job_graph(config)


def test_the_rolling_policy_options_reach_the_streaming_file_sink(kafka_broker: str,
                                                                  tmp_path: Path) -> None:
    from yarnflow.core.streaming.file_sink import StreamingFileSink
    config = Configuration.load(overrides=FAST + [
        "execution.checkpointing.interval=1 s", "sink.rolling-policy.file-size=1 mb",
        "sink.rolling-policy.rollover-interval=2 min", "sink.rolling-policy.inactivity-interval=0"])
    graph = window_job(kafka_broker, "any", tmp_path / "out").job_graph(config)
    sinks = [op for v in graph.vertices.values()
             for op in getattr(v.operator.value, "operators", [v.operator.value])
             if isinstance(op, StreamingFileSink)]
    assert [(s.rolling.max_part_bytes, s.rolling.rollover_interval_ms, s.rolling.inactivity_ms)
            for s in sinks] == [(1 << 20, 120_000, 0)]


def test_a_keyed_process_function_in_a_bounded_job_is_refused_in_one_line(
        tmp_path: Path) -> None:
    class Echo(yf.KeyedProcessFunction):
        def process_element(self, row, ctx, out):
            out.collect(row)
    pq.write_table(records(10, 2, seed=1), tmp_path / "in.parquet")
    p = yf.Pipeline("bounded")
    p.read_parquet(str(tmp_path / "in.parquet")).process("user", Echo(), SCHEMA) \
        .write_parquet(str(tmp_path / "out"))
    with pytest.raises(InvalidPipelineError, match=r"runs only in a streaming job.*read_kafka"):
        p.job_graph(Configuration.load(overrides=FAST))


def test_an_aggregate_on_an_unbounded_input_is_refused_naming_the_alternative(
        kafka_broker: str) -> None:
    p = yf.Pipeline("bad")
    p.read_kafka("t", kafka_broker, schema=SCHEMA).aggregate(["user"], [("amount", "sum")]) \
        .write_parquet("/tmp/never")
    with pytest.raises(InvalidPipelineError, match=r"AggregateOperator cannot run on an "
                                                   r"unbounded input.*window"):
        p.job_graph(Configuration.load(overrides=["execution.checkpointing.interval=1 s"]))


def test_a_missing_topic_and_an_unreachable_broker_are_refused_at_submission(
        kafka_broker: str, tmp_path: Path) -> None:
    config = streaming_config(tmp_path)
    missing = window_job(kafka_broker, "no-such-topic", tmp_path / "a").job_graph(config)
    with pytest.raises(InvalidPipelineError, match="topic 'no-such-topic' does not exist at "
                                                   f"{kafka_broker}"):
        missing.check_outputs()
    nowhere = window_job("127.0.0.1:9", "clicks", tmp_path / "b").job_graph(config)
    with pytest.raises(InvalidPipelineError, match="brokers at 127.0.0.1:9 did not answer"):
        nowhere.check_outputs()


def read_topic(broker: str, topic: str) -> list[dict]:
    """Every record's value in ``topic``, parsed, read to its end."""
    from confluent_kafka import Consumer, TopicPartition
    consumer = Consumer({"bootstrap.servers": broker, "group.id": f"check-{uuid.uuid4().hex[:6]}",
                         "enable.auto.commit": False})
    try:
        partitions = consumer.list_topics(topic, timeout=30).topics[topic].partitions
        ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1]
                for p in partitions}
        consumer.assign([TopicPartition(topic, p, 0) for p in partitions])
        rows: list[dict] = []
        read = {p: 0 for p in partitions}
        deadline = time.monotonic() + 60
        while any(read[p] < ends[p] for p in partitions):
            assert time.monotonic() < deadline, f"read {read} of {ends} in {topic}"
            message = consumer.poll(1.0)
            if message is None or message.error():
                continue
            read[message.partition()] = message.offset() + 1
            rows.append(json.loads(message.value()))
        return rows
    finally:
        consumer.close()


def test_windows_to_kafka_are_written_at_least_once_through_a_kill(
        kafka_broker: str, tmp_path: Path) -> None:
    """Kafka → windows → Kafka, with an executor SIGKILLed mid-way: every window is in
    the output topic with its exact figures (a window written before the kill and after
    the restart may be there twice, never wrong and never missing), each user's
    windows on one partition (keyed by user)."""
    table = records(20_000, 13, seed=11)
    topic = produce(kafka_broker, table, partitions=2)
    target = f"windows-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": kafka_broker})
    for future in admin.create_topics([NewTopic(target, 3, 1)]).values():
        future.result(30)
    progress = tmp_path / "progress"
    config = streaming_config(tmp_path)
    p = yf.Pipeline("windows-to-kafka", parallelism=2)
    p.read_kafka(topic, kafka_broker, schema=SCHEMA, stopping_offsets="latest") \
        .assign_watermarks("ts", "2 s").map(slow_map(progress, 0.2), name="work") \
        .window("user", yf.tumbling(WINDOW), [("amount", "count"), ("amount", "sum")]) \
        .write_kafka(target, kafka_broker, key="user")
    with LocalCluster(config) as cluster:
        client = cluster.submit(p.job_graph(config))
        wait_until(lambda: rows_through(progress) >= 8_000, 120, "8000 rows through the map")
        victim = next(s.resource_id for v in client.details().vertices for s in v.subtasks
                      if s.resource_id and s.state.name == "RUNNING")
        pid = cluster.driver.pid_of(victim)
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        result = client.wait(240)
        assert result.status is JobStatus.FINISHED, result.failure + executor_logs(cluster.log_dir)
        assert result.details.restarts >= 1
    want = oracle(table)
    expected = {(u, s): (c, t) for u, s, c, t in zip(*(want[n].to_pylist() for n in (
        "user", "window_start", "amount_count", "amount_sum")))}
    got: dict[tuple, set] = {}
    for row in read_topic(kafka_broker, target):
        got.setdefault((row["user"], int(row["window_start"])), set()).add(
            (row["amount_count"], row["amount_sum"]))
    assert set(got) == set(expected), "windows missing or made up"
    wrong = {k: v for k, v in got.items() if v != {expected[k]}}
    assert not wrong, f"windows with wrong figures: {list(wrong.items())[:5]}"


def test_a_batch_job_writes_to_kafka_and_a_missing_topic_is_refused_in_one_line(
        kafka_broker: str, tmp_path: Path) -> None:
    table = records(3_000, 5, seed=12)
    pq.write_table(table, tmp_path / "in.parquet")
    target = f"rows-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": kafka_broker})
    for future in admin.create_topics([NewTopic(target, 2, 1)]).values():
        future.result(30)
    config = Configuration.load(overrides=FAST)
    p = yf.Pipeline("rows-to-kafka", parallelism=2)
    p.read_parquet(str(tmp_path / "in.parquet")).write_kafka(target, kafka_broker)
    with LocalCluster(config) as cluster:
        result = cluster.submit(p.job_graph(config)).wait(120)
        assert result.status is JobStatus.FINISHED, result.failure
    rows = read_topic(kafka_broker, target)
    assert sorted((r["user"], r["ts"], r["amount"]) for r in rows) == sorted(
        zip(*(table[n].to_pylist() for n in ("user", "ts", "amount"))))
    missing = yf.Pipeline("to-nowhere")
    missing.read_parquet(str(tmp_path / "in.parquet")).write_kafka("no-such-topic", kafka_broker)
    graph = missing.job_graph(config)
    with pytest.raises(InvalidPipelineError, match="topic 'no-such-topic' does not exist"):
        graph.check_outputs()


def test_session_windows_from_kafka_match_a_record_at_a_time_oracle(
        kafka_broker: str, tmp_path: Path) -> None:
    """Each user's sessions (a gap of 500 ms, records shuffled within 600 ms across two
    partitions and two subtasks) equal those built one record at a time in time order."""
    table = records(6_000, 7, seed=13)
    topic = produce(kafka_broker, table, partitions=2)
    out = tmp_path / "out"
    config = streaming_config(tmp_path)
    p = yf.Pipeline("sessions", parallelism=2)
    p.read_kafka(topic, kafka_broker, schema=SCHEMA, stopping_offsets="latest") \
        .assign_watermarks("ts", "2 s") \
        .window("user", yf.session("500 ms"), [("amount", "count"), ("amount", "sum")]) \
        .write_parquet(str(out))
    with LocalCluster(config) as cluster:
        result = cluster.submit(p.job_graph(config)).wait(120)
        assert result.status is JobStatus.FINISHED, result.failure + executor_logs(cluster.log_dir)
    got = ds.dataset(str(out), format="parquet").to_table()
    got_rows = sorted(zip(got["user"].to_pylist(), got["window_start"].to_pylist(),
                          got["window_end"].to_pylist(), got["amount_count"].to_pylist(),
                          got["amount_sum"].to_pylist()))
    want, current = [], None
    for user, ts, amount in sorted(zip(*(table[n].to_pylist() for n in ("user", "ts", "amount")))):
        if current and current[0] == user and ts <= current[2]:
            current = [user, current[1], max(current[2], ts + 500), current[3] + 1,
                       current[4] + amount]
            continue
        if current:
            want.append(tuple(current))
        current = [user, ts, ts + 500, 1, amount]
    want.append(tuple(current))
    assert got_rows == sorted(want)


def test_a_keyed_process_function_with_state_and_timers_matches_the_windows_oracle(
        kafka_broker: str, tmp_path: Path) -> None:
    """Tumbling windows written by hand as a keyed process function: each user's count
    and sum in value state per window, an event-time timer at the window's end that
    emits and clears them; an executor is SIGKILLed mid-way (state and timers restore
    from the checkpoint). The output equals the windows' oracle, each window once."""
    class ByHand(yf.KeyedProcessFunction):
        def open(self, ctx):
            self.sums = ctx.map_state("sums")          # window start -> (count, sum)

        def process_element(self, row, ctx, out):
            start = ctx.timestamp - ctx.timestamp % 10_000
            count, total = self.sums.get(start, (0, 0))
            self.sums.put(start, (count + 1, total + row["amount"]))
            ctx.register_event_time_timer(start + 10_000 - 1)

        def on_timer(self, timestamp, ctx, out):
            start = timestamp + 1 - 10_000
            count, total = self.sums.get(start)
            out.collect({"user": ctx.current_key[0], "window_start": start,
                         "amount_count": count, "amount_sum": total})
            self.sums.remove(start)

    table = records(20_000, 11, seed=14)
    topic = produce(kafka_broker, table, partitions=2)
    out, progress = tmp_path / "out", tmp_path / "progress"
    schema = pa.schema([("user", pa.string()), ("window_start", pa.int64()),
                        ("amount_count", pa.int64()), ("amount_sum", pa.int64())])
    config = streaming_config(tmp_path)
    p = yf.Pipeline("by-hand", parallelism=2)
    p.read_kafka(topic, kafka_broker, schema=SCHEMA, stopping_offsets="latest") \
        .assign_watermarks("ts", "2 s").map(slow_map(progress, 0.2), name="work") \
        .process("user", ByHand(), schema).write_parquet(str(out))
    with LocalCluster(config) as cluster:
        client = cluster.submit(p.job_graph(config))
        wait_until(lambda: rows_through(progress) >= 8_000, 120, "8000 rows through the map")
        victim = next(s.resource_id for v in client.details().vertices for s in v.subtasks
                      if s.resource_id and s.state.name == "RUNNING")
        os.kill(cluster.driver.pid_of(victim), signal.SIGKILL)
        result = client.wait(240)
        assert result.status is JobStatus.FINISHED, result.failure + executor_logs(cluster.log_dir)
        assert result.details.restarts >= 1
    assert_exact(out, oracle(table))
