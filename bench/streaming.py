"""A streaming job against PyFlink on the same machine, in one run (issue 83). Prints one
JSON object.

    python bench/streaming.py [--records 1000000] [--short]

The job: Kafka (a local KRaft broker, docker-hadoop/kafka/broker; or the one
YARNFLOW_TEST_KAFKA names) → parse JSON → event time (2 s out of order) → keyed
tumbling 10 s window (count, sum) → Parquet, parallelism 2, a checkpoint every 10 s,
on the local target. The topic is a backlog read as fast as the job can
(``stopping_offsets='latest'``), so throughput is the job's maximum.

Throughput is per core: records ÷ CPU seconds of every process of the job (yarnflow:
this process, which hosts the ApplicationMaster, and its executors; PyFlink: its
Python driver, the mini cluster's JVM and its Python workers). Start-up is taken out
by running each job over two topics, of N and 2N records, and taking the difference of
their times and CPU seconds.

- records_per_s_per_core: yarnflow;
- pyflink_records_per_s_per_core: the same job in PyFlink's Python DataStream API
  (apache-flink 2.2.1, its local mini cluster, Flink's Kafka connector
  flink-sql-connector-kafka 5.0.0-2.2 from Maven Central), a Python function called
  per record for the parsing, the timestamps and the aggregate;
- flink_sql_records_per_s_per_core: the same job as Flink SQL through PyFlink's
  TableEnvironment (Java operators end to end), to a blackhole sink;
- checkpoint_cost: yarnflow's throughput (records/s) with checkpoints in effect off
  (an interval longer than the run) ÷ with a checkpoint every 10 s;
  checkpoint_duration_p99_ms over the checkpoints of those runs;
- recovery_s: from an executor's SIGKILL until the restarted source reads again;
- latency_p99_ms: records produced at half yarnflow's maximum throughput; each
  record's Kafka append time to its arrival past the keyed exchange, where the window
  runs (records appended in the first 2 s after every subtask runs are a warm-up, not
  counted);
- exactly_once: the committed output after that kill equals pyarrow's counts.

PyFlink runs in a virtual environment of its own (~/.cache/yarnflow/pyflink-2.2.1,
made on first use; it pins its own dependencies), with Java 17.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Callable

import psutil
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT.parent))
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "yarnflow"
PYFLINK_VERSION = "2.2.1"
CONNECTOR = ("org.apache.flink", "flink-sql-connector-kafka", "5.0.0-2.2")
START_MS = 1_767_225_600_000
USERS = 1000
SCHEMA = pa.schema([("user", pa.string()), ("ts", pa.int64()), ("amount", pa.int64())])


def log(message: str) -> None:
    print(f"streaming bench: {message}", file=sys.stderr, flush=True)


# --- Kafka ---------------------------------------------------------------------------------
def broker() -> str:
    given = os.environ.get("YARNFLOW_TEST_KAFKA")
    if given:
        return given
    state = Path(tempfile.mkdtemp(prefix="yarnflow-bench-kafka-"))
    done = subprocess.run([sys.executable, str(ROOT / "docker-hadoop" / "kafka" / "broker"), "up",
                           "--dir", str(state), "--stop-with", str(os.getpid())],
                          capture_output=True, text=True, timeout=900, check=True)
    return done.stdout.strip().rsplit("=", 1)[-1]


def value(i: int, rng: random.Random) -> bytes:
    return json.dumps({"user": f"user-{rng.randrange(USERS)}",
                       "ts": START_MS + i * 2 + rng.randrange(0, 500),
                       "amount": rng.randrange(100)}).encode()


def produce(address: str, count: int, partitions: int = 2, seed: int = 1) -> str:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic
    topic = f"bench-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": address})
    for future in admin.create_topics([NewTopic(topic, partitions, 1, config={
            "message.timestamp.type": "LogAppendTime"})]).values():
        future.result(30)
    producer = Producer({"bootstrap.servers": address, "linger.ms": 20,
                         "batch.num.messages": 10000, "queue.buffering.max.messages": 500000})
    rng = random.Random(seed)
    for i in range(count):
        while True:
            try:
                producer.produce(topic, value(i, rng), partition=i % partitions)
                break
            except BufferError:
                producer.poll(0.05)
    producer.flush(120)
    return topic


def records_of(address: str, topic: str) -> pa.Table:
    """The topic's records as pyarrow reads them: the oracle's input."""
    from confluent_kafka import Consumer, TopicPartition
    consumer = Consumer({"bootstrap.servers": address, "group.id": f"oracle-{uuid.uuid4().hex}",
                         "enable.auto.commit": False})
    metadata = consumer.list_topics(topic, timeout=10).topics[topic]
    ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
            for p in metadata.partitions}
    consumer.assign([TopicPartition(topic, p, 0) for p in ends])
    values: list[bytes] = []
    while len(values) < sum(ends.values()):
        values.extend(m.value() for m in consumer.consume(10000, 5) if m.error() is None)
    consumer.close()
    import pyarrow.json as pajson
    import io
    return pajson.read_json(io.BytesIO(b"\n".join(values)), parse_options=pajson.ParseOptions(
        explicit_schema=SCHEMA))


def oracle(table: pa.Table) -> pa.Table:
    start = pc.multiply(pc.divide(table["ts"], 10_000), 10_000)
    return table.append_column("window_start", start).group_by(["user", "window_start"]) \
        .aggregate([("amount", "count"), ("amount", "sum")]) \
        .sort_by([("user", "ascending"), ("window_start", "ascending")])


def committed(out: Path) -> pa.Table:
    table = ds.dataset(str(out), format="parquet").to_table()
    return table.select(["user", "window_start", "amount_count", "amount_sum"]).sort_by(
        [("user", "ascending"), ("window_start", "ascending")])


# --- CPU of a process tree -------------------------------------------------------------------
def _rusage_cpu(who: int) -> float:
    import resource
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


class CpuMeter:
    """CPU seconds of a process and all its descendants: sampled while they run, and
    from the kernel's accounts of this process and of the children it reaped (which
    hold what their own reaped children used), whichever is more."""

    def __init__(self, pid: int) -> None:
        self._root = psutil.Process(pid)
        self._seen: dict[int, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _cpu(self, process: psutil.Process) -> float:
        times = process.cpu_times()
        return float(times.user + times.system)

    def _sample_once(self) -> None:
        try:
            processes = [self._root, *self._root.children(recursive=True)]
        except psutil.Error:         # the root has exited
            return
        for process in processes:
            try:
                self._seen[process.pid] = self._cpu(process)
            except psutil.Error:
                pass

    def _sample(self) -> None:
        while not self._stop.wait(0.2):
            self._sample_once()

    def __enter__(self) -> "CpuMeter":
        import resource
        self._own = self._root.pid == os.getpid()
        self._rusage = (_rusage_cpu(resource.RUSAGE_SELF) if self._own else 0.0) + \
            _rusage_cpu(resource.RUSAGE_CHILDREN)
        self._sample_once()
        self._start = dict(self._seen)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        import resource
        self._stop.set()
        self._thread.join()
        self._sample_once()
        self._rusage = (_rusage_cpu(resource.RUSAGE_SELF) if self._own else 0.0) + \
            _rusage_cpu(resource.RUSAGE_CHILDREN) - self._rusage

    @property
    def seconds(self) -> float:
        sampled = sum(v - self._start.get(pid, 0.0) for pid, v in self._seen.items())
        return max(sampled, self._rusage)


# --- yarnflow ----------------------------------------------------------------------------------
def yarnflow_job(address: str, topic: str, out: Path, bounded: bool = True,
                 probe: Callable[[pa.RecordBatch], pa.RecordBatch] | None = None) -> Any:
    import yarnflow.client as yf
    p = yf.Pipeline("bench-streaming", parallelism=2)
    events = p.read_kafka(topic, address, schema=SCHEMA,
                          stopping_offsets="latest" if bounded else None,
                          metadata=("timestamp",) if probe else ())
    events = events.assign_watermarks("ts", "2 s")
    if probe is not None:
        events = events.key_by("user").map(probe, name="probe")
    events.window("user", yf.tumbling("10 s"), [("amount", "count"), ("amount", "sum")]) \
        .write_parquet(str(out))
    return p


def yarnflow_config(workdir: Path, interval: str, *extra: str) -> Any:
    from yarnflow.conf import Configuration
    return Configuration.load(overrides=[
        f"execution.checkpointing.interval={interval}",
        f"state.checkpoints.dir={workdir / 'checkpoints'}", "pipeline.batch-rows=20000",
        *extra])


def run_yarnflow(address: str, topic: str, workdir: Path, interval: str = "10 s"
                 ) -> tuple[float, float, list[float]]:
    """Wall seconds, CPU seconds, checkpoint durations (ms) of one bounded run."""
    from yarnflow.client.targets.local import LocalCluster
    out = workdir / f"out-{uuid.uuid4().hex[:6]}"
    config = yarnflow_config(workdir, interval)
    graph = yarnflow_job(address, topic, out).job_graph(config)
    with CpuMeter(os.getpid()) as cpu:
        started = time.monotonic()
        with LocalCluster(config) as cluster:
            result = cluster.submit(graph).wait(3600)
        wall = time.monotonic() - started
    if result.status.name != "FINISHED":
        raise RuntimeError(f"the yarnflow job ended {result.status.name}: {result.failure}")
    history = result.details.checkpoints.get("history", [])
    return wall, cpu.seconds, [c["end_to_end_duration"] for c in history
                               if c["status"] == "COMPLETED" and not c["is_savepoint"]]


def recovery(address: str, topic: str, workdir: Path, table: pa.Table) -> tuple[float, bool]:
    """Kill an executor mid-run: seconds until the restarted source reads again, and
    whether the committed output is then exact."""
    from yarnflow.client.targets.local import LocalCluster
    out = workdir / "out-recovery"
    config = yarnflow_config(workdir, "2 s", "restart-strategy.exponential-delay.initial-backoff=0.5 s",
                             "restart-strategy.exponential-delay.jitter-factor=0",
                             "heartbeat.interval=0.5 s", "heartbeat.timeout=5 s")
    graph = yarnflow_job(address, topic, out).job_graph(config)
    with LocalCluster(config) as cluster:
        client = cluster.submit(graph)

        def source_records() -> int:
            details = client.details()
            return sum(s.metrics.records_in for v in details.vertices if "kafka" in v.name
                       for s in v.subtasks)
        deadline = time.monotonic() + 300
        while source_records() < table.num_rows // 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        victim = next(s.resource_id for v in client.details().vertices if "kafka" in v.name
                      for s in v.subtasks if s.resource_id)
        restarts = client.details().restarts
        os.kill(cluster.driver.pid_of(victim), signal.SIGKILL)
        killed = time.monotonic()
        ended = client.result_future
        while time.monotonic() < deadline:     # the restarted sources read (or had read all)
            details = client.details()
            if details.restarts > restarts and (source_records() > 0 or ended.done()):
                break
            time.sleep(0.02)
        recovered = time.monotonic() - killed
        result = client.wait(1800)
    exact = result.status.name == "FINISHED" and committed(out).equals(oracle(table))
    return recovered, exact


LATENCY_WARMUP_S = 2.0


def latency(address: str, workdir: Path, rate: float, seconds: float) -> float:
    """p99 ms from Kafka append to arrival past the keyed exchange, at ``rate``/s, of
    the records appended after a warm-up: records are produced from once every subtask
    runs, and those of the first LATENCY_WARMUP_S are not counted (a source's first
    polls join its consumer group and fetch metadata, which the steady state does not)."""
    from yarnflow.client.targets.local import LocalCluster
    from confluent_kafka import Producer
    topic = produce(address, 0)
    samples = workdir / "latency"

    def probe(batch: pa.RecordBatch) -> pa.RecordBatch:
        import numpy as np
        appended = batch.column("kafka_timestamp").to_numpy()
        now = time.time() * 1000.0
        with open(samples, "ab") as f:      # (append time, latency) pairs
            np.stack([appended, now - appended], axis=1).astype(np.float64).tofile(f)
        return batch.drop_columns(["kafka_timestamp"])
    config = yarnflow_config(workdir, "10 s")
    graph = yarnflow_job(address, topic, workdir / "out-latency", bounded=False,
                         probe=probe).job_graph(config)
    producer = Producer({"bootstrap.servers": address, "linger.ms": 5})
    rng = random.Random(3)
    # made before the clock runs: the producing loop only hands records over, so its
    # own CPU takes as little as it can from the job on the same cores
    values = [value(i, rng) for i in range(int(rate * (LATENCY_WARMUP_S + seconds)) + 1)]
    with LocalCluster(config) as cluster:
        client = cluster.submit(graph)
        deadline = time.monotonic() + 120
        while not all(s.state.name == "RUNNING" for v in client.details().vertices
                      for s in v.subtasks):
            if time.monotonic() > deadline:
                raise RuntimeError("the latency job's subtasks were not all RUNNING in 120 s")
            time.sleep(0.05)
        measured_from = (time.time() + LATENCY_WARMUP_S) * 1000.0
        started, sent = time.monotonic(), 0
        while time.monotonic() - started < LATENCY_WARMUP_S + seconds:
            due = int((time.monotonic() - started) * rate)
            while sent < min(due, len(values)):
                try:
                    producer.produce(topic, values[sent], partition=sent % 2)
                except BufferError:        # the producer's queue is full: let it drain
                    producer.poll(0.01)
                    continue
                sent += 1
            producer.poll(0)
            time.sleep(0.002)
        producer.flush(30)
        time.sleep(2.0)
        client.cancel()
        client.wait(60)
    import numpy as np
    pairs = np.fromfile(samples, dtype=np.float64).reshape(-1, 2)
    lags = pairs[pairs[:, 0] >= measured_from, 1]
    return float(np.percentile(lags, 99)) if len(lags) else float("nan")


# --- PyFlink ---------------------------------------------------------------------------------
def pyflink_python() -> tuple[str, str]:
    """PyFlink's interpreter (a virtual environment of its own) and the connector jar."""
    venv = CACHE / f"pyflink-{PYFLINK_VERSION}"
    python = venv / "bin" / "python"
    if not python.exists():
        log(f"installing apache-flink=={PYFLINK_VERSION} into {venv}")
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q",
                        f"apache-flink=={PYFLINK_VERSION}"], check=True)
    group, artifact, version = CONNECTOR
    jar = CACHE / "flink-jars" / f"{artifact}-{version}.jar"
    if not jar.exists():
        jar.parent.mkdir(parents=True, exist_ok=True)
        pom = jar.parent / "pom.xml"
        pom.write_text(f"""<project xmlns="http://maven.apache.org/POM/4.0.0">
<modelVersion>4.0.0</modelVersion><groupId>bench</groupId><artifactId>jars</artifactId>
<version>1</version><packaging>pom</packaging><dependencies><dependency><groupId>{group}</groupId>
<artifactId>{artifact}</artifactId><version>{version}</version></dependency></dependencies></project>""")
        subprocess.run(["mvn", "-B", "-q", "-f", str(pom),
                        "org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy-dependencies",
                        "-DexcludeTransitive=true", f"-DoutputDirectory={jar.parent}"], check=True)
    return str(python), str(jar)


PYFLINK_DATASTREAM = textwrap.dedent('''
    import json, sys
    from pyflink.common import Duration, Types, WatermarkStrategy
    from pyflink.common.time import Time
    from pyflink.common.serialization import SimpleStringSchema
    from pyflink.common.watermark_strategy import TimestampAssigner
    from pyflink.datastream import StreamExecutionEnvironment
    from pyflink.datastream.connectors.kafka import KafkaOffsetsInitializer, KafkaSource
    from pyflink.datastream.functions import AggregateFunction
    from pyflink.datastream.window import TumblingEventTimeWindows
    from pyflink.common import Configuration
    broker, topic, jar = sys.argv[1:4]
    config = Configuration()
    config.set_string("python.executable", sys.executable)    # its workers: this venv's
    env = StreamExecutionEnvironment.get_execution_environment(config)
    env.add_jars(f"file://{jar}")
    env.set_parallelism(2)
    env.enable_checkpointing(10000)
    source = KafkaSource.builder().set_bootstrap_servers(broker).set_topics(topic) \\
        .set_group_id("pyflink-bench").set_starting_offsets(KafkaOffsetsInitializer.earliest()) \\
        .set_bounded(KafkaOffsetsInitializer.latest()) \\
        .set_value_only_deserializer(SimpleStringSchema()).build()

    class EventTime(TimestampAssigner):
        def extract_timestamp(self, value, record_timestamp):
            return value[1]

    class CountSum(AggregateFunction):
        def create_accumulator(self):
            return (0, 0)
        def add(self, value, acc):
            return (acc[0] + 1, acc[1] + value[2])
        def get_result(self, acc):
            return acc
        def merge(self, a, b):
            return (a[0] + b[0], a[1] + b[1])

    def parse(text):
        row = json.loads(text)
        return (row["user"], row["ts"], row["amount"])

    events = env.from_source(source, WatermarkStrategy.no_watermarks(), "kafka") \\
        .map(parse, output_type=Types.TUPLE([Types.STRING(), Types.LONG(), Types.LONG()])) \\
        .assign_timestamps_and_watermarks(WatermarkStrategy.for_bounded_out_of_orderness(
            Duration.of_seconds(2)).with_timestamp_assigner(EventTime()))
    events.key_by(lambda r: r[0], key_type=Types.STRING()) \\
        .window(TumblingEventTimeWindows.of(Time.seconds(10))) \\
        .aggregate(CountSum(), accumulator_type=Types.TUPLE([Types.LONG(), Types.LONG()]),
                   output_type=Types.TUPLE([Types.LONG(), Types.LONG()])) \\
        .map(lambda r: r[0], output_type=Types.LONG()).print()
    env.execute("pyflink-bench")
''')

FLINK_SQL = textwrap.dedent('''
    import sys
    from pyflink.table import EnvironmentSettings, TableEnvironment
    broker, topic, jar = sys.argv[1:4]
    t = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    conf = t.get_config()
    conf.set("pipeline.jars", f"file://{jar}")
    conf.set("parallelism.default", "2")
    conf.set("execution.checkpointing.interval", "10 s")
    t.execute_sql(f"""CREATE TABLE events (`user` STRING, ts BIGINT, amount BIGINT,
      rowtime AS TO_TIMESTAMP_LTZ(ts, 3),
      WATERMARK FOR rowtime AS rowtime - INTERVAL '2' SECOND) WITH (
      'connector' = 'kafka', 'topic' = '{topic}', 'properties.bootstrap.servers' = '{broker}',
      'properties.group.id' = 'flink-sql-bench', 'scan.startup.mode' = 'earliest-offset',
      'scan.bounded.mode' = 'latest-offset', 'format' = 'json')""")
    t.execute_sql("""CREATE TABLE sink (`user` STRING, ws TIMESTAMP(3), we TIMESTAMP(3),
      c BIGINT, s BIGINT) WITH ('connector' = 'blackhole')""")
    t.execute_sql("""INSERT INTO sink SELECT `user`, window_start, window_end, COUNT(*),
      SUM(amount) FROM TABLE(TUMBLE(TABLE events, DESCRIPTOR(rowtime), INTERVAL '10' SECOND))
      GROUP BY `user`, window_start, window_end""").wait()
''')


def run_pyflink(python: str, jar: str, script: str, address: str, topic: str
                ) -> tuple[float, float]:
    """Wall and CPU seconds of one PyFlink job, its whole process tree."""
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(script)
    started = time.monotonic()
    proc = subprocess.Popen([python, f.name, address, topic, jar], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    with CpuMeter(proc.pid) as cpu:
        _, err = proc.communicate(timeout=3600)      # reaped here: its CPU is ours to read
    wall = time.monotonic() - started
    os.unlink(f.name)
    if proc.returncode != 0:
        raise RuntimeError(f"the PyFlink job failed:\n{err[-3000:]}")
    return wall, cpu.seconds


def _between(small: float, large: float, records: int) -> float:
    """Records per unit between a run of ``records`` and one of twice as many; where
    start-up dwarfs the work (a short run), the larger run's own average."""
    if large - small < 0.1 * large:
        return 2 * records / large
    return records / (large - small)


def per_core(small: tuple[float, float], large: tuple[float, float], records: int) -> float:
    """Records per CPU second."""
    return _between(small[1], large[1], records)


def per_second(small: tuple[float, float], large: tuple[float, float], records: int) -> float:
    return _between(small[0], large[0], records)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000,
                        help="N: the two topics hold N and 2N records")
    parser.add_argument("--short", action="store_true",
                        help="a small run for the test suite: 20,000 records, no PyFlink")
    parser.add_argument("--latency-seconds", type=float, default=20.0)
    args = parser.parse_args()
    n = 20_000 if args.short else args.records
    address = broker()
    log(f"producing {n} and {2 * n} records to {address}")
    small_topic, large_topic = produce(address, n, seed=1), produce(address, 2 * n, seed=2)
    workdir = Path(tempfile.mkdtemp(prefix="yarnflow-bench-streaming-"))
    result: dict[str, Any] = {"records": n, "parallelism": 2, "checkpoint_interval_s": 10}

    log("yarnflow: checkpoints every 10 s")
    small = run_yarnflow(address, small_topic, workdir)
    large = run_yarnflow(address, large_topic, workdir)
    result["records_per_s_per_core"] = round(per_core(small[:2], large[:2], n))
    result["records_per_s"] = round(per_second(small[:2], large[:2], n))
    log("yarnflow: checkpoints off (an interval longer than the run)")
    small_off = run_yarnflow(address, small_topic, workdir, "1 h")
    large_off = run_yarnflow(address, large_topic, workdir, "1 h")
    result["checkpoint_cost"] = round(per_second(small_off[:2], large_off[:2], n)
                                      / result["records_per_s"], 3)
    durations = small[2] + large[2]
    result["checkpoints"] = len(durations)
    result["checkpoint_duration_p99_ms"] = round(
        statistics.quantiles(durations, n=100)[98] if len(durations) > 1 else
        (durations[0] if durations else float("nan")), 1)

    log("yarnflow: an executor killed")
    table = records_of(address, small_topic)
    result["recovery_s"], result["exactly_once"] = [round(v, 2) if isinstance(v, float) else v
                                                    for v in recovery(address, small_topic,
                                                                      workdir, table)]
    rate = result["records_per_s"] / 2
    log(f"yarnflow: latency at {rate:.0f} records/s")
    result["latency_rate_per_s"] = round(rate)
    result["latency_p99_ms"] = round(latency(address, workdir, rate,
                                             5.0 if args.short else args.latency_seconds), 1)

    if not args.short:
        python, jar = pyflink_python()
        log("PyFlink: the Python DataStream API")
        small_pf = run_pyflink(python, jar, PYFLINK_DATASTREAM, address, small_topic)
        large_pf = run_pyflink(python, jar, PYFLINK_DATASTREAM, address, large_topic)
        result["pyflink_records_per_s_per_core"] = round(per_core(small_pf, large_pf, n))
        log("PyFlink: Flink SQL")
        small_sql = run_pyflink(python, jar, FLINK_SQL, address, small_topic)
        large_sql = run_pyflink(python, jar, FLINK_SQL, address, large_topic)
        result["flink_sql_records_per_s_per_core"] = round(per_core(small_sql, large_sql, n))
        result["vs_pyflink"] = round(result["records_per_s_per_core"]
                                     / result["pyflink_records_per_s_per_core"], 2)
        result["vs_flink_sql"] = round(result["records_per_s_per_core"]
                                       / result["flink_sql_records_per_s_per_core"], 2)
        result["pyflink_version"] = PYFLINK_VERSION
    print(json.dumps(result))      # one line: the last line of the output is the figures


if __name__ == "__main__":
    main()
