"""Streaming jobs for the dockerised cluster's tests (tests/docker/test_streaming_on_yarn.py).

    python streams.py produce --broker B --topic T [--count N --users U --seed S]
    yarnflow run ... streams.py -- windows --broker B --topic T --out DIR [--work S]
    python streams.py check --out DIR [--count N --users U --seed S]

``produce`` makes the topic and writes the records (events 40 ms apart, shuffled within
600 ms), then one record far in the future into every partition, which moves event time
past every window. ``windows`` is the job: Kafka → watermarks → a map that works
``--work`` seconds a batch (the workload, so that a fault lands mid-job) → each user's
count and sum per 10 s window → Parquet in hourly directories, exactly once; it runs
until it is stopped. ``check`` prints, as JSON, whether the committed output equals what
pyarrow computes from the same records, and whether any window is there twice.
"""
import argparse
import json
import random
import sys
import time

import pyarrow as pa
import pyarrow.compute as pc

import yarnflow.client as yf

SCHEMA = pa.schema([("user", pa.string()), ("ts", pa.int64()), ("amount", pa.int64())])
START_MS = 1_767_225_600_000            # 2026-01-01 00:00 UTC
END_USER = "end"


def records(count: int, users: int, seed: int) -> pa.Table:
    """Events 40 ms apart, shuffled within 600 ms (out of order, never late)."""
    rng = random.Random(seed)
    ts = [START_MS + i * 40 + rng.randrange(0, 600) for i in range(count)]
    return pa.table({"user": [f"user-{rng.randrange(users)}" for _ in range(count)],
                     "ts": ts, "amount": [rng.randrange(100) for _ in range(count)]},
                    schema=SCHEMA)


def oracle(table: pa.Table) -> pa.Table:
    window_start = pc.multiply(pc.divide(table["ts"], 10_000), 10_000)
    return table.append_column("window_start", window_start).group_by(
        ["user", "window_start"]).aggregate([("amount", "count"), ("amount", "sum")]).sort_by(
        [("user", "ascending"), ("window_start", "ascending")])


def produce(args: argparse.Namespace) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": args.broker})
    for future in admin.create_topics([NewTopic(args.topic, args.partitions, 1)]).values():
        future.result(60)
    producer = Producer({"bootstrap.servers": args.broker, "linger.ms": 5})
    table = records(args.count, args.users, args.seed)
    for i, row in enumerate(table.to_pylist()):
        producer.produce(args.topic, json.dumps(row).encode(), partition=i % args.partitions)
        if i % 5_000 == 0:
            producer.poll(0)
    end = {"user": END_USER, "ts": START_MS + 10**9, "amount": 0}
    for partition in range(args.partitions):
        producer.produce(args.topic, json.dumps(end).encode(), partition=partition)
    left = producer.flush(120)
    if left:
        sys.exit(f"{left} records were not acknowledged by {args.broker}")
    print(json.dumps({"topic": args.topic, "records": table.num_rows}))


def windows(args: argparse.Namespace) -> None:
    def work(batch: pa.RecordBatch) -> pa.RecordBatch:
        time.sleep(args.work)
        return batch

    p = yf.Pipeline(args.name, parallelism=args.parallelism)
    p.read_kafka(args.topic, args.broker, schema=SCHEMA) \
        .assign_watermarks("ts", "2 s") \
        .map(work, name="work") \
        .window("user", yf.tumbling("10 s"), [("amount", "count"), ("amount", "sum")]) \
        .map(lambda b: b.append_column("hour_of", pc.cast(b["window_start"], pa.timestamp(
            "ms", tz="UTC"))), name="stamp") \
        .write_parquet(args.out, partition_by=[yf.TimeBuckets("hour_of")])
    p.execute()


def check(args: argparse.Namespace) -> None:
    from yarnflow.client import files
    want = oracle(records(args.count, args.users, args.seed))
    try:
        got = files.read_table(args.out)
    except (OSError, ValueError):       # nothing there yet
        got = pa.table({})
    if "user" not in got.schema.names:  # nothing committed yet (hidden part files only)
        print(json.dumps({"windows": 0, "want": want.num_rows, "exact": False, "twice": 0}))
        return
    got = got.filter(pc.not_equal(got["user"], END_USER))
    keys = [(u, int(s)) for u, s in zip(got["user"].to_pylist(),
                                        pc.cast(got["window_start"], pa.int64()).to_pylist())]
    figures = sorted(zip(keys, got["amount_count"].to_pylist(), got["amount_sum"].to_pylist()))
    expected = sorted(zip(zip(want["user"].to_pylist(), want["window_start"].to_pylist()),
                          want["amount_count"].to_pylist(), want["amount_sum"].to_pylist()))
    print(json.dumps({"windows": len(figures), "want": len(expected),
                      "twice": len(keys) - len(set(keys)), "exact": figures == expected}))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("command", choices=["produce", "windows", "check"])
    parser.add_argument("--broker", default="kafka:9092")
    parser.add_argument("--topic", default="events")
    parser.add_argument("--out", default="")
    parser.add_argument("--name", default="stream-windows")
    parser.add_argument("--count", type=int, default=30_000)
    parser.add_argument("--users", type=int, default=17)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--partitions", type=int, default=3)
    parser.add_argument("--parallelism", type=int, default=2)
    parser.add_argument("--work", type=float, default=0.25, help="seconds a batch in the map")
    args = parser.parse_args()
    {"produce": produce, "windows": windows, "check": check}[args.command](args)


if __name__ == "__main__":
    main()
