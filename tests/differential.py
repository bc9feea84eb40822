"""The random differential run: random pipelines over every relational operator, each
output checked against DuckDB's answer to the same query, with executors killed or
frozen and control-plane calls lost while the jobs run.

    python -m tests.differential --seed 7 --jobs 200 --faults kill,lose [--spill]

Each job is a random tree (depth 1-3) of filters, selects, joins of every type and
strategy (self-joins included), grouped and global aggregates, distincts and unions
(a DataSet with a filter of itself included: the shapes that hung stage-by-stage
scheduling), optionally ended by a sort, a top-N or a limit, over three small
tables with nulls; it runs with random settings (parallelism 1-3, EAGER or
LAZY_FROM_SOURCES, chaining, adaptive execution, aggregation phases) on one warm
``local`` cluster, ``--concurrency`` jobs at a time, and is written as Parquet. The
same tree is one SQL query for DuckDB. A sort's output must also be in order, a
top-N's keys those of SQL's ``ORDER BY ... LIMIT``, a limit's rows some of its
input's.

Faults (``--faults``, comma-separated): ``kill`` SIGKILLs an executor that runs one
of the job's subtasks at a random moment; ``freeze`` SIGSTOPs one instead (it is
lost at heartbeat.timeout); ``lose`` makes the cluster lose 1 % of every call, 1 %
of every answer and duplicate 2 % (``test.rpc.faults``). Prints one JSON object:
jobs, faults injected, and the outcomes (exact, wrong, hung, failed), with the
first wrong, hung or failed jobs described so each can be run again alone
(``--only INDEX`` with the same seed).

``tests/integration/test_differential.py`` runs a short seeded run in the suite.
"""
from __future__ import annotations

import argparse
import collections
import json
import math
import os
import random
import signal
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

import yarnflow.client as yf
from yarnflow.appmaster.jobmaster.executiongraph import ExecutionState, JobStatus
from yarnflow.client.targets.local import LocalCluster
from yarnflow.conf import Configuration

INT, STR, FLOAT = "int", "str", "float"
Columns = list[tuple[str, str]]          # (name, kind), in order
BASE: Columns = [("k", INT), ("g", STR), ("v", INT)]
TABLES = ("t0", "t1", "t2")
FAULTS = ("kill", "freeze", "lose")
LOSSY_CALLS = "*=drop:0.01;*=drop-answer:0.01;*=duplicate:0.02"
RUNNING_STATES = (ExecutionState.DEPLOYING, ExecutionState.INITIALIZING, ExecutionState.RUNNING)


def tables(rng: random.Random) -> dict[str, pa.Table]:
    """Three small tables of one schema, with nulls in every column; one may be empty."""
    out = {}
    for name in TABLES:
        rows = rng.choice([0, 1, 7, 60, 250, 600]) if rng.random() < 0.2 else rng.randint(20, 400)

        def maybe(value: Any) -> Any:
            return None if rng.random() < 0.1 else value
        out[name] = pa.table({
            "k": pa.array([maybe(rng.randint(0, 9)) for _ in range(rows)], pa.int64()),
            "g": pa.array([maybe(rng.choice("abcde")) for _ in range(rows)], pa.string()),
            "v": pa.array([maybe(rng.randint(-50, 50)) for _ in range(rows)], pa.int64()),
        })
    return out


def q(name: str) -> str:
    return '"' + name + '"'


# --- the plan: one tree, built as a pipeline and written as SQL ----------------------------
class Node:
    """One operator of the random tree: ``columns`` it yields, the DataSet it builds
    (once per pipeline, so a node used twice feeds two consumers), its SQL."""
    columns: Columns

    def __init__(self) -> None:
        self._built: dict[int, yf.DataSet] = {}

    def dataset(self, p: yf.Pipeline, data: dict[str, pa.Table]) -> yf.DataSet:
        if id(p) not in self._built:
            self._built[id(p)] = self.build(p, data)
        return self._built[id(p)]

    def build(self, p: yf.Pipeline, data: dict[str, pa.Table]) -> yf.DataSet:
        raise NotImplementedError

    def sql(self) -> str:
        raise NotImplementedError

    def describe(self) -> str:
        raise NotImplementedError


class Source(Node):
    def __init__(self, table: str) -> None:
        super().__init__()
        self.table, self.columns = table, list(BASE)

    def build(self, p: yf.Pipeline, data: dict[str, pa.Table]) -> yf.DataSet:
        return p.from_arrow(data[self.table], name=self.table)

    def sql(self) -> str:
        return f"SELECT * FROM {self.table}"

    def describe(self) -> str:
        return self.table


_COMPARE: dict[str, tuple[Callable[..., Any], str]] = {
    "gt": (pc.greater, ">"), "lt": (pc.less, "<"), "eq": (pc.equal, "="),
    "ne": (pc.not_equal, "<>")}


class Filter(Node):
    def __init__(self, child: Node, column: str, op: str, value: Any) -> None:
        super().__init__()
        self.child, self.column, self.op, self.value = child, column, op, value
        self.columns = child.columns

    def build(self, p: yf.Pipeline, data: dict[str, pa.Table]) -> yf.DataSet:
        fn, column, value = _COMPARE[self.op][0], self.column, self.value
        return self.child.dataset(p, data).filter(lambda b: fn(b[column], value), name="filter")

    def sql(self) -> str:
        value = f"'{self.value}'" if isinstance(self.value, str) else self.value
        return f"SELECT * FROM ({self.child.sql()}) WHERE {q(self.column)} {_COMPARE[self.op][1]} {value}"

    def describe(self) -> str:
        return f"filter({self.child.describe()}, {self.column} {self.op} {self.value!r})"


class Select(Node):
    """The named columns, in that order; as ``Distinct``, each combination of them once."""
    distinct = False

    def __init__(self, child: Node, names: list[str]) -> None:
        super().__init__()
        self.child, self.names = child, names
        kinds = dict(child.columns)
        self.columns = [(n, kinds[n]) for n in names]

    def build(self, p: yf.Pipeline, data: dict[str, pa.Table]) -> yf.DataSet:
        ds = self.child.dataset(p, data)
        return ds.distinct(*self.names) if self.distinct else ds.select(*self.names)

    def sql(self) -> str:
        return (f"SELECT {'DISTINCT ' if self.distinct else ''}{', '.join(map(q, self.names))} "
                f"FROM ({self.child.sql()})")

    def describe(self) -> str:
        return f"{'distinct' if self.distinct else 'select'}({self.child.describe()}, {self.names})"


class Distinct(Select):
    distinct = True


class Join(Node):
    def __init__(self, left: Node, right: Node, key: str, how: str, strategy: str) -> None:
        super().__init__()
        self.left, self.right, self.key, self.how, self.strategy = left, right, key, how, strategy
        if how in ("semi", "anti"):
            self.columns = list(left.columns)
        else:
            names = {n for n, _ in left.columns}
            self.right_out = [(n, (n + "_right") if n in names else n, kind)
                              for n, kind in right.columns if n != key]
            self.columns = list(left.columns) + [(out, kind) for _, out, kind in self.right_out]

    def build(self, p: yf.Pipeline, data: dict[str, pa.Table]) -> yf.DataSet:
        return self.left.dataset(p, data).join(self.right.dataset(p, data), on=self.key,
                                               how=self.how, strategy=self.strategy)

    def sql(self) -> str:
        key = q(self.key)
        if self.how in ("semi", "anti"):
            exists = "EXISTS" if self.how == "semi" else "NOT EXISTS"
            return (f"SELECT * FROM ({self.left.sql()}) l WHERE {exists} "
                    f"(SELECT 1 FROM ({self.right.sql()}) r WHERE r.{key} = l.{key})")
        chosen = [f"COALESCE(l.{key}, r.{key}) AS {key}" if n == self.key else f"l.{q(n)}"
                  for n, _ in self.left.columns]
        chosen += [f"r.{q(n)} AS {q(out)}" for n, out, _ in self.right_out]
        how = {"inner": "INNER", "left": "LEFT", "right": "RIGHT", "full": "FULL"}[self.how]
        return (f"SELECT {', '.join(chosen)} FROM ({self.left.sql()}) l {how} JOIN "
                f"({self.right.sql()}) r ON l.{key} = r.{key}")

    def describe(self) -> str:
        return (f"join({self.left.describe()}, {self.right.describe()}, on={self.key}, "
                f"how={self.how}, strategy={self.strategy})")


_SQL_AGG = {"sum": "CAST(sum({c}) AS BIGINT)", "count": "count({c})", "min": "min({c})",
            "max": "max({c})", "mean": "avg({c})"}


class Aggregate(Node):
    def __init__(self, child: Node, keys: list[str], aggs: list[tuple[str, str]]) -> None:
        super().__init__()
        self.child, self.keys, self.aggs = child, keys, aggs
        kinds = dict(child.columns)
        self.columns = [(k, kinds[k]) for k in keys] + [
            (f"{c}_{fn}", FLOAT if fn == "mean" else INT if fn in ("sum", "count") else kinds[c])
            for c, fn in aggs]

    def build(self, p: yf.Pipeline, data: dict[str, pa.Table]) -> yf.DataSet:
        return self.child.dataset(p, data).aggregate(self.keys, self.aggs)

    def sql(self) -> str:
        chosen = [q(k) for k in self.keys] + [
            _SQL_AGG[fn].format(c=q(c)) + f" AS {q(f'{c}_{fn}')}" for c, fn in self.aggs]
        group = f" GROUP BY {', '.join(map(q, self.keys))}" if self.keys else ""
        return f"SELECT {', '.join(chosen)} FROM ({self.child.sql()}){group}"

    def describe(self) -> str:
        return f"aggregate({self.child.describe()}, {self.keys}, {self.aggs})"


class Union(Node):
    def __init__(self, first: Node, second: Node) -> None:
        super().__init__()
        self.first, self.second, self.columns = first, second, first.columns

    def build(self, p: yf.Pipeline, data: dict[str, pa.Table]) -> yf.DataSet:
        return self.first.dataset(p, data).union(self.second.dataset(p, data))

    def sql(self) -> str:
        return f"({self.first.sql()}) UNION ALL ({self.second.sql()})"

    def describe(self) -> str:
        return f"union({self.first.describe()}, {self.second.describe()})"


@dataclass
class Ending:
    """How the tree ends: as it is, or sorted, topped or limited (each checked its way)."""
    kind: str = "none"                  # none, sort, top, limit
    by: list[str] = field(default_factory=list)
    descending: list[bool] = field(default_factory=list)
    n: int = 0

    def apply(self, ds: yf.DataSet) -> yf.DataSet:
        if self.kind == "sort":
            return ds.sort(*self.by, descending=self.descending)
        if self.kind == "top":
            return ds.top(self.n, self.by, descending=self.descending)
        if self.kind == "limit":
            return ds.limit(self.n)
        return ds

    def order_sql(self) -> str:
        return ", ".join(f"{q(c)} {'DESC' if d else 'ASC'} NULLS LAST"
                         for c, d in zip(self.by, self.descending))


# --- random trees ------------------------------------------------------------------------------
class Generator:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def tree(self, depth: int) -> Node:
        rng = self.rng
        if depth <= 0 or rng.random() < 0.15:
            return Source(rng.choice(TABLES))
        child = self.tree(depth - 1)
        kind = rng.choice(["filter", "select", "join", "join", "aggregate", "distinct",
                           "union"])
        if kind == "filter":
            return self.filter(child)
        if kind == "select":
            keep = [n for n, _ in child.columns if rng.random() < 0.7] or [child.columns[0][0]]
            return Select(child, keep)
        if kind == "join":
            return self.join(child, depth)
        if kind == "aggregate":
            return self.aggregate(child)
        if kind == "distinct":
            names = [n for n, _ in child.columns if rng.random() < 0.5] or [child.columns[-1][0]]
            return Distinct(child, names)
        return self.union(child)

    def filter(self, child: Node) -> Node:
        rng = self.rng
        column, kind = rng.choice(child.columns)
        if kind == STR:
            return Filter(child, column, rng.choice(["eq", "ne", "gt"]), rng.choice("abcde"))
        if rng.random() < 0.1:                   # keeps nothing
            return Filter(child, column, "gt", 10**9)
        return Filter(child, column, rng.choice(["gt", "lt", "eq", "ne"]), rng.randint(-20, 9))

    def join(self, left: Node, depth: int) -> Node:
        rng = self.rng
        roll = rng.random()
        if roll < 0.25:
            right: Node = self.filter(left)     # a self-join, through a filter
        elif roll < 0.35:
            right = left                        # the very same DataSet on both sides
        else:
            right = self.tree(depth - 1)
        right_kinds = dict(right.columns)
        names = [n for n, _ in left.columns]

        def unique(key: str) -> bool:      # yarnflow suffixes a clash once: no second clash
            out = names + [n + "_right" if n in names else n for n in right_kinds if n != key]
            return len(out) == len(set(out))
        keys = [n for n, kind in left.columns if right_kinds.get(n) == kind and unique(n)]
        if not keys:
            return self.filter(left)
        how = rng.choice(["inner", "left", "right", "full", "semi", "anti"])
        strategies = ["auto", "hash", "broadcast"] if how in ("inner", "left", "semi", "anti") \
            else ["auto", "hash"]
        return Join(left, right, rng.choice(keys), how, rng.choice(strategies))

    def aggregate(self, child: Node) -> Node:
        rng = self.rng
        keys = [rng.choice([n for n, kind in child.columns if kind != FLOAT] or [""])] \
            if rng.random() < 0.75 else []
        keys = [k for k in keys if k]
        aggs: list[tuple[str, str]] = []
        for name, kind in child.columns:
            if name in keys or rng.random() < 0.4:
                continue
            fns = ["sum", "count", "min", "max", "mean"] if kind == INT else \
                ["count", "min", "max"] if kind == STR else ["count", "min", "max", "sum"]
            fn = rng.choice(fns)
            if kind == FLOAT and fn == "sum":
                fn = "max"                # float sums differ in the last bits by order
            aggs.append((name, fn))
        if not aggs:
            name = next((n for n, _ in child.columns if n not in keys), child.columns[0][0])
            aggs = [(name, "count")]
        return Aggregate(child, keys, aggs)

    def union(self, first: Node) -> Node:
        rng = self.rng
        if rng.random() < 0.5:
            return Union(first, self.filter(first))       # a DataSet with a filter of itself
        if all(column in BASE for column in first.columns):
            other = Select(Source(rng.choice(TABLES)), [n for n, _ in first.columns])
            return Union(first, self.filter(other) if rng.random() < 0.5 else other)
        return Union(first, self.filter(first))

    def ending(self, columns: Columns) -> Ending:
        rng = self.rng
        kind = rng.choice(["none", "none", "sort", "top", "limit"])
        if kind == "none":
            return Ending()
        by = rng.sample([n for n, _ in columns], k=min(len(columns), rng.randint(1, 2)))
        return Ending(kind, by, [rng.random() < 0.5 for _ in by], rng.choice([0, 1, 5, 40]))


# --- one job -------------------------------------------------------------------------------------
@dataclass
class Job:
    index: int
    seed: int
    tree: Node
    ending: Ending
    data: dict[str, pa.Table]
    settings: dict[str, str]
    parallelism: int
    schedule_mode: str
    fault: str = ""

    def describe(self) -> dict[str, Any]:
        return {"index": self.index, "seed": self.seed, "plan": self.tree.describe(),
                "ending": self.ending.kind if self.ending.kind == "none" else
                f"{self.ending.kind}({self.ending.by}, desc={self.ending.descending}, n={self.ending.n})",
                "rows": {t: self.data[t].num_rows for t in TABLES},
                "settings": self.settings, "parallelism": self.parallelism,
                "schedule_mode": self.schedule_mode, "fault": self.fault}


def make_job(seed: int, index: int, faults: Sequence[str]) -> Job:
    rng = random.Random(seed * 1_000_003 + index)
    gen = Generator(rng)
    tree = gen.tree(rng.randint(1, 3))
    settings = {
        "pipeline.operator-chaining.enabled": rng.choice(["true", "false"]),
        "execution.batch.adaptive.enabled": "true" if rng.random() < 0.25 else "false",
        "table.optimizer.agg-phase-strategy": rng.choice(["auto", "one_phase", "two_phase"]),
        "table.exec.local-hash-agg.adaptive.sampling-threshold": rng.choice(["3", "500000"]),
        "pipeline.batch-rows": str(rng.choice([7, 50, 1000])),
    }
    fault = rng.choice([f for f in faults if f != "lose"]) if \
        any(f != "lose" for f in faults) and rng.random() < 0.8 else ""
    return Job(index, seed, tree, gen.ending(tree.columns), tables(rng), settings,
               rng.randint(1, 3), rng.choice(["EAGER", "LAZY_FROM_SOURCES"]), fault)


def expected(job: Job, duck: Any) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """DuckDB's rows for the job's query, and for the tree without its ending (a limit's
    rows must be some of those)."""
    con = duck.connect()
    try:
        for name, table in job.data.items():
            con.register(name, table)
        inner = job.tree.sql()
        whole = con.sql(inner).to_arrow_table()
        if job.ending.kind == "top":
            ranked = con.sql(f"SELECT * FROM ({inner}) ORDER BY {job.ending.order_sql()} "
                                 f"LIMIT {job.ending.n}").to_arrow_table()
            return rows(ranked), rows(whole)
        return rows(whole), rows(whole)
    finally:
        con.close()


def rows(table: pa.Table) -> list[tuple[Any, ...]]:
    def norm(value: Any) -> Any:
        if isinstance(value, float):
            return None if math.isnan(value) else round(value, 6)
        return value
    return [tuple(norm(v) for v in row.values()) for row in table.to_pylist()]


def read_output(path: Path, columns: Columns) -> pa.Table:
    """The job's Parquet output, part files in name order (a sort's order); a job whose
    output is empty writes no part file."""
    files = sorted(p for p in path.rglob("*.parquet")) if path.exists() else []
    if not files:
        return pa.table({n: pa.array([], pa.null()) for n, _ in columns})
    return pa.concat_tables([pq.read_table(f) for f in files], promote_options="permissive")


def check(job: Job, got: pa.Table, want: list[tuple[Any, ...]],
          whole: list[tuple[Any, ...]]) -> str:
    """"" when the output is right, else what is wrong."""
    names = [n for n, _ in job.tree.columns]
    if got.num_rows and got.column_names != names:
        return f"columns {got.column_names}, expected {names}"
    have = rows(got)
    ending = job.ending
    if ending.kind == "limit":
        if len(have) != min(ending.n, len(whole)):
            return f"{len(have)} rows, expected {min(ending.n, len(whole))}"
        extra = collections.Counter(have) - collections.Counter(whole)
        return f"rows not in the input: {list(extra)[:3]}" if extra else ""
    if ending.kind == "top":
        index = [names.index(c) for c in ending.by]
        keys = [tuple(r[i] for i in index) for r in have]
        expected_keys = [tuple(r[i] for i in index) for r in want]
        return "" if keys == expected_keys else f"top keys {keys[:5]}, expected {expected_keys[:5]}"
    if collections.Counter(have) != collections.Counter(want):
        missing = collections.Counter(want) - collections.Counter(have)
        extra = collections.Counter(have) - collections.Counter(want)
        return (f"{len(have)} rows, expected {len(want)}; missing {list(missing)[:3]}, "
                f"extra {list(extra)[:3]}")
    if ending.kind == "sort":
        index = [names.index(c) for c in ending.by]
        for a, b in zip(have, have[1:]):
            if _after(tuple(a[i] for i in index), tuple(b[i] for i in index), ending.descending):
                return f"out of order: {a} before {b}"
    return ""


def _after(a: tuple[Any, ...], b: tuple[Any, ...], descending: list[bool]) -> bool:
    """Whether key ``a`` must come after ``b`` (nulls last in either direction)."""
    for x, y, desc in zip(a, b, descending):
        if x == y:
            continue
        if x is None:
            return True
        if y is None:
            return False
        return (x < y) if desc else (x > y)
    return False


# --- the run -------------------------------------------------------------------------------------
@dataclass
class Outcome:
    job: Job
    status: str            # exact, wrong, hung, failed
    detail: str = ""
    injected: int = 0
    seconds: float = 0.0


class Run:
    def __init__(self, cluster: LocalCluster, base: Configuration, workdir: Path,
                 timeout: float) -> None:
        self.cluster, self.base, self.workdir, self.timeout = cluster, base, workdir, timeout
        import duckdb
        self.duck = duckdb

    def one(self, job: Job) -> Outcome:
        started = time.monotonic()
        out = self.workdir / f"job-{job.index}"
        config = self.base.copy()
        config.apply_overrides(f"{key}={value}" for key, value in job.settings.items())
        p = yf.Pipeline(f"differential-{job.index}", parallelism=job.parallelism,
                        schedule_mode=job.schedule_mode)
        job.ending.apply(job.tree.dataset(p, job.data)).write_parquet(str(out))
        client = self.cluster.submit(p.job_graph(config))
        injected = self.inject(job, client) if job.fault else 0
        try:
            result = client.wait(self.timeout)
        except TimeoutError:
            where = self.where(client)        # as it hung, before the cancel changes it
            client.cancel()
            return Outcome(job, "hung", where, injected, time.monotonic() - started)
        if result.status is not JobStatus.FINISHED:
            return Outcome(job, "failed", (result.failure or "")[:400], injected,
                           time.monotonic() - started)
        want, whole = expected(job, self.duck)
        wrong = check(job, read_output(out, job.tree.columns), want, whole)
        return Outcome(job, "wrong" if wrong else "exact", wrong, injected,
                       time.monotonic() - started)

    def inject(self, job: Job, client: Any) -> int:
        """Kill or freeze one executor that runs a subtask of the job, at a random
        moment while it runs; 0 when the job ended first."""
        rng = random.Random(job.seed * 7 + job.index)
        deadline = time.monotonic() + rng.uniform(0.0, 1.5)
        while True:
            details = client.details()
            if details.status.is_globally_terminal:
                return 0
            running = [s.resource_id for v in details.vertices for s in v.subtasks
                       if s.resource_id and s.state in RUNNING_STATES]
            if running and time.monotonic() >= deadline:
                pid = self.cluster.driver.pid_of(rng.choice(sorted(running)))
                if pid is None:
                    continue
                try:
                    os.kill(pid, signal.SIGKILL if job.fault == "kill" else signal.SIGSTOP)
                except ProcessLookupError:
                    continue
                return 1
            time.sleep(0.02)

    @staticmethod
    def where(client: Any) -> str:
        try:
            details = client.details()
        except Exception as err:  # noqa: BLE001 - a description only
            return f"no details: {err}"
        return (f"{details.status.value}, {details.restarts} restarts; " + "; ".join(
            f"{v.name}: " + ",".join(f"{s.state.name}#{s.attempt}" for s in v.subtasks)
            for v in details.vertices))[:800]


def cluster_config(faults: Sequence[str], spill: bool, seed: int) -> Configuration:
    overrides = [
        "heartbeat.interval=0.5 s", "heartbeat.timeout=5 s",
        "resourcemanager.taskmanager-timeout=5 s", "slot.idle.timeout=2 s",
        "slot.request.timeout=120 s", "job.cancel.timeout=10 s",
        "taskmanager.network.partition-request-timeout=20 s",
        # faults are frequent here: many restarts, short pauses
        "restart-strategy.type=exponential-delay",
        "restart-strategy.exponential-delay.attempts-before-reset-backoff=40",
        "restart-strategy.exponential-delay.initial-backoff=0.1 s",
        "restart-strategy.exponential-delay.max-backoff=2 s",
    ]
    if "lose" in faults:
        overrides += [f"test.rpc.faults={LOSSY_CALLS}", f"test.rpc.faults.seed={seed}"]
    if spill:
        overrides.append("taskmanager.memory.managed.fraction=0.00001")
    return Configuration.load(overrides=overrides)


def run(seed: int, jobs: int, faults: Sequence[str], spill: bool = False,
        concurrency: int = 2, timeout: float = 180.0, only: int | None = None,
        workdir: Path | None = None) -> dict[str, Any]:
    bad = [f for f in faults if f not in FAULTS]
    if bad:
        raise SystemExit(f"differential: no fault {bad[0]!r}; the faults are {', '.join(FAULTS)}")
    chosen = [make_job(seed, i, faults) for i in ([only] if only is not None else range(jobs))]
    outcomes: list[Outcome] = []
    lock = threading.Lock()
    started = time.monotonic()
    with tempfile.TemporaryDirectory(dir=workdir) as scratch:
        config = cluster_config(faults, spill, seed)
        (Path(scratch) / "logs").mkdir()
        with LocalCluster(config, log_dir=Path(scratch) / "logs") as cluster:
            runner = Run(cluster, config, Path(scratch), timeout)

            def one(job: Job) -> None:
                try:
                    outcome = runner.one(job)
                except Exception as err:  # noqa: BLE001 - planning refused it: counted apart
                    outcome = Outcome(job, "failed", f"{type(err).__name__}: {err}"[:400])
                with lock:
                    outcomes.append(outcome)
            with ThreadPoolExecutor(max(1, concurrency)) as pool:
                list(pool.map(one, chosen))
    counts = collections.Counter(o.status for o in outcomes)
    return {
        "seed": seed, "jobs": len(outcomes), "faults": list(faults), "spill": spill,
        "concurrency": concurrency,
        "injected": {f: sum(o.injected for o in outcomes if o.job.fault == f)
                     for f in FAULTS if f != "lose"} | (
            {"lose": LOSSY_CALLS} if "lose" in faults else {}),
        "exact": counts["exact"], "wrong": counts["wrong"], "hung": counts["hung"],
        "failed": counts["failed"],
        "seconds": round(time.monotonic() - started, 1),
        "problems": [{"status": o.status, "detail": o.detail, **o.job.describe()}
                     for o in sorted(outcomes, key=lambda o: o.job.index)
                     if o.status != "exact"][:10],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=50)
    parser.add_argument("--faults", default="", help=f"comma-separated: {', '.join(FAULTS)}")
    parser.add_argument("--spill", action="store_true",
                        help="managed memory a 100,000th of a slot: every operator spills")
    parser.add_argument("--concurrency", type=int, default=2, help="jobs at a time")
    parser.add_argument("--timeout", type=float, default=180.0,
                        help="seconds a job may take before it counts as hung")
    parser.add_argument("--only", type=int, default=None, help="run only the job of this index")
    args = parser.parse_args(argv)
    faults = [f for f in args.faults.split(",") if f]
    summary = run(args.seed, args.jobs, faults, args.spill, args.concurrency, args.timeout,
                  args.only)
    print(json.dumps(summary))
    return 0 if summary["wrong"] == summary["hung"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
