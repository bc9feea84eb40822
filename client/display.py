"""The live progress display (subtasks deployed / running / finished, records and
progress per vertex, as running subtasks report them) and the result summary printed
when a job ends."""
from __future__ import annotations

import time
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.live import Live
from rich.table import Table
from rich.text import Text

from yarnflow.core.details import JobDetails, VertexDetails
from yarnflow.core.messages import input_skew, records_from
from yarnflow.core.status import ExecutionState

_E = ExecutionState
_STATES = [("deploying", (_E.SCHEDULED, _E.DEPLOYING, _E.INITIALIZING)),
           ("running", (_E.RUNNING,)), ("finished", (_E.FINISHED,)), ("failed", (_E.FAILED,)),
           ("canceled", (_E.CANCELING, _E.CANCELED))]


def _restarts(details: JobDetails) -> str:
    text = f", {details.restarts} restart{'s' if details.restarts != 1 else ''}" \
        if details.restarts else ""
    if details.application_attempt > 1:
        text += f", ApplicationMaster attempt {details.application_attempt}"
    return text


def progress_table(details: JobDetails) -> Table:
    """A restart shows as it happens: the title counts restarts, the caption names the
    latest failure, and the failed region's subtasks move back to deploying."""
    table = Table(title=f"{details.name} [{details.status.value}{_restarts(details)}]",
                  title_justify="left")
    if details.exceptions and not details.status.is_globally_terminal:
        last = details.exceptions[-1]
        table.caption = Text(f"last failure: {_short(last.cause)}", style="yellow")
        table.caption_justify = "left"
    table.add_column("vertex")
    table.add_column("parallelism", justify="right")
    for label, _ in _STATES:
        table.add_column(label, justify="right")
    for label in ("records in", "records out", "progress"):
        table.add_column(label, justify="right")
    for vertex in details.vertices:
        counts = [sum(1 for s in vertex.subtasks if s.state in states) for _, states in _STATES]
        table.add_row(vertex.name, str(vertex.parallelism), *map(str, counts),
                      f"{sum(s.metrics.records_in for s in vertex.subtasks):,}",
                      f"{sum(s.metrics.records_out for s in vertex.subtasks):,}",
                      f"{int(vertex.progress() * 100)} %")
        for op in vertex.operator_totals() if vertex.operators else ():  # a chain's, each its own
            table.add_row(f"  {op.name}", "", *[""] * len(_STATES), f"{op.records_in:,}",
                          f"{op.records_out:,}",
                          f"{int(vertex.operator_progress(op.name) * 100)} %")
    return table


def per_input(vertex: VertexDetails) -> str:
    """A multi-input vertex's records in by input, e.g. "join reads instruments
    (forward) 200,000, max/mean 1.00; codes (broadcast) 200, max/mean 1.00"; empty for a
    vertex of one input."""
    if len(vertex.inputs) < 2:
        return ""
    metrics = [s.metrics for s in vertex.subtasks]
    parts = []
    for index, source in enumerate(vertex.inputs):
        skew = input_skew(metrics, index)
        parts.append(f"{source.producer} ({source.ship}) "
                     f"{sum(records_from(m, index) for m in metrics):,}"
                     + ("" if skew is None else f", max/mean {skew:.2f}"))
    head = vertex.operators[0] if vertex.operators else vertex.name   # it reads the inputs
    return f"{head} reads " + "; ".join(parts)


SHOWN_RANGES = 8     # a sort's ranges the summary lists; the REST API has every one


def key_ranges(vertex: VertexDetails) -> str:
    """A sort's ranges with their bytes, e.g. "sort ranges: 1 [0 … 41] 10,000 rows 0.2
    MB; 2 [41 … 97] …": equal bytes mean the boundaries were well chosen."""
    ranges = vertex.key_ranges()
    if not ranges:
        return ""
    parts = [f"{s.index + 1} [{first} … {last}] {s.metrics.records_in:,} rows "
             f"{s.metrics.bytes_in / 2**20:.1f} MB" for s, first, last in ranges[:SHOWN_RANGES]]
    more = len(ranges) - SHOWN_RANGES
    return f"{vertex.name} ranges: " + "; ".join(parts) + \
        (f"; and {more} more (yarnflow status --subtasks, or the REST API)" if more > 0 else "")


def _cause(text: str, width: int = 400) -> str:
    """A failure's first line (shortened) and the user's frames that follow it, line by
    line as Python prints them (``yarnflow.core.tracebacks``)."""
    first, _, frames = text.partition("\n")
    return "\n".join([_short(first, width), *frames.splitlines()])


def _short(text: str, width: int = 160) -> str:
    line = " ".join(text.split())
    return line if len(line) <= width else line[:width - 1] + "…"


def summary_table(details: JobDetails) -> Table:
    duration = (details.end_time - details.start_time) if details.end_time else 0.0
    table = Table(title=f"job {details.job_id} {details.status.value} in {duration:.2f} s"
                        f"{_restarts(details)}", title_justify="left")
    spilled = any(v.spilled()[0] for v in details.vertices)   # a column only if any did
    for column in ("vertex", "subtasks", "records in", "records out", "MB in", "MB out",
                   "in max/mean", "max subtask s", *(("MB spilled",) if spilled else ())):
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
            f"{max((m.duration_s for m in metrics), default=0.0):.2f}",
            *((_spilled(vertex),) if spilled else ()))
        for op in vertex.operator_totals() if vertex.operators else ():  # a chain's, each its own
            table.add_row(f"  {op.name}", "", f"{op.records_in:,}", f"{op.records_out:,}",
                          f"{op.bytes_in / 2**20:.1f}", f"{op.bytes_out / 2**20:.1f}", "", "",
                          *(("",) if spilled else ()))
    return table


def _spilled(vertex: VertexDetails) -> str:
    nbytes, files = vertex.spilled()
    return f"{nbytes / 2**20:.1f} ({files} files)" if nbytes else "-"


def spill_warning(vertex: VertexDetails) -> str:
    """A vertex that spilled more than it read: its slots are too small for what its
    operators hold, and what to raise (empty when it did not)."""
    if not vertex.spilled_too_much():
        return ""
    nbytes, files = vertex.spilled()
    read = sum(s.metrics.bytes_in for s in vertex.subtasks)
    return (f"{vertex.name} spilled {nbytes / 2**20:,.1f} MB to local disk in {files} files, "
            f"more than it read ({read / 2**20:,.1f} MB): its slots are too small for what "
            "it holds; raise taskmanager.default-slot.memory (or its ResourceSpec's memory) "
            "or taskmanager.memory.managed.fraction")


def subtask_table(details: JobDetails) -> Table:
    """Every subtask's own figures: where the rows went, and which one was slow."""
    table = Table(title=f"subtasks of job {details.job_id}", title_justify="left")
    left = ("subtask", "state", "executor", "slot", "worker spec")
    for column in left + ("input", "records in", "by input", "records out", "MB in", "MB out",
                          "seconds", "splits local/remote", "MB spilled"):
        table.add_column(column, justify="left" if column in left else "right")
    for vertex in details.vertices:
        for s in vertex.subtasks:
            m = s.metrics
            located = s.splits_local + s.splits_remote
            table.add_row(f"{vertex.name} ({s.index + 1}/{vertex.parallelism})",
                          s.state.name, s.resource_id,
                          s.slot_profile.label() if s.slot_profile is not None else "",
                          s.worker_spec,
                          f"{m.inputs_done}/{m.inputs_total}" if m.inputs_total else "",
                          f"{m.records_in:,}",
                          " + ".join(f"{n:,}" for n in m.records_in_per_input)
                          if len(m.records_in_per_input) > 1 else "",
                          f"{m.records_out:,}",
                          f"{m.bytes_in / 2**20:.1f}", f"{m.bytes_out / 2**20:.1f}",
                          f"{m.duration_s:.2f}",
                          f"{s.splits_local}/{s.splits_remote}" if located else "",
                          f"{m.spilled_bytes / 2**20:.1f} ({m.spill_files})"
                          if m.spill_files else "")
    return table


def exceptions_table(details: JobDetails) -> Table:
    """The job's exception history (Flink's): every failure it recovered from, and the
    one that ended it, with the subtask attempt, the executor (on YARN its container)
    and the cause."""
    table = Table(title=f"failures of job {details.job_id}{_restarts(details)}",
                  title_justify="left")
    for column in ("time", "subtask", "attempt", "executor", "host", "cause"):
        table.add_column(column, justify="right" if column == "attempt" else "left",
                         overflow="fold" if column == "cause" else "ellipsis")
    for x in details.exceptions:
        table.add_row(time.strftime("%H:%M:%S", time.localtime(x.timestamp)), x.task or "-",
                      str(x.attempt) if x.task else "", x.resource_id or "-", x.host or "-",
                      Text(_cause(x.cause)))
    return table


def blocked_table(details: JobDetails) -> Table:
    """The hosts the job's blocklist holds: kept free of new work until their time."""
    table = Table(title=f"hosts blocked by job {details.job_id}", title_justify="left")
    for column in ("host", "since", "until", "cause"):
        table.add_column(column)
    for node in details.blocked_hosts:
        table.add_row(node.host, time.strftime("%H:%M:%S", time.localtime(node.since)),
                      time.strftime("%H:%M:%S", time.localtime(node.until)), node.cause)
    return table


def speculation_table(details: JobDetails) -> Table:
    """Each speculative attempt: which subtask ran slow where and why, where the second
    attempt ran, and which won."""
    table = Table(title=f"speculative attempts of job {details.job_id}", title_justify="left")
    for column in ("subtask", "attempt", "host", "slow attempt", "slow host", "started",
                   "outcome", "why"):
        table.add_column(column)
    for a in details.speculations:
        table.add_row(a.task, str(a.attempt), a.host or "-", str(a.original_attempt),
                      a.original_host or "-", time.strftime("%H:%M:%S", time.localtime(a.started)),
                      a.outcome.value, Text(f"slow: {a.reason}" + (f"; {a.note}" if a.note else "")))
    return table


def follow(handle: Any, console: Console, refresh: float = 0.5) -> None:
    """Redraw the progress table of ``handle``'s job (a ``JobHandle``) until it ended."""
    with Live(Text(f"waiting for job {handle.job_id} to start"), console=console,
              refresh_per_second=4, transient=True) as live:
        while True:
            details = handle.details()
            if details is not None:
                live.update(progress_table(details))
                if details.status.is_globally_terminal:
                    return
            time.sleep(refresh)   # display refresh cadence, not synchronisation


def print_decisions(details: JobDetails, console: Console) -> None:
    """What adaptive execution decided at run time, a line per vertex."""
    for vertex in details.vertices:
        if vertex.decision:
            console.print(f"{escape(vertex.name)}: {escape(vertex.decision)}", highlight=False,
                          soft_wrap=True)


def checkpoints_line(details: JobDetails) -> str:
    """A streaming job's checkpoints in a line: counts, and the latest completed and
    failed one ("" for a batch job)."""
    stats = details.checkpoints
    if not stats:
        return ""
    counts, latest = stats["counts"], stats["latest"]
    parts = [f"checkpoints: {counts['completed']} completed, {counts['failed']} failed, "
             f"{counts['in_progress']} in progress"]
    done = latest.get("completed")
    if done:
        parts.append(f"latest {done['id']} ({done['end_to_end_duration']} ms, "
                     f"{done['state_size']} bytes) at {done['external_path']}")
    failed = latest.get("failed")
    if failed:
        parts.append(f"last failure ({failed['id']}): {failed['failure_message']}")
    restored = latest.get("restored")
    if restored:
        parts.append(f"restored from {restored['external_path']}")
    return "; ".join(parts)


def print_summary(details: JobDetails, console: Console, subtasks: bool = False) -> None:
    console.print(summary_table(details))
    if details.checkpoints:
        console.print(checkpoints_line(details), markup=False, highlight=False, soft_wrap=True)
    for vertex in details.vertices:
        if len(vertex.inputs) > 1:
            console.print(per_input(vertex), highlight=False, soft_wrap=True)
        if vertex.key_ranges():
            console.print(key_ranges(vertex), highlight=False, soft_wrap=True, markup=False)
    print_decisions(details, console)
    if subtasks:
        console.print(subtask_table(details))
    if details.restarts:
        console.print(exceptions_table(details))
    if details.blocked_hosts:
        console.print(blocked_table(details))
    if details.speculations:
        console.print(speculation_table(details))
    for said in [*details.warnings, *filter(None, map(spill_warning, details.vertices))]:
        console.print(f"[bold yellow]warning:[/] {escape(said)}", highlight=False, soft_wrap=True)
    if details.failure:
        # soft-wrapped: a log path in the failure stays one piece the user can copy
        console.print(f"[bold red]job failed:[/] {escape(details.failure)}", highlight=False,
                      soft_wrap=True)


def jobs_table(jobs: list[JobDetails], title: str) -> Table:
    """One line per job of a session or its history: what ran, how it ended, how long."""
    table = Table(title=title, title_justify="left")
    for column in ("job id", "name", "status", "started", "seconds", "restarts", "failure"):
        table.add_column(column, justify="right" if column in ("seconds", "restarts") else "left")
    for job in jobs:
        started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(job.start_time)) \
            if job.start_time else "-"
        seconds = f"{job.end_time - job.start_time:.2f}" if job.end_time else "-"
        table.add_row(job.job_id, job.name, job.status.value, started, seconds,
                      str(job.restarts), (job.failure or "")[:80])
    return table
