"""What the web UI costs the ApplicationMaster: the same ~60-second job on `local`, once
with the job's page polled every second and once with no web server at all, in one run.
Prints one JSON object.

    python bench/ui_overhead.py [--seconds 60] [--repeats 1]

Each run is its own process hosting the ApplicationMaster's components (what `local`
runs in the client's process), so its CPU time is the AM's alone: the TaskExecutors are
its subprocesses and not counted, and the poller is this process. The poller asks for
what the page's job view asks for on each refresh (app.js): the job, its plan, its
exceptions, the executors, and each vertex's subtasks; web.refresh-interval is 1 s.

- am_cpu_s_with_ui / am_cpu_s_without: the AM process's user + system CPU seconds from
  submission to the job's end (medians of --repeats);
- ui_core_fraction: (with − without) ÷ the job's seconds with the UI: the share of one
  core the UI adds (goal ≤ 0.05);
- job_s_ratio: job seconds with the UI ÷ without (goal ≤ 1.03);
- polls, requests, request_ms_p50/p95: what the poller did and how fast it was answered;
- exact: every run's output has exactly the input's rows per key.

A short run first, discarded, warms the disk cache and the imports; the order of the two
measured runs alternates across repeats.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PARALLELISM = 2
BATCH_ROWS = 1000
KEYS = 13


def pipeline(seconds: float, out: str):   # the bench's own job
    """Source → a map busy 1 s per batch → keyed aggregate → Parquet: records and
    bytes move through every vertex for the whole job, so each poll has news."""
    import pyarrow as pa

    import yarnflow.client as yf

    def work(batch: pa.RecordBatch) -> pa.RecordBatch:
        time.sleep(1.0)         # the workload: a task busy for a known time per batch
        return batch

    rows = int(seconds) * PARALLELISM * BATCH_ROWS
    table = pa.table({"k": pa.array([i % KEYS for i in range(rows)], pa.int64()),
                      "v": pa.array(range(rows), pa.int64())})
    p = yf.Pipeline("ui-overhead", parallelism=PARALLELISM)
    p.from_arrow(table, name="source").map(work, name="work").key_by("k") \
        .aggregate(["k"], [("v", "count")]).write_parquet(out)
    return p, rows


def am_run(seconds: float, ui: bool, out: str) -> None:
    """One run as the ApplicationMaster's process: prints a line with the page's URL and
    the job id once submitted, and a line with the figures at the end."""
    import psutil
    import pyarrow.parquet as pq

    from yarnflow.conf import Configuration
    from yarnflow.client.targets.local import LocalCluster

    config = Configuration.load(overrides=[
        f"local.web-ui={'true' if ui else 'false'}", "web.refresh-interval=1 s",
        f"pipeline.batch-rows={BATCH_ROWS}", "resourcemanager.taskmanager-timeout=600 s"])
    me = psutil.Process()
    with LocalCluster(config) as cluster:
        graph = pipeline(seconds, out)[0].job_graph(config)
        cpu0, start = me.cpu_times(), time.monotonic()
        client = cluster.submit(graph)
        print(json.dumps({"url": cluster.web.url if cluster.web else "", "job": client.job_id}),
              flush=True)
        result = client.wait(seconds * 10 + 300)
        job_s, cpu1 = time.monotonic() - start, me.cpu_times()
    counts = pq.read_table(out).to_pydict()
    print(json.dumps({"state": result.status.name, "job_s": job_s,
                      "am_cpu_s": (cpu1.user - cpu0.user) + (cpu1.system - cpu0.system),
                      "counts": dict(zip(counts["k"], counts["v_count"]))}), flush=True)


class Poller:
    """The page's job view, refreshed once a second, from outside the AM's process."""

    def __init__(self, url: str, job: str) -> None:
        self.url, self.job = url, job
        self.polls, self.latencies_ms = 0, []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _get(self, path: str) -> dict:
        start = time.perf_counter()
        with urllib.request.urlopen(self.url + path, timeout=10) as response:
            body = json.loads(response.read())
        self.latencies_ms.append((time.perf_counter() - start) * 1000)
        return body

    def _run(self) -> None:
        while not self._stop.wait(1.0):
            try:
                job = self._get(f"jobs/{self.job}")
                for path in (f"jobs/{self.job}/plan", f"jobs/{self.job}/exceptions", "taskmanagers"):
                    self._get(path)
                for vertex in job["vertices"]:
                    self._get(f"jobs/{self.job}/vertices/{vertex['id']}")
                self.polls += 1
            except OSError:
                return          # the run ended and took its server with it

    def start(self) -> "Poller":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=15)


def measured(seconds: float, ui: bool, workdir: Path) -> tuple[dict, Poller | None]:
    out = tempfile.mkdtemp(dir=workdir) + "/out"
    proc = subprocess.Popen([sys.executable, __file__, "--am-run", "--seconds", str(seconds),
                             "--out", out] + (["--ui"] if ui else []),
                            stdout=subprocess.PIPE, text=True, cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.stdout is not None
    submitted = json.loads(proc.stdout.readline() or "{}")
    if "job" not in submitted:
        proc.wait(60)
        sys.exit(f"ui_overhead: the {'UI' if ui else 'plain'} run did not submit its job "
                 f"(exit {proc.returncode})")
    poller = Poller(submitted["url"], submitted["job"]).start() if ui else None
    line = proc.stdout.readline()
    if poller is not None:
        poller.stop()
    if proc.wait(60) != 0 or not line:
        sys.exit(f"ui_overhead: the {'UI' if ui else 'plain'} run failed (exit {proc.returncode})")
    return json.loads(line), poller


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--am-run", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--ui", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.am_run:
        am_run(args.seconds, args.ui, args.out)
        return
    rows = int(args.seconds) * PARALLELISM * BATCH_ROWS
    expected = {k: sum(1 for i in range(rows) if i % KEYS == k) for k in range(KEYS)}
    runs: dict[bool, list[dict]] = {True: [], False: []}
    pollers: list[Poller] = []
    with tempfile.TemporaryDirectory(prefix="yarnflow-ui-bench-") as tmp:
        workdir = Path(tmp)
        measured(min(5.0, args.seconds), True, workdir)          # warm-up, discarded
        for repeat in range(args.repeats):
            for ui in ((False, True) if repeat % 2 == 0 else (True, False)):
                figures, poller = measured(args.seconds, ui, workdir)
                runs[ui].append(figures)
                if poller is not None:
                    pollers.append(poller)
    def median(ui: bool, key: str) -> float:
        return statistics.median(r[key] for r in runs[ui])
    latencies = sorted(ms for p in pollers for ms in p.latencies_ms)
    with_cpu, without_cpu = median(True, "am_cpu_s"), median(False, "am_cpu_s")
    job_with, job_without = median(True, "job_s"), median(False, "job_s")
    print(json.dumps({
        "seconds": args.seconds, "repeats": args.repeats,
        "am_cpu_s_with_ui": round(with_cpu, 3), "am_cpu_s_without": round(without_cpu, 3),
        "ui_core_fraction": round((with_cpu - without_cpu) / job_with, 4),
        "job_s_with_ui": round(job_with, 2), "job_s_without": round(job_without, 2),
        "job_s_ratio": round(job_with / job_without, 4),
        "polls": sum(p.polls for p in pollers), "requests": len(latencies),
        "request_ms_p50": round(latencies[len(latencies) // 2], 2) if latencies else None,
        "request_ms_p95": round(latencies[int(len(latencies) * 0.95)], 2) if latencies else None,
        "exact": all(r["state"] == "FINISHED" and {int(k): v for k, v in r["counts"].items()}
                     == expected for rs in runs.values() for r in rs),
    }))


if __name__ == "__main__":
    main()
