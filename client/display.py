"""The live progress display (subtasks deployed / running / finished per vertex) and
the result summary printed when a job ends."""
from __future__ import annotations

import time
from typing import Any, Callable

from rich.console import Console
from rich.live import Live
from rich.table import Table

from yarnflow.rpc.generated import common_pb2

_STATES = [("deploying", (common_pb2.SCHEDULED, common_pb2.DEPLOYING, common_pb2.INITIALIZING)),
           ("running", (common_pb2.RUNNING,)), ("finished", (common_pb2.FINISHED,)),
           ("failed", (common_pb2.FAILED,)),
           ("canceled", (common_pb2.CANCELING, common_pb2.CANCELED))]


def progress_table(details: Any) -> Table:
    table = Table(title=f"{details.name} [{details.status}]", title_justify="left")
    table.add_column("vertex")
    table.add_column("parallelism", justify="right")
    for label, _ in _STATES:
        table.add_column(label, justify="right")
    for vertex in details.vertices:
        counts = [sum(1 for s in vertex.subtasks if s.state in states) for _, states in _STATES]
        table.add_row(vertex.name, str(vertex.parallelism), *map(str, counts))
    return table


def input_skew(metrics: list[Any]) -> float | None:
    """Most records one subtask read ÷ the mean: 1.0 is perfectly balanced; a hash join
    on a skewed key shows nearly the parallelism here."""
    counts = [m.records_in for m in metrics]
    mean = sum(counts) / len(counts) if counts else 0
    return max(counts) / mean if mean else None


def summary_table(details: Any) -> Table:
    duration = (details.end_time - details.start_time) if details.end_time else 0.0
    table = Table(title=f"job {details.job_id} {details.status} in {duration:.2f} s",
                  title_justify="left")
    for column in ("vertex", "subtasks", "records in", "records out", "MB in", "MB out",
                   "in max/mean", "max subtask s"):
        table.add_column(column, justify="left" if column == "vertex" else "right")
    for vertex in details.vertices:
        metrics = [s.metrics for s in vertex.subtasks]
        skew = input_skew(metrics)
        table.add_row(
            vertex.name, str(vertex.parallelism),
            f"{sum(m.records_in for m in metrics):,}", f"{sum(m.records_out for m in metrics):,}",
            f"{sum(m.bytes_in for m in metrics) / 2**20:.1f}",
            f"{sum(m.bytes_out for m in metrics) / 2**20:.1f}",
            "-" if skew is None else f"{skew:.2f}",
            f"{max((m.duration_s for m in metrics), default=0.0):.2f}")
    return table


def subtask_table(details: Any) -> Table:
    """Every subtask's own figures: where the rows went, and which one was slow."""
    table = Table(title=f"subtasks of job {details.job_id}", title_justify="left")
    for column in ("subtask", "state", "executor", "records in", "records out", "MB in",
                   "MB out", "seconds", "splits local/remote"):
        table.add_column(column, justify="left" if column in ("subtask", "state", "executor")
                         else "right")
    for vertex in details.vertices:
        for s in vertex.subtasks:
            m = s.metrics
            located = s.splits_local + s.splits_remote
            table.add_row(f"{vertex.name} ({s.index + 1}/{vertex.parallelism})",
                          common_pb2.ExecutionState.Name(s.state), s.resource_id,
                          f"{m.records_in:,}", f"{m.records_out:,}",
                          f"{m.bytes_in / 2**20:.1f}", f"{m.bytes_out / 2**20:.1f}",
                          f"{m.duration_s:.2f}",
                          f"{s.splits_local}/{s.splits_remote}" if located else "")
    return table


def follow(get_details: Callable[[], Any], done: Callable[[], bool], console: Console,
           refresh: float = 0.25) -> None:
    """Redraw the progress table until ``done()``."""
    with Live(progress_table(get_details()), console=console, refresh_per_second=8,
              transient=True) as live:
        while not done():
            time.sleep(refresh)   # display refresh cadence, not synchronisation
            try:
                live.update(progress_table(get_details()))
            except Exception:
                break


def print_summary(details: Any, console: Console, subtasks: bool = False) -> None:
    console.print(summary_table(details))
    if subtasks:
        console.print(subtask_table(details))
    if details.failure:
        console.print(f"[bold red]job failed:[/] {details.failure}")


def jobs_table(jobs: list[Any], title: str) -> Table:
    """One line per job of a session or its history: what ran, how it ended, how long."""
    table = Table(title=title, title_justify="left")
    for column in ("job id", "name", "status", "started", "seconds", "failure"):
        table.add_column(column, justify="right" if column == "seconds" else "left")
    for job in jobs:
        started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(job.start_time)) \
            if job.start_time else "-"
        seconds = f"{job.end_time - job.start_time:.2f}" if job.end_time else "-"
        table.add_row(job.job_id, job.name, job.status, started, seconds,
                      (job.failure or "")[:80])
    return table
