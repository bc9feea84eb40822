"""The running job as its CheckpointCoordinator sees it (``CheckpointTasks``): which
attempts a checkpoint starts at and waits for, read off the ExecutionGraph, and the
messages to their executors. A trigger that does not reach its executor is sent
again while the checkpoint waits (a lost one would only expire it); a completion
notice that is lost is made good by the next one (a sink commits everything up to the
checkpoint it hears of)."""
from __future__ import annotations

import logging
from concurrent.futures import Future
from typing import Any, Callable

from yarnflow.appmaster.jobmaster.checkpoint.coordinator import CheckpointPlan
from yarnflow.appmaster.jobmaster.checkpoint.pending import TaskRef
from yarnflow.core.streaming.checkpoint_metadata import CompletedCheckpoint
from yarnflow.appmaster.jobmaster.executiongraph import ExecutionGraph, ExecutionState
from yarnflow.core.errors import Refused
from yarnflow.core.ids import ExecutionAttemptID
from yarnflow.core.streaming.events import CheckpointBarrier
from yarnflow.rpc.endpoint import MainThreadExecutor, describe_rpc_error

log = logging.getLogger(__name__)
RETRY_PAUSE_S = 1.0


class ExecutionGraphTasks:
    def __init__(self, graph: ExecutionGraph, main: MainThreadExecutor, max_parallelism: int,
                 fail_over: Callable[[str], None],
                 still_pending: Callable[[int], bool]) -> None:
        self._graph = graph
        self._main = main
        self._max_parallelism = max_parallelism
        self._fail_over = fail_over
        self._still_pending = still_pending

    def checkpoint_plan(self) -> CheckpointPlan | None:
        to_trigger: list[ExecutionAttemptID] = []
        waiting: dict[ExecutionAttemptID, TaskRef] = {}
        finished: list[TaskRef] = []
        for vertex in self._graph.all_execution_vertices():
            job_vertex = vertex.job_vertex
            ref = TaskRef(job_vertex.id, job_vertex.name, vertex.subtask_index,
                          job_vertex.parallelism, self._max_parallelism)
            execution = vertex.current
            if execution.state is ExecutionState.FINISHED:
                finished.append(ref)
                continue
            if execution.state is not ExecutionState.RUNNING:
                return None
            waiting[execution.attempt_id] = ref
            producers_done = all(p.finished for group in vertex.consumed
                                 for p in group.partitions())
            if producers_done:      # a source, or every input has ended (FLIP-147)
                to_trigger.append(execution.attempt_id)
        return CheckpointPlan(tuple(to_trigger), waiting, tuple(finished))

    def _gateway(self, attempt: ExecutionAttemptID) -> Any:
        execution = self._graph.attempts.get(attempt)
        if execution is None or execution.state is not ExecutionState.RUNNING or \
                execution.slot is None:
            return None
        return execution.slot.gateway

    def trigger(self, attempt: ExecutionAttemptID, barrier: CheckpointBarrier) -> None:
        gateway = self._gateway(attempt)
        if gateway is None or not self._still_pending(barrier.checkpoint_id):
            return
        sent: Future[Any] = gateway.trigger_checkpoint(attempt, barrier)

        def answered(answer: "Future[Any]") -> None:
            err = answer.exception()
            if err is None or isinstance(err, Refused):
                return
            log.info("trigger of checkpoint %d at %s not delivered (%s): sending it again",
                     barrier.checkpoint_id, attempt[:8], describe_rpc_error(err))
            self._main.schedule(RETRY_PAUSE_S, self.trigger, attempt, barrier)
        sent.add_done_callback(lambda f: self._main.execute(answered, f))

    def _notify(self, attempt: ExecutionAttemptID, checkpoint_id: int, completed: bool) -> None:
        gateway = self._gateway(attempt)
        if gateway is not None:
            gateway.notify_checkpoint(attempt, checkpoint_id, completed)

    def notify_complete(self, attempt: ExecutionAttemptID, checkpoint_id: int) -> None:
        self._notify(attempt, checkpoint_id, True)

    def notify_aborted(self, attempt: ExecutionAttemptID, checkpoint_id: int) -> None:
        self._notify(attempt, checkpoint_id, False)

    def fail_job(self, reason: str) -> None:
        self._fail_over(reason)

    def terminate(self, checkpoint: CompletedCheckpoint) -> None:
        log.info("job %s stops with savepoint %s", self._graph.job_id, checkpoint.location)
