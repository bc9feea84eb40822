"""Operator chaining off and on in the same run (issue 55). Prints one JSON object.

    python bench/chaining.py                 # TPC-H Q1's shape on `local`, then a session
    python bench/chaining.py --local-only    # no YARN cluster: the Q1 figures alone

The session part runs on the YARN test cluster (`docker-hadoop/native/cluster up`, or
the dockerised cluster's edge host), as bench/session_latency.py does.

- tasks_off, tasks_on: the tasks (subtasks of every vertex) of the Q1 job with chaining
  off and on: source -> filter -> map -> aggregate -> sink is 5 vertices unchained, 2
  chains (source -> shipdate -> prep, then aggregate -> sink) chained.
- q1_s_off, q1_s_on: that job on --rows generated lineitem rows (Parquet, --files files)
  on a warm `local` cluster, submission to end; median of --repeats, off and on taken
  in turn so that a drift of the machine falls on both. q1_ratio = on / off (goal:
  at most 0.85). exact: both outputs equal pyarrow's own Q1 of the same rows.
- jobs_per_minute, jobs_per_minute_off: --jobs back-to-back jobs of
  bench/session_latency.py (source, map, Parquet sink at parallelism 4; 12 tasks
  unchained, 4 chained) in one warm session, chaining on and off;
  jobs_per_minute_hdfs_bound: the most jobs a minute this cluster's HDFS allows
  (bench/session_latency.py's hdfs_floor_ms), measured in the same run;
  session_ratio = jobs_per_minute / jobs_per_minute_hdfs_bound (goal: at least 0.8).
- session_phases_ms: where the chained jobs' time went (medians): the client's first
  step to the job's start (its graph built and submitted, its JobMaster made, its
  output set up), to its last subtask DEPLOYING (slots), RUNNING, FINISHED (the
  subtasks' work, their part files written), to the job's end (the commit), to the
  client seeing it; beside hdfs_floor_steps_ms, the HDFS work each phase holds.
"""
from __future__ import annotations

import argparse
import datetime
import itertools
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

EPOCH = datetime.date(1970, 1, 1).toordinal()     # date32 counts days from it
CUTOFF = datetime.date(1998, 9, 2)          # Q1's DATE '1998-12-01' - INTERVAL '90' DAY
KEYS = ["l_returnflag", "l_linestatus"]
AGGREGATIONS = [("l_quantity", "sum"), ("l_extendedprice", "sum"), ("disc_price", "sum"),
                ("charge", "sum"), ("l_quantity", "mean"), ("l_extendedprice", "mean"),
                ("l_discount", "mean"), ("l_quantity", "count")]
OFF, ON = "pipeline.operator-chaining.enabled=false", "pipeline.operator-chaining.enabled=true"


def generate(directory: Path, rows: int, files: int) -> None:
    """Lineitem's Q1 columns as dbgen draws them (flags, quantities 1-50, prices,
    discounts 0-0.10, taxes 0-0.08, ship dates over 1992-1998: about 98 % before
    the cutoff)."""
    rng = np.random.default_rng(55)
    start = datetime.date(1992, 1, 2).toordinal()
    for part, n in enumerate(len(share) for share in np.array_split(np.arange(rows), files)):
        shipped = rng.integers(start, datetime.date(1998, 12, 1).toordinal(), n)
        returned = np.where(shipped > datetime.date(1995, 6, 17).toordinal(), "N",
                            rng.choice(np.array(["R", "A"]), n))
        table = pa.table({
            "l_quantity": pa.array(rng.integers(1, 51, n).astype(np.float64)),
            "l_extendedprice": pa.array(np.round(rng.uniform(900, 105_000, n), 2)),
            "l_discount": pa.array(rng.integers(0, 11, n) / 100),
            "l_tax": pa.array(rng.integers(0, 9, n) / 100),
            "l_returnflag": pa.array(returned),
            "l_linestatus": pa.array(np.where(shipped > datetime.date(1995, 6, 17).toordinal(),
                                              "O", "F")),
            "l_shipdate": pa.array((shipped - EPOCH).astype(np.int32), pa.int32()).cast(pa.date32()),
        })
        pq.write_table(table, directory / f"part-{part:03d}.parquet", row_group_size=256 * 1024)


def shipped_by_cutoff(batch: pa.RecordBatch) -> Any:
    return pc.less_equal(batch["l_shipdate"], pa.scalar(CUTOFF, pa.date32()))


def prices(batch: pa.RecordBatch) -> pa.RecordBatch:
    disc_price = pc.multiply(batch["l_extendedprice"], pc.subtract(1, batch["l_discount"]))
    charge = pc.multiply(disc_price, pc.add(1, batch["l_tax"]))
    return pa.RecordBatch.from_arrays(
        [batch["l_returnflag"], batch["l_linestatus"], batch["l_quantity"],
         batch["l_extendedprice"], batch["l_discount"], disc_price, charge],
        names=[*KEYS, "l_quantity", "l_extendedprice", "l_discount", "disc_price", "charge"])


def q1(data: str, out: str, parallelism: int) -> Any:
    import yarnflow.client as yf
    p = yf.Pipeline("q1", parallelism=parallelism)
    p.read_parquet(data, name="parquet-source") \
     .filter(shipped_by_cutoff, name="shipdate") \
     .map(prices, name="prep") \
     .aggregate(KEYS, AGGREGATIONS) \
     .write_parquet(out)
    return p


def reference(data: str) -> pa.Table:
    table = pq.read_table(data)
    kept = table.filter(shipped_by_cutoff(table))
    batches = [prices(b) for b in kept.to_batches()]
    return pa.Table.from_batches(batches).group_by(KEYS).aggregate(AGGREGATIONS)


def same(out: str, want: pa.Table) -> bool:
    got = pq.read_table(out).select(want.column_names).sort_by([(k, "ascending") for k in KEYS])
    want = want.sort_by([(k, "ascending") for k in KEYS])
    if got.num_rows != want.num_rows:
        return False
    for name in want.column_names:       # sums over millions of doubles: to 1e-9 relative
        a, b = got[name].to_pylist(), want[name].to_pylist()
        if not all(x == y if isinstance(x, str) or isinstance(x, int) else
                   abs(x - y) <= 1e-9 * max(1.0, abs(y)) for x, y in zip(a, b)):
            return False
    return True


def measure_q1(args: argparse.Namespace) -> dict[str, Any]:
    from yarnflow.client.targets.local import LocalCluster
    from yarnflow.conf import Configuration
    from yarnflow.core.status import JobStatus
    with tempfile.TemporaryDirectory() as scratch:
        data = Path(scratch) / "lineitem"
        data.mkdir()
        generate(data, args.rows, args.files)
        want = reference(str(data))
        outputs = (str(Path(scratch) / f"out-{i}") for i in itertools.count())
        configs = {name: Configuration.load(overrides=[setting, "heartbeat.interval=1 s"])
                   for name, setting in (("off", OFF), ("on", ON))}
        figures: dict[str, Any] = {}
        seconds: dict[str, list[float]] = {"off": [], "on": []}
        exact = True
        clusters = {name: LocalCluster(config) for name, config in configs.items()}
        try:
            for name, cluster in clusters.items():       # each warm: executors started
                cluster.__enter__()
                graph = q1(str(data), next(outputs), args.parallelism).job_graph(configs[name])
                figures[f"tasks_{name}"] = sum(v.parallelism for v in graph.vertices.values())
                if cluster.submit(graph).wait(1800).status is not JobStatus.FINISHED:
                    raise SystemExit(f"the warm-up Q1 job with chaining {name} failed")
            for _ in range(args.repeats):
                for name in ("off", "on"):
                    out = next(outputs)
                    graph = q1(str(data), out, args.parallelism).job_graph(configs[name])
                    start = time.monotonic()
                    result = clusters[name].submit(graph).wait(1800)
                    seconds[name].append(time.monotonic() - start)
                    if result.status is not JobStatus.FINISHED:
                        raise SystemExit(f"Q1 with chaining {name} failed: {result.failure}")
                    ran = sum(len(v.subtasks) for v in result.details.vertices)
                    if ran != figures[f"tasks_{name}"]:
                        raise SystemExit(f"Q1 with chaining {name} ran {ran} tasks, planned "
                                         f"{figures[f'tasks_{name}']}")
                    exact = exact and same(out, want)
        finally:
            for cluster in clusters.values():
                cluster.__exit__(None, None, None)
    figures["q1_s_off"] = statistics.median(seconds["off"])
    figures["q1_s_on"] = statistics.median(seconds["on"])
    figures["q1_ratio"] = figures["q1_s_on"] / figures["q1_s_off"]
    figures["exact"] = exact
    return figures


def measure_session(args: argparse.Namespace) -> dict[str, Any]:
    from session_latency import (CONF, execute, measure_hdfs_floor, poll, start_session)
    from yarn_cluster import ClusterScratch
    from yarnflow.client.targets.dispatcher_client import DispatcherClient
    from yarnflow.conf import Configuration
    figures: dict[str, Any] = {}
    with ClusterScratch("chaining") as scratch:
        outputs = (f"{scratch.uri}/{i}" for i in itertools.count())
        app_id = start_session()
        try:
            with DispatcherClient(app_id, timeout=30) as session:
                for name, setting in (("warm-up", ON), ("_off", OFF), ("", ON)):
                    config = Configuration.load(overrides=CONF + [
                        f"yarn.application.id={app_id}", "execution.attached=false", setting])
                    poll(lambda: session.overview().free_slots >= 4, 60, "4 free warm slots")
                    jobs = 1 if name == "warm-up" else args.jobs
                    ran: list[tuple[float, Any, float]] = []    # (asked, job id, seen ended)
                    start = time.monotonic()
                    for i in range(jobs):
                        asked = time.time()
                        job_id = execute("yarn-session", config, next(outputs), 0.0).job_id
                        status = poll(lambda: (s := session.details(job_id).status)
                                      .is_globally_terminal and s.value, 120, f"job {i} to end")
                        ran.append((asked, job_id, time.time()))
                        if status != "FINISHED":
                            raise SystemExit(f"session job {i} ended {status}: "
                                             f"{session.details(job_id).failure}")
                    if name != "warm-up":
                        figures[f"jobs_per_minute{name}"] = jobs / (time.monotonic() - start) * 60
                    if name == "":
                        figures["session_phases_ms"] = phases(session, ran)
                figures.update(measure_hdfs_floor(scratch))
        finally:
            subprocess.run([sys.executable, "-m", "yarnflow.client.cli", "session", "stop",
                            app_id], capture_output=True, timeout=300)
    figures["session_ratio"] = figures["jobs_per_minute"] / figures["jobs_per_minute_hdfs_bound"]
    return figures


PHASES = ("submit_to_start", "start_to_deployed", "deployed_to_running",
          "running_to_finished", "finished_to_end", "end_to_seen")


def phases(session: Any, ran: list[tuple[float, Any, float]]) -> dict[str, float | None]:
    """Where the chained session jobs' time went, medians in ms (None: no job said);
    the phases of a job add up to its time from the client's first step to its seeing
    the end. Asked of the session once the jobs were timed, so the asking is not in
    jobs_per_minute."""
    from session_latency import last_running
    spans: dict[str, list[float]] = {phase: [] for phase in PHASES}
    for asked, job_id, seen in ran:
        details = session.details(job_id)
        last = [last_running(details, state) for state in ("DEPLOYING", "RUNNING", "FINISHED")]
        stamps = [asked, details.start_time, *last, details.end_time, seen]
        if not all(stamps):      # a subtask that skipped a state: its job is left out
            continue
        for phase, begun, ended in zip(PHASES, stamps, stamps[1:]):
            spans[phase].append((ended - begun) * 1000)
    return {phase: round(statistics.median(ms), 1) if ms else None for phase, ms in spans.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=6_000_000)
    parser.add_argument("--files", type=int, default=8)
    parser.add_argument("--parallelism", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=50, help="back-to-back session jobs, each way")
    parser.add_argument("--local-only", action="store_true", help="no session part (no cluster)")
    args = parser.parse_args()
    result = measure_q1(args)
    if not args.local_only:
        result.update(measure_session(args))
    result = {k: round(v, 3) if isinstance(v, float) else v for k, v in result.items()}
    result.update(rows=args.rows, parallelism=args.parallelism, repeats=args.repeats,
                  jobs=0 if args.local_only else args.jobs)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
