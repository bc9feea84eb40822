"""The job's scheduler (Flink's SchedulerNG and DefaultScheduler): what happens to the
job's subtasks once the JobMaster has taken a message in (deployment, state reports,
failures and restarts, cancellation) and when the job as a whole ends. The JobMaster
around it is the RPC shell: fencing, its executors' gateways and heartbeats, input
splits, and the job's lifecycle. Runs on the JobMaster's main thread.

A failed subtask, or an executor lost with subtasks or needed results on it, is one
failure: the failover strategy names the subtasks to restart (its pipelined region,
and what that needs and feeds), the restart strategy says whether and after how long
(seed 003, FLIP-6's TaskManager crash). Those subtasks are cancelled, and once they
have all stopped and the pause is over, they restart as new attempts, preferring
their previous slots; a source's splits go back to its assigner. A failure no retry
can fix (no slot for a profile, a deployment that cannot be built) fails the job at
once, as does a failure the restart strategy allows no more restarts for. A
subtask's speculative attempts (``speculation.py``) run beside its current one: the
first to finish becomes current, and a restart stops them all.
"""
from __future__ import annotations

import functools
import logging
from concurrent.futures import Future
from typing import Callable, Iterable, Mapping

from yarnflow.appmaster.jobmaster.settings import JobMasterSettings
from yarnflow.core.ids import ExecutionAttemptID, ResourceID
from yarnflow.appmaster.jobmaster.executiongraph import (
    Execution, ExecutionGraph, ExecutionState, ExecutionVertex, JobStatus)
from yarnflow.appmaster.jobmaster.failover import failover_strategy, restart_strategy
from yarnflow.appmaster.jobmaster.outputs import JobOutputs
from yarnflow.appmaster.jobmaster.scheduler.adaptivebatch import vertex_initializer as adaptive
from yarnflow.appmaster.jobmaster.scheduler.allocator import SlotSharingSlotAllocator
from yarnflow.appmaster.jobmaster.scheduler.cancelling import ExecutionCanceller
from yarnflow.appmaster.jobmaster.scheduler.deployer import ExecutionDeployer
from yarnflow.appmaster.jobmaster.scheduler.deployment import invalidate_descriptors
from yarnflow.appmaster.jobmaster.scheduler.deployment_parts import DeploymentParts
from yarnflow.appmaster.jobmaster.scheduler.lost_results import (lost_results_still_needed,
                                                                 partition_available)
from yarnflow.appmaster.jobmaster.scheduler.scheduler_ng import (
    NO_CHECKPOINTS, CheckpointHooks, JobMasterAddress)
from yarnflow.appmaster.jobmaster.scheduler.pending_restart import PendingRestart
from yarnflow.appmaster.jobmaster.scheduler.scheduling_strategy import SchedulingStrategy
from yarnflow.appmaster.jobmaster.scheduler.speculation import SpeculativeExecutions
from yarnflow.appmaster.jobmaster.slotpool import PhysicalSlot, SlotPool
from yarnflow.appmaster.jobmaster.splits import InputSplitAssigner
from yarnflow.core.details import ExceptionEntry, SpeculativeAttempt
from yarnflow.core.errors import EndpointStopped
from yarnflow.core.messages import TaskExecutionState
from yarnflow.core.tracebacks import noted
from yarnflow.rpc.endpoint import MainThreadExecutor

log = logging.getLogger(__name__)

_DEPLOYED = frozenset({ExecutionState.DEPLOYING, ExecutionState.INITIALIZING, ExecutionState.RUNNING})

# Failures a job's details keep (Flink's web.exception-history-size).
EXCEPTION_HISTORY_SIZE = 16


class DefaultScheduler:
    def __init__(self, graph: ExecutionGraph, settings: JobMasterSettings, main: MainThreadExecutor,
                 slot_pool: SlotPool, allocator: SlotSharingSlotAllocator, outputs: JobOutputs,
                 splits: Mapping[str, InputSplitAssigner], job_master: JobMasterAddress,
                 on_subtask_finished: Callable[[ExecutionVertex], None],
                 on_ended: Callable[[], None],
                 task_slow: Callable[[str, str], "Future[object] | None"] = lambda h, w: None
                 ) -> None:
        """``on_subtask_finished`` hears of each FINISHED subtask (for the job's event
        log), ``on_ended`` once the job is globally terminal (its outputs committed or
        discarded), ``task_slow(host, why)`` of each subtask found slow (the blocklist)."""
        self.graph = graph
        self.settings = settings
        self.main = main
        self._clock = main.clock
        self._slot_pool = slot_pool
        self._allocator = allocator
        self._outputs = outputs
        self._splits = splits
        self._on_subtask_finished = on_subtask_finished
        self._on_ended = on_ended
        self._deployer = ExecutionDeployer(main, job_master, DeploymentParts.of(settings.storage, graph.job_id),
                                           self._task_failed, settings.batch_rows)
        self.adaptive = adaptive.AdaptiveVertexInitializer.of(settings.adaptive, settings.default_slot,
                                                              graph, allocator.add_subtasks)
        self._strategy = SchedulingStrategy(main, graph, allocator,
                                            lambda vertex: self._deployer.deploy(vertex.current),
                                            self._fail_vertex, self.adaptive.initialize)
        self._restart_strategy = restart_strategy(settings.restart)
        self._failover = failover_strategy(settings.failover_strategy, graph)
        self._canceller = ExecutionCanceller(main, settings.task_cancel_timeout, self._on_canceled)
        self.speculation = SpeculativeExecutions(settings.speculation, main, graph, slot_pool, allocator.group_of,
                                                 self._deployer.deploy, task_slow)
        self._restart: PendingRestart | None = None
        self._lost_executors: set[str] = set()
        # failed attempts whose failure is likely the echo of another on its way (an
        # input that went away, an executor that did not answer): -> their executor
        self._awaiting_cause: dict[Execution, str] = {}
        self.restarts = 0
        self.exceptions: list[ExceptionEntry] = []
        self._checkpoints: CheckpointHooks = NO_CHECKPOINTS

    def set_checkpoint_hooks(self, hooks: CheckpointHooks) -> None:
        self._checkpoints = self._deployer.checkpoints = hooks

    def fail_over(self, cause: str) -> None:
        """Restart every subtask (too many failed checkpoints), as restarts allow."""
        if self.graph.status is JobStatus.RUNNING:
            self._handle_failure([], cause, also=list(self.graph.all_execution_vertices()))

    @property
    def speculations(self) -> list[SpeculativeAttempt]:
        return self.speculation.attempts

    @property
    def job_id(self) -> str:
        return self.graph.job_id

    # --- lifecycle -------------------------------------------------------------------
    def start(self) -> None:
        self._transition(JobStatus.RUNNING)
        self._strategy.start()
        self.speculation.start()
        self._check_termination()      # everything may have finished in an earlier attempt

    def fail_before_start(self, cause: str) -> None:
        self._record_exceptions([], cause)
        self.graph.failure = cause
        self._transition(JobStatus.FAILED)
        self._outputs.abort()
        self._on_ended()

    def cancel(self) -> None:
        if self.graph.status.is_globally_terminal or self.graph.status in (
                JobStatus.CANCELLING, JobStatus.FAILING):
            return
        self._transition(JobStatus.CANCELLING)
        self._cancel_all_executions()

    def stop(self) -> "Future[None]":
        self._strategy.stop()
        self.speculation.stop()
        return self._deployer.parts.discard()

    # --- state reports ---------------------------------------------------------------
    def update_task_execution_state(self, report: TaskExecutionState) -> bool:
        """False when the attempt is not one of the vertex's (it was replaced)."""
        execution = self.graph.attempts.get(report.attempt_id)
        if execution is None or execution not in execution.vertex.executions():
            return False
        state = report.state
        if report.metrics is not None:
            execution.update_metrics(report.metrics)
        if state is ExecutionState.FAILED and report.non_recoverable:
            self._task_failed(execution, noted(report.error, "(not restarted: a non-recoverable "
                                                "error, which fails every attempt the same way)"),
                              report.error_detail, recoverable=False)
        elif state is ExecutionState.FAILED:
            self._task_failed(execution, report.error, report.error_detail,
                              upstream=report.upstream_failure)
        elif state is ExecutionState.FINISHED:
            if execution in execution.vertex.speculative and execution.state in _DEPLOYED \
                    and self.graph.status is JobStatus.RUNNING:   # it finished first
                self.speculation.promote(execution)
                for result in execution.vertex.job_vertex.produced:
                    invalidate_descriptors(result)
            self._on_finished(execution)
        elif state is ExecutionState.CANCELED:
            self._on_canceled(execution)
        elif state in (ExecutionState.INITIALIZING, ExecutionState.RUNNING):
            if execution.state in (ExecutionState.DEPLOYING, ExecutionState.INITIALIZING) \
                    and state != execution.state:
                execution.transition(state)
        return True

    def _on_finished(self, execution: Execution) -> None:
        if execution.state is ExecutionState.CANCELING:   # it finished as it was cancelled
            self._on_canceled(execution)
            return
        if execution.state.is_terminal:
            return
        execution.transition(ExecutionState.FINISHED)
        self._release_slot(execution)
        if execution is not execution.vertex.current:   # a speculative one, after the winner
            self._check_termination()
            return
        for other in self.speculation.finished_first(execution):
            self._stop_attempt(other)
        for partition in execution.vertex.produced_partitions():
            partition.finished = True
            self._strategy.on_partition_consumable(partition.result)
        self._checkpoints.task_finished(execution.attempt_id)
        self._on_subtask_finished(execution.vertex)
        self._check_termination()

    def _on_canceled(self, execution: Execution) -> None:
        if execution.state.is_terminal:
            return
        if execution.state is not ExecutionState.CANCELING:
            execution.transition(ExecutionState.CANCELING)
        execution.transition(ExecutionState.CANCELED)
        self._release_slot(execution)
        if self._restart is not None and execution.vertex in self._restart.vertices:
            self._maybe_restart()
        else:
            self._check_termination()

    def partition_has_data(self, attempt_id: ExecutionAttemptID, result_id: str) -> None:
        execution = self.graph.attempts.get(attempt_id)
        result = self.graph.results.get(result_id)
        if execution is None or result is None or execution is not execution.vertex.current:
            return
        result.partitions[execution.vertex.subtask_index].has_data = True
        self._strategy.on_partition_consumable(result)

    # --- lost executors and slots ----------------------------------------------------
    def is_lost(self, resource_id: ResourceID) -> bool:
        return resource_id in self._lost_executors

    def executor_lost(self, resource_id: ResourceID, reason: str) -> None:
        """Its running subtasks failed, and the finished results it held are lost: one
        failure. The shared slots they held are asked for again during the restart's
        pause (``slotpool/ahead.py``), so their executors start while it runs."""
        if resource_id in self._lost_executors:
            return
        self._lost_executors.add(resource_id)
        self._deployer.parts.executor_gone(resource_id)
        lost = [e for e in self.graph.all_executions()
                if e.resource_id == resource_id and not e.state.is_terminal]
        lost = [e for e in lost if not self._survived(e, reason)]
        # attempts that failed there a moment ago (a deployment the dying executor did
        # not take) waiting for this, their real cause
        explained = [e for e, where in list(self._awaiting_cause.items())
                     if where == resource_id and e is e.vertex.current]
        for execution in explained:
            del self._awaiting_cause[execution]
        if lost or explained:
            reason = f"{reason}; lost subtasks: " + ", ".join(e.vertex.name_with_index
                                                              for e in lost + explained)
        for execution in explained:
            execution.failure = reason
        groups = {id(e.slot.group): e.slot.group for e in lost if e.slot is not None}
        failed = [e for e in lost if self._mark_failed(e, reason)] + explained
        self._slot_pool.release_task_manager(resource_id, reason)   # its slots: already failed
        if self.graph.status is not JobStatus.RUNNING:
            self._check_termination()
            return
        needed = lost_results_still_needed(self.graph, resource_id)
        if failed or needed:
            self._handle_failure(failed, reason, also=needed)
            for group in groups.values() if self._restart and self._restart.timer else ():
                self._slot_pool.request_ahead(group.profile, group.exact)

    def depends_on(self, resource_id: ResourceID) -> bool:
        """Whether the job holds a slot on the executor or will read a result there."""
        return any(slot.location.resource_id == resource_id
                   for slot in self._slot_pool.held_slots()) or \
            bool(lost_results_still_needed(self.graph, resource_id))

    def slot_lost(self, slot: PhysicalSlot, cause: str) -> None:
        failed = [e for e in self.graph.all_executions()
                  if e.allocation_id == slot.allocation_id and not e.state.is_terminal]
        failed = [e for e in failed if not self._survived(e, cause) and self._mark_failed(e, cause)]
        if failed and self.graph.status is JobStatus.RUNNING:
            self._handle_failure(failed, cause)
        else:
            self._check_termination()

    def _survived(self, execution: Execution, cause: str) -> bool:
        """Whether a failed attempt's subtask runs on without a restart: it was a
        speculative one (dropped), or a speculative one takes over from it."""
        if execution is execution.vertex.current and not self.speculation.take_over(execution):
            return False
        self._mark_failed(execution, cause)
        return True

    # --- failures --------------------------------------------------------------------
    def _fail_vertex(self, vertex: ExecutionVertex, cause: str) -> None:
        """No slot for it (no container fits, workers keep failing to start, none came
        within slot.request.timeout): a restart would ask for the same again."""
        self._task_failed(vertex.current, cause, recoverable=False)

    def _task_failed(self, execution: Execution, cause: str, detail: str = "",
                     upstream: bool = False, recoverable: bool = True) -> None:
        """One attempt failed. A failure ``upstream`` (an input's producer went away) is
        usually the echo of another failure still on its way (the producer's executor
        is lost, and its driver is about to say so), so it waits for a grace period
        (``jobmaster.upstream-failure.grace``, at most one heartbeat interval) before
        it is handled, by which time the real cause has restarted it already."""
        where = execution.resource_id or ""
        if not self._mark_failed(execution, cause, detail):
            return
        if self.graph.status is not JobStatus.RUNNING:
            self._check_termination()
        elif self._restart is not None and execution.vertex in self._restart.vertices:
            self._maybe_restart()          # it was stopping for a restart anyway
        elif execution is not execution.vertex.current:
            log.info("speculative %s failed; the subtask runs on: %s", execution, cause)
        elif recoverable and (heir := self.speculation.take_over(execution)) is not None:
            execution.failure = noted(cause, f"(attempt {heir.attempt_number} runs on)")
            self._record_exceptions([execution], cause)
        elif not recoverable:
            self._record_exceptions([execution], cause)
            self._fail_job(cause, detail)
        elif upstream:
            grace = min(self.settings.upstream_failure_grace, self.settings.heartbeat_interval)
            self._awaiting_cause[execution] = where
            self.main.schedule(grace, self._upstream_failure_unexplained, execution)
        else:
            self._handle_failure([execution], cause, detail)

    def _upstream_failure_unexplained(self, execution: Execution) -> None:
        if self._awaiting_cause.pop(execution, None) is None:
            return         # the loss of its executor explained it meanwhile
        if self.graph.status is JobStatus.RUNNING and execution is execution.vertex.current \
                and not (self._restart and execution.vertex in self._restart.vertices):
            self._handle_failure([execution], execution.failure, execution.failure_detail)

    def _mark_failed(self, execution: Execution, cause: str, detail: str = "") -> bool:
        """End one attempt as FAILED (as CANCELED if it was being cancelled because the
        job is ending); False when it had ended already."""
        if execution.state.is_terminal:
            return False
        if execution.state is ExecutionState.CANCELING and \
                self.graph.status in (JobStatus.CANCELLING, JobStatus.FAILING):
            execution.transition(ExecutionState.CANCELED)
        else:
            execution.failure, execution.failure_detail = cause, detail
            execution.transition(ExecutionState.FAILED)
        self._release_slot(execution)
        return True

    def _release_slot(self, execution: Execution) -> None:
        """An attempt ended: a speculative one's own slot, or the original's share of
        its shared slot, goes back."""
        if not self.speculation.release_slot(execution):
            self._strategy.release_slot_of(execution.vertex)

    def _handle_failure(self, failed: list[Execution], cause: str, detail: str = "",
                        also: Iterable[ExecutionVertex] = ()) -> None:
        """One failure: count it, and restart what the failover strategy names, or fail
        the job when the restart strategy allows no more."""
        now = self._clock.monotonic()
        self._record_exceptions(failed, cause)
        self._checkpoints.task_failed()
        vertices = self._failover.tasks_to_restart(
            [e.vertex for e in failed] + list(also), functools.partial(partition_available, lost=self._lost_executors))
        # Failures while a restart is pending join it and count once (FLIP-364): a lost
        # executor's subtasks, or two subtasks of the same bad data, are one failure.
        pending = self._restart
        if pending is None:
            self._restart_strategy.notify_failure(now)
            if not self._restart_strategy.can_restart():
                self._fail_job(noted(cause, f"(the job ran {self.restarts + 1} "
                                             f"attempt{'s' if self.restarts else ''}; no restart: "
                                             f"{self._restart_strategy.exhausted()})"), detail)
                return
            delay = self._restart_strategy.backoff_time()
            pending = self._restart = PendingRestart(due=now + delay)
            pending.timer = self.main.schedule(delay, self._restart_due, pending)
        pending.vertices |= vertices
        log.info("job %s: %s; restarting %d subtask%s in %.1f s", self.job_id[:8], cause,
                 len(vertices), "" if len(vertices) == 1 else "s", max(0.0, pending.due - now))
        for vertex in vertices:
            for execution in vertex.executions():
                self._stop_attempt(execution)
        # joining a restart whose pause is over: what it waited for may have just ended
        # here (subtasks it was cancelling, failed with their lost executor)
        self._maybe_restart()

    def _record_exceptions(self, failed: list[Execution], cause: str) -> None:
        at = self._clock.time()
        entries = [ExceptionEntry(at, e.vertex.name_with_index, e.attempt_number,
                                  e.resource_id or ResourceID(""),
                                  e.slot.location.host if e.slot is not None else "",
                                  e.failure or cause) for e in failed] \
            or [ExceptionEntry(at, "", 0, ResourceID(""), "", cause)]
        self.exceptions = (self.exceptions + entries)[-EXCEPTION_HISTORY_SIZE:]

    def _stop_attempt(self, execution: Execution) -> None:
        """Cancel one attempt (for a restart, or as a speculation's loser)."""
        self._cancel_attempt(execution, (ExecutionState.SCHEDULED,), timed=True)

    def _restart_due(self, pending: PendingRestart) -> None:
        if pending is self._restart:
            pending.timer = None
            self._maybe_restart()

    def _maybe_restart(self) -> None:
        """Restart once the pause is over and every subtask to restart has stopped."""
        pending = self._restart
        if pending is None or pending.timer is not None or \
                self.graph.status is not JobStatus.RUNNING:
            return
        if any(not e.state.is_terminal and e.state is not ExecutionState.CREATED
               for v in pending.vertices for e in v.executions()):
            return
        self._restart = None
        restarted = [v for v in self.graph.all_execution_vertices() if v in pending.vertices]
        returned = 0
        moved: set[str] = set()
        for vertex in restarted:
            if vertex.current.state is not ExecutionState.CREATED:
                assigner = self._splits.get(vertex.job_vertex.id)
                if assigner is not None:
                    returned += assigner.add_splits_back(vertex.current.attempt_id)
                self.graph.register_attempt(vertex.reset_for_new_execution())
                moved.add(vertex.job_vertex.id)
        for job_vertex_id in moved:     # consumers must not be deployed with old locations
            for result in self.graph.job_vertices[job_vertex_id].produced:
                invalidate_descriptors(result)
        self.restarts += 1
        log.info("job %s: restart %d of %d subtask%s (%d input splits handed out again)",
                 self.job_id[:8], self.restarts, len(restarted),
                 "" if len(restarted) == 1 else "s", returned)
        self._strategy.restart(restarted)

    def _fail_job(self, cause: str, detail: str) -> None:
        if self.graph.status is not JobStatus.RUNNING:
            return
        self.graph.failure, self.graph.failure_detail = cause, detail
        self._transition(JobStatus.FAILING)
        self._cancel_all_executions()

    # --- cancelling ------------------------------------------------------------------
    def _cancel_all_executions(self) -> None:
        self._strategy.stop()
        self.speculation.stop()
        if self._restart is not None:
            if self._restart.timer is not None:
                self._restart.timer.cancel()
            self._restart = None
        self.main.schedule(self.settings.job_cancel_timeout, self._force_cancelled)
        for execution in list(self.graph.all_executions()):
            self._cancel_attempt(execution, (ExecutionState.CREATED, ExecutionState.SCHEDULED))
        self._check_termination()

    def _cancel_attempt(self, execution: Execution, undeployed: tuple[ExecutionState, ...],
                        timed: bool = False) -> bool:
        """One ``undeployed`` attempt is CANCELED at once; a deployed one is CANCELING
        until its executor says it stopped (True); ``timed``: or until
        task.cancellation.timeout."""
        if execution.state in undeployed:
            execution.transition(ExecutionState.CANCELED)
            self._release_slot(execution)
        elif execution.state in _DEPLOYED:
            execution.transition(ExecutionState.CANCELING)
            self._canceller.send(execution, timed)
            return True
        return False

    def _force_cancelled(self) -> None:
        for execution in self.graph.all_executions():
            if execution.state is ExecutionState.CANCELING:
                log.warning("%s did not acknowledge cancellation within job.cancel.timeout",
                            execution)
                execution.transition(ExecutionState.CANCELED)
        self._check_termination()

    # --- the end ---------------------------------------------------------------------
    def _check_termination(self) -> None:
        status = self.graph.status
        if status is JobStatus.RUNNING and self.graph.all_finished():
            if not self._outputs.when_admitted(self._check_termination_when_admitted):
                return
            failure = self._outputs.gather(self.graph) or \
                self._outputs.commit(self._sink_attempts())
            if failure:
                self.graph.failure, self.graph.failure_detail = failure
                self._record_exceptions([], failure[0])
                self._transition(JobStatus.FAILING)
                self._transition(JobStatus.FAILED)
            else:
                self._transition(JobStatus.FINISHED)
        elif status is JobStatus.FAILING and self.graph.all_terminal():
            self._transition(JobStatus.FAILED)
        elif status is JobStatus.CANCELLING and self.graph.all_terminal():
            self._transition(JobStatus.CANCELED)
        else:
            return
        if self.graph.status is not JobStatus.FINISHED:
            self._outputs.abort()
        self._strategy.stop()
        self._on_ended()

    def _check_termination_when_admitted(self) -> None:
        try:
            self.main.execute(self._check_termination)
        except EndpointStopped:    # the job was ended meanwhile (cancelled as not admitted)
            pass

    def _sink_attempts(self) -> dict[str, dict[int, ExecutionAttemptID]]:
        """Per sink, the attempt of each subtask whose files are the output."""
        return {vertex_id: {v.subtask_index: v.current.attempt_id
                            for v in self.graph.job_vertices[vertex_id].task_vertices}
                for vertex_id in self._outputs.sinks}

    def _transition(self, status: JobStatus) -> None:
        self.graph.transition(status)
        log.info("job %s (%s) is %s%s", self.graph.name, self.job_id, status.value,
                 f": {self.graph.failure}" if status is JobStatus.FAILED else "")
