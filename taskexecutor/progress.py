"""Live progress: what an executor tells each JobMaster of its running attempts between
heartbeats (Spark's executor metrics updates, Flink's metric fetcher, pushed).

One report per JobMaster per ``metrics.progress.interval``, carrying only the attempts
whose counts moved since the last report, so a quiet executor sends nothing and no
record batch ever costs a message. Each carries the attempt's whole counts, not
increments, so a lost report is made good by the next one or by the next heartbeat
(which carries every running attempt's counts).
"""
from __future__ import annotations

from typing import Iterable

from yarnflow.core.ids import ExecutionAttemptID, JobMasterId
from yarnflow.core.messages import TaskExecutionState, TaskMetrics


class ProgressReports:
    """Remembers the counts last sent for each running attempt (main thread only)."""

    def __init__(self) -> None:
        self._sent: dict[ExecutionAttemptID, TaskMetrics] = {}

    def changed(self, running: Iterable[tuple[JobMasterId, TaskExecutionState]]
                ) -> dict[JobMasterId, list[TaskExecutionState]]:
        """JobMaster -> the states of its running attempts whose counts changed. An
        attempt left out of ``running`` (it ended) is forgotten."""
        out: dict[JobMasterId, list[TaskExecutionState]] = {}
        sent: dict[ExecutionAttemptID, TaskMetrics] = {}
        for jm_id, state in running:
            metrics = state.metrics
            if metrics is None:
                continue
            last = self._sent.get(state.attempt_id)
            sent[state.attempt_id] = metrics
            if last is None or _moved(last, metrics):
                out.setdefault(jm_id, []).append(state)
        self._sent = sent
        return out


def _moved(last: TaskMetrics, now: TaskMetrics) -> bool:
    return (now.records_in, now.records_out, now.bytes_in, now.bytes_out, now.inputs_done,
            now.inputs_total) != (last.records_in, last.records_out, last.bytes_in,
                                  last.bytes_out, last.inputs_done, last.inputs_total)
