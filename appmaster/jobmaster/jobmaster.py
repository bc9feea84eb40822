"""The JobMaster of one job (seed 001): it owns the ExecutionGraph, the scheduler and
the SlotPool, reacts to task state reports, and ends the job.

A failed subtask, or an executor lost with subtasks or needed results on it, is one
failure: the failover strategy names the subtasks to restart (its pipelined region,
and what that needs and feeds), the restart strategy says whether and after how long
(seed 003, FLIP-6's TaskManager crash). Those subtasks are cancelled, and once they
have all stopped and the pause is over, they restart as new attempts, preferring
their previous slots; a source's splits go back to its assigner. A failure no retry
can fix (no slot for a profile, a deployment that cannot be built) fails the job at
once, as does a failure the restart strategy allows no more restarts for.
"""
from __future__ import annotations

import logging
import uuid
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Callable, Iterable, TypeVar

from yarnflow.appmaster.jobmaster.executiongraph import (Execution, ExecutionGraph,
                                                         ExecutionState, ExecutionVertex,
                                                         IntermediateResultPartition, JobStatus)
from yarnflow.appmaster.resourcemanager.gateway import ResourceManagerGateway
from yarnflow.taskexecutor.gateway import TaskExecutorGateway
from yarnflow.appmaster.jobmaster.failover import failover_strategy, restart_strategy
from yarnflow.appmaster.jobmaster.failover.regions import PipelinedRegion, pipelined_regions
from yarnflow.appmaster.jobmaster.job_details import job_details
from yarnflow.appmaster.jobmaster.job_events import (JobStorage, finished_region_event,
                                                     restore_finished_regions)
from yarnflow.appmaster.jobmaster.scheduler.allocator import SlotSharingSlotAllocator
from yarnflow.appmaster.jobmaster.scheduler.deployment import build_descriptor, invalidate_descriptors
from yarnflow.appmaster.jobmaster.scheduler.scheduler import Scheduler
from yarnflow.appmaster.jobmaster.scheduler.slot_sharing import build_slot_sharing_groups
from yarnflow.appmaster.jobmaster.slotpool import PhysicalSlot, SlotPool, TaskExecutorLocation
from yarnflow.core.details import ExceptionEntry, JobDetails, JobResult
from yarnflow.core.errors import EndpointStopped, Refused
from yarnflow.core.jobgraph import JobGraph, PartitionType, ScheduleMode
from yarnflow.core.messages import AskAgain, SlotOffer, TaskExecutionState
from yarnflow.appmaster.jobmaster.outputs import JobOutputs
from yarnflow.appmaster.jobmaster.splits import Assigned, Locality, source_split_assigners
from yarnflow.conf import Configuration, options
from yarnflow.rpc.endpoint import (MainThread, MainThreadExecutor, ScheduledTask, describe_rpc_error,
                                   when_all_done)

log = logging.getLogger(__name__)
T = TypeVar("T")

_STOPPED = frozenset({ExecutionState.FAILED, ExecutionState.CANCELING, ExecutionState.CANCELED})

# Failures a job's details keep (Flink's web.exception-history-size).
EXCEPTION_HISTORY_SIZE = 16


@dataclass(eq=False)
class PendingRestart:
    """Subtasks being stopped for a restart; they restart when all have stopped and
    ``due`` (the restart strategy's pause) has passed."""
    vertices: set[ExecutionVertex] = field(default_factory=set)
    due: float = 0.0
    timer: ScheduledTask | None = None


class JobMaster:
    def __init__(self, graph: JobGraph, config: Configuration, address: str,
                 te_gateway_factory: Callable[[TaskExecutorLocation, str], TaskExecutorGateway],
                 job_master_id: str | None = None,
                 main: MainThreadExecutor | None = None, application_attempt: int = 1) -> None:
        """``graph`` as received: its operators are cloudpickle bytes, never unpickled
        here (``yarnflow.rpc.codec.as_received``)."""
        self.job_id = graph.job_id
        self.application_attempt = application_attempt
        self.job_master_id = job_master_id or uuid.uuid4().hex
        self.address = address
        self.config = config
        self.main: MainThreadExecutor = main or MainThread(f"jobmaster-{self.job_id[:8]}")
        self._clock = self.main.clock
        self.result: Future[JobResult] = Future()
        self._te_gateway_factory = te_gateway_factory
        self._gateways: dict[str, TaskExecutorGateway] = {}
        self._last_heartbeat: dict[str, float] = {}
        self._rm: ResourceManagerGateway | None = None
        self._on_terminated: list[Callable[[JobResult], None]] = []

        self.graph = ExecutionGraph(graph, self._clock)
        self.outputs = JobOutputs(graph)
        default_slot = options.default_slot_profile(config)
        profiles = {name: graph.shared_slot_profiles(name, default_slot)
                    for name in graph.slot_sharing_groups()}
        self.slot_pool = SlotPool(self.main, self.job_id, config.get(options.SLOT_IDLE_TIMEOUT),
                                  config.get(options.SLOT_REQUEST_TIMEOUT), self._on_slot_lost)
        self.allocator = SlotSharingSlotAllocator(
            self.slot_pool, build_slot_sharing_groups(self.graph, profiles), self._input_host)
        self.scheduler = Scheduler(self.main, self.graph, self.allocator, self._deploy,
                                   self._fail_vertex)
        self._restart_strategy = restart_strategy(config)
        self._failover = failover_strategy(config.get(options.FAILOVER_STRATEGY), self.graph)
        self._restart: PendingRestart | None = None
        self._lost_executors: set[str] = set()
        # failed attempts whose failure is likely the echo of another on its way (an
        # input that went away, an executor that did not answer): -> their executor
        self._awaiting_cause: dict[Execution, str] = {}
        self.restarts = 0
        self.exceptions: list[ExceptionEntry] = []
        self._splits, self._setup_error = source_split_assigners(
            self.graph.vertices_topologically(), config, self._clock.monotonic)
        self._heartbeat_check: ScheduledTask | None = None
        self._storage = JobStorage.of(config, self.job_id)
        self._regions: dict[ExecutionVertex, PipelinedRegion] = {}
        if self._storage is not None and not self._setup_error:
            self._setup_error = self._use_storage(self._storage)

    def _input_host(self, vertex: ExecutionVertex) -> str:
        """Where a source subtask's share of the splits is stored, for its first attempt
        ("" for other vertices): a restarted attempt goes where there is room, as the
        planned host may be the one that was lost, and its splits are handed out anew."""
        assigner = self._splits.get(vertex.job_vertex.id)
        if assigner is None or vertex.current.attempt_number > 0:
            return ""
        return assigner.host_for(vertex.subtask_index)

    # --- batch job recovery ------------------------------------------------------------
    def _use_storage(self, storage: JobStorage) -> str:
        """Send BLOCKING results to the cluster file system and, with job recovery, take
        over what an earlier ApplicationMaster attempt finished; the failure, if any."""
        blocking = [r for r in self.graph.results.values()
                    if r.partition_type is PartitionType.BLOCKING]
        if not blocking:
            return ""
        try:
            storage.prepare()
            logged = storage.replay() if storage.events_enabled else {}
        except Exception as err:    # noqa: BLE001 - unreachable, refused: named below
            return (f"the job's results cannot be stored in {storage.job_dir}: "
                    f"{type(err).__name__}: {err} (execution.batch.partition-store.dir; "
                    "or execution.batch.partition-store: local)")
        for result in blocking:
            result.store = storage.result_dir(result.id)
        # A stored result is read from its files once its producers finished, so its
        # consumers start then (an EAGER consumer would read files being written).
        # Only BLOCKING exchanges separate regions, so nothing else changes.
        self.graph.schedule_mode = ScheduleMode.LAZY_FROM_SOURCES
        if storage.events_enabled:
            self._regions = pipelined_regions(self.graph)
            restored = restore_finished_regions(self.graph, self._regions, logged)
            if restored:
                log.info("job %s: %d of %d subtasks finished under an earlier "
                         "ApplicationMaster attempt; their results are read from %s",
                         self.job_id[:8], restored, len(self._regions), storage.job_dir)
        return ""

    def _log_if_region_finished(self, vertex: ExecutionVertex) -> None:
        region = self._regions.get(vertex)
        if region is None or self._storage is None:
            return
        event = finished_region_event(region, self.outputs.sinks)
        if event:
            self._storage.region_finished(event)

    # --- lifecycle (main thread) -------------------------------------------------------
    def start(self) -> None:
        self.main.call(self._start)

    def _start(self) -> None:
        failure = self._setup_error or self.outputs.setup()
        if failure:
            self._record_exceptions([], failure)
            self.graph.failure = failure
            self._transition(JobStatus.FAILED)
            self.outputs.abort()
            self._terminate()
            return
        self._transition(JobStatus.RUNNING)
        timeout = self.config.get(options.HEARTBEAT_TIMEOUT)
        self._heartbeat_check = self.main.schedule_periodic(
            min(timeout / 2, self.config.get(options.HEARTBEAT_INTERVAL)), self._check_heartbeats)
        self.scheduler.start()
        self._check_termination()      # everything may have finished in an earlier attempt

    def connect_resource_manager(self, rm: ResourceManagerGateway) -> None:
        def connect() -> None:
            self._rm = rm
            self.slot_pool.connect_resource_manager(rm)
        self.main.call(connect)

    def add_termination_listener(self, listener: Callable[[JobResult], None]) -> None:
        """``listener(result)`` once the job has ended; at once if it already has."""
        def add() -> JobResult | None:
            if self.result.done():
                return self.result.result()
            self._on_terminated.append(listener)
            return None
        ended = self.result.result() if self.result.done() else self._unless_ended(add)
        if ended is not None:
            listener(ended)

    def cancel(self) -> None:
        """Cancel the job; nothing to do once it has ended."""
        self._unless_ended(self._cancel)

    def _unless_ended(self, fn: Callable[[], T]) -> T | JobResult:
        """``fn`` on the main thread, or the job's result when the job ended first (its
        main thread goes with it, so a caller racing the end sees the end)."""
        try:
            return self.main.call(fn)
        except EndpointStopped:
            return self.result.result(timeout=self.config.get(options.RPC_ASK_TIMEOUT))

    def _cancel(self) -> None:
        if self.graph.status.is_globally_terminal or self.graph.status in (
                JobStatus.CANCELLING, JobStatus.FAILING):
            return
        self._transition(JobStatus.CANCELLING)
        self._cancel_all_executions()

    # --- deployment ------------------------------------------------------------------
    def _deploy(self, vertex: ExecutionVertex) -> None:
        execution = vertex.current
        execution.transition(ExecutionState.DEPLOYING)
        for result in vertex.job_vertex.produced:
            if execution.attempt_number > 0:
                invalidate_descriptors(result)
        try:
            descriptor = build_descriptor(execution, self.job_master_id, self.address)
        except Exception as err:
            self._task_failed(execution, f"could not build the deployment of {vertex}: {err}",
                              recoverable=False)
            return
        gateway = execution.slot.gateway
        location = execution.slot.location

        def failed(err: Exception) -> None:
            # An executor that cannot be reached is most likely dying, and its loss (the
            # real cause, with its exit code and log) is on its way: like an upstream
            # failure, this waits the grace period for it. A refusal is the cause itself.
            if execution.state is ExecutionState.DEPLOYING:
                self._task_failed(execution, f"could not deploy {vertex} to TaskExecutor "
                                  f"{location.resource_id}: {describe_rpc_error(err)}",
                                  upstream=not isinstance(err, Refused))
        gateway.submit_task(descriptor).add_done_callback(
            lambda f: f.exception() is not None and self.main.execute(failed, f.exception()))

    # --- reports from TaskExecutors ----------------------------------------------------
    def update_task_execution_state(self, report: TaskExecutionState) -> bool:
        """False when the attempt is not the vertex's current one (it was replaced)."""
        execution = self.graph.attempts.get(report.attempt_id)
        if execution is None or execution is not execution.vertex.current:
            return False
        state = report.state
        if report.metrics is not None:
            execution.metrics = report.metrics
        if state is ExecutionState.FAILED:
            self._task_failed(execution, report.error, report.error_detail,
                              upstream=report.upstream_failure)
        elif state is ExecutionState.FINISHED:
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
        self.scheduler.release_slot_of(execution.vertex)
        for partition in execution.vertex.produced_partitions():
            partition.finished = True
            self.scheduler.on_partition_consumable(partition.result)
        self._log_if_region_finished(execution.vertex)
        self._check_termination()

    def _on_canceled(self, execution: Execution) -> None:
        if execution.state.is_terminal:
            return
        if execution.state is not ExecutionState.CANCELING:
            execution.transition(ExecutionState.CANCELING)
        execution.transition(ExecutionState.CANCELED)
        self.scheduler.release_slot_of(execution.vertex)
        if self._restart is not None and execution.vertex in self._restart.vertices:
            self._maybe_restart()
        else:
            self._check_termination()

    def notify_partition_data_available(self, attempt_id: str, result_id: str) -> None:
        execution = self.graph.attempts.get(attempt_id)
        result = self.graph.results.get(result_id)
        if execution is None or result is None or execution is not execution.vertex.current:
            return
        result.partitions[execution.vertex.subtask_index].has_data = True
        self.scheduler.on_partition_consumable(result)

    def request_next_input_split(self, vertex_id: str, attempt_id: str,
                                 request: int) -> bytes | AskAgain | None:
        execution = self.graph.attempts.get(attempt_id)
        if execution is None or execution.state.is_terminal:
            raise Refused(f"attempt {attempt_id} is not running in job {self.job_id}")
        last = execution.last_split_answer
        if last is not None and last[0] == request:
            return last[1]        # a retry: the answer to it was lost or late
        answer = self._next_split(execution, vertex_id)
        execution.last_split_answer = (request, answer)
        return answer

    def _next_split(self, execution: Execution, vertex_id: str) -> bytes | AskAgain | None:
        assigner = self._splits.get(vertex_id)
        if assigner is None:
            raise Refused(f"vertex {vertex_id} is not a source of job {self.job_id}")
        host = execution.slot.location.host if execution.slot is not None else ""

        def readers() -> set[str]:
            return {v.current.slot.location.host
                    for v in execution.vertex.job_vertex.task_vertices
                    if v.current.slot is not None and not v.current.state.is_terminal}
        answer = assigner.next_split(host, readers, execution.attempt_id,
                                     execution.vertex.subtask_index)
        if not isinstance(answer, Assigned):
            return answer
        if answer.locality is Locality.LOCAL:
            execution.splits_local += 1
        elif answer.locality is Locality.REMOTE:
            execution.splits_remote += 1
        return answer.split

    def offer_slots(self, location: TaskExecutorLocation, offers: list[SlotOffer]) -> list[str]:
        if location.resource_id in self._lost_executors:
            return []      # declared lost (a freeze outlasted heartbeat.timeout): not again
        gateway = self._gateways.get(location.resource_id)
        if gateway is None:
            gateway = self._gateways[location.resource_id] = self._te_gateway_factory(location, self.job_master_id)
        self._last_heartbeat[location.resource_id] = self._clock.monotonic()
        return self.slot_pool.offer_slots(location, gateway, offers)

    def heartbeat_from_task_executor(self, resource_id: str,
                                     attempts: list[TaskExecutionState]) -> None:
        """Reconcile (Flink's ExecutionDeploymentReconciler, plus the reports): what
        the executor says of this job's attempts repairs any state report that was lost,
        and an attempt running there that this JobMaster does not want (replaced,
        cancelled, or never known) is cancelled there."""
        if resource_id not in self._last_heartbeat:
            return
        self._last_heartbeat[resource_id] = self._clock.monotonic()
        for report in attempts:
            execution = self.graph.attempts.get(report.attempt_id)
            live = execution is not None and execution is execution.vertex.current \
                and execution.resource_id == resource_id and not execution.state.is_terminal
            if live:
                self.update_task_execution_state(report)
            elif not report.state.is_terminal:
                self._cancel_unwanted(resource_id, report.attempt_id)

    def _cancel_unwanted(self, resource_id: str, attempt_id: str) -> None:
        gateway = self._gateways.get(resource_id)
        if gateway is None:
            return
        log.info("TaskExecutor %s runs attempt %s, which job %s does not want: cancelling it",
                 resource_id, attempt_id[:8], self.job_id[:8])
        gateway.cancel_task(attempt_id)

    def disconnect_task_executor(self, resource_id: str, reason: str) -> None:
        """An executor is gone (its driver saw it end, the ResourceManager or this
        JobMaster missed its heartbeats): its running subtasks failed, and the finished
        results it held are lost. All of it is one failure."""
        if resource_id in self._lost_executors:
            return
        self._lost_executors.add(resource_id)
        self._last_heartbeat.pop(resource_id, None)
        self._gateways.pop(resource_id, None)
        lost = [e for e in self.graph.current_executions()
                if e.resource_id == resource_id and not e.state.is_terminal]
        # attempts that failed there a moment ago (a deployment the dying executor did not
        # take) and were waiting for this, their real cause
        explained = [e for e, where in list(self._awaiting_cause.items())
                     if where == resource_id and e is e.vertex.current]
        for execution in explained:
            del self._awaiting_cause[execution]
        if lost or explained:
            reason = f"{reason}; lost subtasks: " + ", ".join(e.vertex.name_with_index
                                                              for e in lost + explained)
        for execution in explained:
            execution.failure = reason
        failed = [e for e in lost if self._mark_failed(e, reason)] + explained
        self.slot_pool.release_task_manager(resource_id, reason)   # its slots: already failed
        if self.graph.status is not JobStatus.RUNNING:
            self._check_termination()
            return
        needed = self._lost_results_still_needed(resource_id)
        if failed or needed:
            self._handle_failure(failed, reason, also=needed)

    def _lost_results_still_needed(self, resource_id: str) -> list[ExecutionVertex]:
        """Producers of finished BLOCKING results stored on ``resource_id`` that a
        subtask which has not finished will read: they must run again."""
        producers: list[ExecutionVertex] = []
        for ejv in self.graph.vertices_topologically():
            for result in ejv.produced:
                if result.partition_type is not PartitionType.BLOCKING or result.store or \
                        all(c.current.state is ExecutionState.FINISHED
                            for c in result.consumer.task_vertices):
                    continue
                producers.extend(p.producer for p in result.partitions
                                 if p.finished and p.producer.current.resource_id == resource_id)
        return producers

    def _depends_on(self, resource_id: str) -> bool:
        """Whether the job holds a slot on the executor or will read a result there."""
        return any(slot.location.resource_id == resource_id
                   for slot in self.slot_pool.held_slots()) or \
            bool(self._lost_results_still_needed(resource_id))

    def _partition_available(self, partition: IntermediateResultPartition) -> bool:
        """Whether a restarted consumer can read ``partition`` without its producer
        running again: written or being written, by an attempt that did not fail, on an
        executor that is not lost (a producer not yet deployed runs when it is due)."""
        producer = partition.producer.current
        if partition.result.store and producer.state is ExecutionState.FINISHED:
            return True           # on the cluster file system, not on its executor
        return producer.state not in _STOPPED and producer.resource_id not in self._lost_executors

    def notify_allocation_failure(self, allocation_id: str, cause: str) -> None:
        self.slot_pool.fail_allocation(allocation_id, cause)

    def _check_heartbeats(self) -> None:
        timeout = self.config.get(options.HEARTBEAT_TIMEOUT)
        now = self._clock.monotonic()
        for resource_id, last in list(self._last_heartbeat.items()):
            if now - last > timeout and not self._depends_on(resource_id):
                # it stopped heartbeating because nothing of this job is left there
                self._last_heartbeat.pop(resource_id, None)
                self._gateways.pop(resource_id, None)
            elif now - last > timeout:
                self.disconnect_task_executor(
                    resource_id, f"TaskExecutor {resource_id} sent no heartbeat for "
                    f"{timeout:g} s (heartbeat.timeout): it is presumed dead")

    # --- failures --------------------------------------------------------------------
    def _on_slot_lost(self, slot: PhysicalSlot, cause: str) -> None:
        failed = [v.current for v in self.allocator.vertices_in_slot(slot.allocation_id)
                  if not v.current.state.is_terminal]
        failed = [e for e in failed if self._mark_failed(e, cause)]
        if failed and self.graph.status is JobStatus.RUNNING:
            self._handle_failure(failed, cause)
        else:
            self._check_termination()

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
        elif not recoverable:
            self._record_exceptions([execution], cause)
            self._fail_job(cause, detail)
        elif upstream:
            grace = min(self.config.get(options.UPSTREAM_FAILURE_GRACE),
                        self.config.get(options.HEARTBEAT_INTERVAL))
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
        self.scheduler.release_slot_of(execution.vertex)
        return True

    def _handle_failure(self, failed: list[Execution], cause: str, detail: str = "",
                        also: Iterable[ExecutionVertex] = ()) -> None:
        """One failure: count it, and restart what the failover strategy names, or fail
        the job when the restart strategy allows no more."""
        now = self._clock.monotonic()
        self._record_exceptions(failed, cause)
        vertices = self._failover.tasks_to_restart(
            [e.vertex for e in failed] + list(also), self._partition_available)
        # Failures while a restart is pending join it and count once (FLIP-364): a lost
        # executor's subtasks, or two subtasks of the same bad data, are one failure.
        pending = self._restart
        if pending is None:
            self._restart_strategy.notify_failure(now)
            if not self._restart_strategy.can_restart():
                self._fail_job(f"{cause} (the job ran {self.restarts + 1} "
                               f"attempt{'s' if self.restarts else ''}; no restart: "
                               f"{self._restart_strategy.exhausted()})", detail)
                return
            delay = self._restart_strategy.backoff_time()
            pending = self._restart = PendingRestart(due=now + delay)
            pending.timer = self.main.schedule(delay, self._restart_due, pending)
        pending.vertices |= vertices
        log.info("job %s: %s; restarting %d subtask%s in %.1f s", self.job_id[:8], cause,
                 len(vertices), "" if len(vertices) == 1 else "s", max(0.0, pending.due - now))
        for vertex in vertices:
            self._stop_for_restart(vertex.current)
        # joining a restart whose pause is over: what it waited for may have just ended
        # here (subtasks it was cancelling, failed with their lost executor)
        self._maybe_restart()

    def _record_exceptions(self, failed: list[Execution], cause: str) -> None:
        at = self._clock.time()
        entries = [ExceptionEntry(at, e.vertex.name_with_index, e.attempt_number,
                                  e.resource_id or "",
                                  e.slot.location.host if e.slot is not None else "",
                                  e.failure or cause) for e in failed] \
            or [ExceptionEntry(at, "", 0, "", "", cause)]
        self.exceptions = (self.exceptions + entries)[-EXCEPTION_HISTORY_SIZE:]

    def _stop_for_restart(self, execution: Execution) -> None:
        state = execution.state
        if state is ExecutionState.SCHEDULED:
            execution.transition(ExecutionState.CANCELED)
            self.scheduler.release_slot_of(execution.vertex)
        elif state in (ExecutionState.DEPLOYING, ExecutionState.INITIALIZING,
                       ExecutionState.RUNNING):
            execution.transition(ExecutionState.CANCELING)
            self._send_cancel(execution)
            self.main.schedule(self.config.get(options.TASK_CANCEL_TIMEOUT),
                               self._force_cancelled_one, execution)

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
        if any(not v.current.state.is_terminal and v.current.state is not ExecutionState.CREATED
               for v in pending.vertices):
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
        self.scheduler.restart(restarted)

    def _fail_job(self, cause: str, detail: str) -> None:
        if self.graph.status is not JobStatus.RUNNING:
            return
        self.graph.failure, self.graph.failure_detail = cause, detail
        self._transition(JobStatus.FAILING)
        self._cancel_all_executions()

    def _cancel_all_executions(self) -> None:
        self.scheduler.stop()
        if self._restart is not None:
            if self._restart.timer is not None:
                self._restart.timer.cancel()
            self._restart = None
        self.main.schedule(self.config.get(options.JOB_CANCEL_TIMEOUT), self._force_cancelled)
        for execution in list(self.graph.current_executions()):
            state = execution.state
            if state in (ExecutionState.CREATED, ExecutionState.SCHEDULED):
                execution.transition(ExecutionState.CANCELED)
                self.scheduler.release_slot_of(execution.vertex)
            elif state in (ExecutionState.DEPLOYING, ExecutionState.INITIALIZING,
                           ExecutionState.RUNNING):
                execution.transition(ExecutionState.CANCELING)
                self._send_cancel(execution)
        self._check_termination()

    def _send_cancel(self, execution: Execution) -> None:
        slot = execution.slot
        if slot is None or slot.gateway is None:
            return

        def answered(known: "Future[bool]") -> None:
            # the executor is unreachable, or it has no such attempt (it never arrived,
            # or ended long ago): it counts as cancelled now, not after job.cancel.timeout
            if execution.state is ExecutionState.CANCELING and \
                    (known.exception() is not None or not known.result()):
                self._on_canceled(execution)
        slot.gateway.cancel_task(execution.attempt_id).add_done_callback(
            lambda known: self.main.execute(answered, known))

    def _force_cancelled_one(self, execution: Execution) -> None:
        if execution.state is ExecutionState.CANCELING:
            log.warning("%s did not acknowledge cancellation within task.cancellation.timeout",
                        execution)
            self._on_canceled(execution)

    def _force_cancelled(self) -> None:
        for execution in self.graph.current_executions():
            if execution.state is ExecutionState.CANCELING:
                log.warning("%s did not acknowledge cancellation within job.cancel.timeout",
                            execution)
                execution.transition(ExecutionState.CANCELED)
        self._check_termination()

    # --- the end ---------------------------------------------------------------------
    def _check_termination(self) -> None:
        status = self.graph.status
        if status is JobStatus.RUNNING and self.graph.all_finished():
            failure = self.outputs.commit(self._sink_attempts())
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
            self.outputs.abort()
        self._terminate()

    def _sink_attempts(self) -> dict[str, dict[int, str]]:
        """Per sink, the attempt of each subtask whose files are the output."""
        return {vertex_id: {v.subtask_index: v.current.attempt_id
                            for v in self.graph.job_vertices[vertex_id].task_vertices}
                for vertex_id in self.outputs.sinks}

    def _transition(self, status: JobStatus) -> None:
        self.graph.transition(status)
        log.info("job %s (%s) is %s%s", self.graph.name, self.job_id, status.value,
                 f": {self.graph.failure}" if status is JobStatus.FAILED else "")

    def _terminate(self) -> None:
        self.scheduler.stop()
        if self._heartbeat_check is not None:
            self._heartbeat_check.cancel()
        for gateway in self._gateways.values():
            gateway.release_job_partitions(self.job_id)
        freed = self.slot_pool.close(f"job {self.job_id} is {self.graph.status.value}")
        if self._storage is not None:     # its results and event log: the job is over
            freed.append(self._storage.discard())
        if self._rm is not None:
            self._rm.disconnect_job_master(f"job {self.graph.status.value}")
        result = JobResult(self.job_id, self.graph.status, self.graph.failure,
                           self.graph.failure_detail, self._details())
        when_all_done(self.main, freed, self.config.get(options.RPC_ASK_TIMEOUT),
                      lambda: self._publish(result))

    def _publish(self, result: JobResult) -> None:
        """Announce the end only once the executors freed the job's slots (or did not
        answer within rpc.ask-timeout): whoever submits next finds them free."""
        if self.result.done():
            return
        # Listeners first: whoever waits on the result then finds the job archived
        # and unregistered.
        for listener in self._on_terminated:
            try:
                listener(result)
            except Exception:
                log.exception("job termination listener failed")
        self.result.set_result(result)
        # The job is over: its thread and timers go now, not when the session stops.
        self.main.shutdown()

    def _details(self) -> JobDetails:
        return job_details(self.graph, self.restarts, self.exceptions, self.application_attempt)

    def details(self) -> JobDetails:
        if self.result.done():
            return self.result.result().details
        answer = self._unless_ended(lambda: self._details())
        return answer.details if isinstance(answer, JobResult) else answer

    def shutdown(self) -> None:
        self.main.shutdown()
