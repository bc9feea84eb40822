"""The JobMaster of one job (seed 001): the RPC shell around the job's scheduler. It
takes the job's messages in (fenced by its JobMasterId), keeps its executors'
gateways and heartbeats, hands out input splits, and owns the job's lifecycle: start,
cancel, and the end, announced once the executors freed its slots. What happens to
subtasks (deployment, failures, restarts) is the scheduler's
(``scheduler/default_scheduler.py``); the outputs' commit is ``outputs.py``'s, and
the job's stored results and event log ``job_events.py``'s.
"""
from __future__ import annotations

import logging
import os
import uuid
from concurrent.futures import Future
from typing import Callable, TypeVar

from yarnflow.appmaster.jobmaster.checkpoint.job_checkpoints import JobCheckpoints
from yarnflow.appmaster.jobmaster.settings import JobMasterSettings
from yarnflow.core.ids import AllocationID, ExecutionAttemptID, JobMasterId, ResourceID
from yarnflow.appmaster.jobmaster.executiongraph import ExecutionGraph, ExecutionVertex, Execution
from yarnflow.appmaster.jobmaster.blocklist_handler import JobMasterBlocklistHandler
from yarnflow.appmaster.jobmaster.job_details import job_details
from yarnflow.appmaster.jobmaster.job_events import JobStorage, StoredResults
from yarnflow.appmaster.attempt_fence import NO_FENCE, AttemptFence
from yarnflow.appmaster.jobmaster.outputs import JobOutputs
from yarnflow.appmaster.jobmaster.scheduler.allocator import SlotSharingSlotAllocator
from yarnflow.appmaster.jobmaster.scheduler.default_scheduler import DefaultScheduler
from yarnflow.appmaster.jobmaster.scheduler.scheduler_ng import (JobMasterAddress, SchedulerFactory,
                                                                  SchedulerNG)
from yarnflow.appmaster.jobmaster.scheduler.slot_sharing import SlotSharing
from yarnflow.appmaster.jobmaster.slotpool import SlotPool, TaskExecutorLocation
from yarnflow.appmaster.jobmaster.splits import Assigned, InputSplitAssigner, Locality, source_split_assigners
from yarnflow.appmaster.resourcemanager.gateway import ResourceManagerGateway
from yarnflow.conf import Configuration
from yarnflow.core.details import JobDetails, JobResult
from yarnflow.core.errors import EndpointStopped, Refused
from yarnflow.core.jobgraph import JobGraph
from yarnflow.core.messages import AskAgain, SlotOffer, TaskExecutionState
from yarnflow.core.status import ExecutionState
from yarnflow.core.worker_spec import slots_needed
from yarnflow.rpc.endpoint import MainThread, MainThreadExecutor, ScheduledTask, when_all_done
from yarnflow.taskexecutor.gateway import TaskExecutorGateway

log = logging.getLogger(__name__)
T = TypeVar("T")


class JobMaster:
    def __init__(self, graph: JobGraph, config: Configuration, address: str,
                 te_gateway_factory: Callable[[TaskExecutorLocation, JobMasterId], TaskExecutorGateway],
                 job_master_id: JobMasterId | None = None,
                 main: MainThreadExecutor | None = None, application_attempt: int = 1,
                 scheduler_factory: SchedulerFactory = DefaultScheduler,
                 admitted: "Future[None] | None" = None,
                 fence: AttemptFence = NO_FENCE) -> None:
        """``graph`` as received: its operators are cloudpickle bytes, never unpickled
        here (``yarnflow.rpc.codec.as_received``). Nothing here reads a file system:
        listing the sources' splits and taking over stored results happen at start.
        ``admitted``: the job runs at once but commits its output only once this is
        done (``outputs.py``). ``fence``: whether this ApplicationMaster attempt still
        owns the job's files (``attempt_fence.py``)."""
        self.job_id = graph.job_id
        self.application_attempt = application_attempt
        self.job_master_id = job_master_id or JobMasterId(uuid.uuid4().hex)
        self.address = address
        self.settings = settings = JobMasterSettings.of(config)   # read once, per job
        self.main: MainThreadExecutor = main or MainThread(f"jobmaster-{self.job_id[:8]}")
        self._clock = self.main.clock
        self.result: Future[JobResult] = Future()
        self._te_gateway_factory = te_gateway_factory
        self._gateways: dict[str, TaskExecutorGateway] = {}
        self._last_heartbeat: dict[ResourceID, float] = {}
        self._rm: ResourceManagerGateway | None = None
        self._on_terminated: list[Callable[[JobResult], None]] = []
        self._heartbeat_check: ScheduledTask | None = None
        self._lease_renewal: ScheduledTask | None = None

        self.graph = ExecutionGraph(graph, self._clock,
                                    settings.adaptive.parallelism.max_parallelism)
        # the YARN application this ApplicationMaster runs as (Skein's; "" locally)
        self.outputs = JobOutputs(graph, admitted, fence,
                                  settings.collect_max_result_size,
                                  settings.heartbeat_timeout,
                                  os.environ.get("SKEIN_APPLICATION_ID", ""))
        default_slot = settings.default_slot
        profiles = {name: graph.shared_slot_profiles(name, default_slot)
                    for name in graph.slot_sharing_groups()}
        self.slot_pool = SlotPool(self.main, self.job_id, settings.slot_idle_timeout,
                                  settings.slot_request_timeout,
                                  lambda slot, cause: self.scheduler.slot_lost(slot, cause))
        self.slot_pool.wanted = slots_needed(graph, default_slot)
        self.blocklist = JobMasterBlocklistHandler(settings.failure_blocker, settings.slow_blocker,
                                                   self.main, self.slot_pool, lambda: self._rm)
        self.slot_pool.is_blocked = self.blocklist.blocklist.is_blocked
        sharing = SlotSharing(self.graph, profiles)
        self.allocator = SlotSharingSlotAllocator(
            self.slot_pool, sharing.assignment, self._input_host, sharing,
            lambda group, scheduled: graph.shared_slot_profile_now(
                [graph.vertices[v.job_vertex.id] for v in group.members],
                [graph.vertices[v.job_vertex.id] for v in scheduled], default_slot))
        self._splits: dict[str, InputSplitAssigner] = {}
        storage = JobStorage.of(settings.storage, self.job_id, fence)
        self._stored = StoredResults(storage, self.graph, self.outputs.sinks) if storage else None
        self.scheduler: SchedulerNG = scheduler_factory(
            self.graph, settings, self.main, self.slot_pool, self.allocator, self.outputs,
            self._splits, JobMasterAddress(self.job_master_id, address),
            on_subtask_finished=self._stored.subtask_finished if self._stored else lambda v: None,
            on_ended=self._terminate, task_slow=self.blocklist.task_slow)
        # an unbounded job's second duty (seed 003): its checkpoints
        self.checkpoints = JobCheckpoints(self.graph, settings.streaming,
                                          settings.storage.filesystem, self.main,
                                          self.scheduler) if settings.streaming.enabled else None

    def _input_host(self, vertex: ExecutionVertex) -> str:
        """Where a source subtask's share of the splits is stored, for its first attempt
        ("" for other vertices): a restarted attempt goes where there is room, as the
        planned host may be the one that was lost, and its splits are handed out anew."""
        assigner = self._splits.get(vertex.job_vertex.id)
        if assigner is None or vertex.current.attempt_number > 0:
            return ""
        return assigner.host_for(vertex.subtask_index)

    # --- lifecycle (main thread) -------------------------------------------------------
    def start(self) -> None:
        # listing a large input's splits may take long: the file system bounds its calls
        self.main.call(self._start, timeout=None)

    def _start(self) -> None:
        # a streaming job's sources find their own splits (Kafka partitions, new files)
        splits, failure = ({}, None) if self.checkpoints is not None else \
            source_split_assigners(self.graph.vertices_topologically(), self.settings.splits,
                                   self._clock.monotonic)
        self._splits.update(splits)
        if failure is None and self._stored is not None:
            failure = self._stored.take_over()
        if failure is None:
            failure = self.outputs.setup()
        if failure is None and self.checkpoints is not None:
            failure = self.checkpoints.start()
        if failure is not None:
            self.scheduler.fail_before_start(failure)
            return
        timeout = self.settings.heartbeat_timeout
        interval = min(timeout / 2, self.settings.heartbeat_interval)
        self._heartbeat_check = self.main.schedule_periodic(interval, self._check_heartbeats)
        # three renewals may fail or come late before another job takes the lease as lapsed
        self._lease_renewal = self.main.schedule_periodic(timeout / 4, self.outputs.renew_leases)
        self.scheduler.start()
        if self.checkpoints is not None:
            self.checkpoints.run()

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
        self._unless_ended(self.scheduler.cancel)

    def _unless_ended(self, fn: Callable[[], T]) -> T | JobResult:
        """``fn`` on the main thread, or the job's result when the job ended first (its
        main thread goes with it, so a caller racing the end sees the end)."""
        try:
            return self.main.call(fn)
        except EndpointStopped:
            return self.result.result(timeout=self.settings.rpc_timeout)

    # --- reports from TaskExecutors ----------------------------------------------------
    def update_task_execution_state(self, report: TaskExecutionState) -> bool:
        """False when the attempt is not one of its vertex's (the current one, or a
        speculative one beside it): it was replaced."""
        if report.state is ExecutionState.FAILED and not (report.upstream_failure
                                                          or report.non_recoverable):
            execution = self._live(report.attempt_id)
            if execution is not None and execution.slot is not None:
                self.blocklist.task_failed(execution.slot.location.host)
        if report.collected and (execution := self._live(report.attempt_id)) is not None:
            execution.collected = report.collected      # until the job ends (outputs.py)
        return self.scheduler.update_task_execution_state(report)

    def notify_partition_data_available(self, attempt_id: ExecutionAttemptID, result_id: str) -> None:
        self.scheduler.partition_has_data(attempt_id, result_id)

    # --- input splits ----------------------------------------------------------------
    def request_next_input_split(self, vertex_id: str, attempt_id: ExecutionAttemptID,
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


    # --- executors -------------------------------------------------------------------
    def trigger_savepoint(self, directory: str, terminate: bool) -> "Future[str]":
        """A savepoint of the running job into ``directory`` (``state.savepoints.dir``
        when empty); with ``terminate`` the job then stops (``yarnflow stop``). The
        future has the savepoint's location once it completed."""
        def trigger() -> "Future[str]":
            if self.checkpoints is None:
                raise Refused(f"job {self.job_id} is not a streaming job: only an unbounded "
                              "job takes savepoints")
            return self.checkpoints.savepoint(directory, terminate)
        return self.main.call(trigger)

    def acknowledge_checkpoint(self, attempt_id: ExecutionAttemptID, checkpoint_id: int,
                               snapshot: bytes) -> None:
        if self.checkpoints is not None:
            self.checkpoints.acknowledge(attempt_id, checkpoint_id, snapshot)

    def decline_checkpoint(self, attempt_id: ExecutionAttemptID, checkpoint_id: int,
                           reason: str) -> None:
        if self.checkpoints is not None:
            self.checkpoints.decline(attempt_id, checkpoint_id, reason)

    def offer_slots(self, location: TaskExecutorLocation, offers: list[SlotOffer]) -> list[str]:
        if self.scheduler.is_lost(location.resource_id):
            return []      # declared lost (a freeze outlasted heartbeat.timeout): not again
        if not self.blocklist.offered_from(location.host):
            return []
        gateway = self._gateways.get(location.resource_id)
        if gateway is None:
            gateway = self._gateways[location.resource_id] = self._te_gateway_factory(location, self.job_master_id)
        self._last_heartbeat[location.resource_id] = self._clock.monotonic()
        return self.slot_pool.offer_slots(location, gateway, offers)

    def heartbeat_from_task_executor(self, resource_id: ResourceID,
                                     attempts: list[TaskExecutionState]) -> None:
        """Reconcile (Flink's ExecutionDeploymentReconciler, plus the reports): what
        the executor says of this job's attempts repairs any state report that was lost,
        and an attempt running there that this JobMaster does not want (replaced,
        cancelled, or never known) is cancelled there."""
        if resource_id not in self._last_heartbeat:
            return
        self._last_heartbeat[resource_id] = self._clock.monotonic()
        for report in attempts:
            if self._live(report.attempt_id, resource_id) is not None:
                self.update_task_execution_state(report)
            elif not report.state.is_terminal:
                self._cancel_unwanted(resource_id, report.attempt_id)

    def report_task_progress(self, resource_id: ResourceID,
                             attempts: list[TaskExecutionState]) -> None:
        """Live metrics, nothing else: states change only through reports and
        heartbeats, which reconcile. A report of an attempt that is no longer current,
        or has ended, is dropped."""
        if resource_id not in self._last_heartbeat:
            return
        self._last_heartbeat[resource_id] = self._clock.monotonic()   # it is alive
        for report in attempts:
            execution = self._live(report.attempt_id, resource_id)
            if execution is not None and report.metrics is not None:
                execution.update_metrics(report.metrics)

    def _live(self, attempt_id: ExecutionAttemptID,
              resource_id: ResourceID | None = None) -> Execution | None:
        """The attempt, if it is its vertex's current one (or a speculative one beside
        it), has not ended, and (given ``resource_id``) runs on that executor; None for
        any other."""
        execution = self.graph.attempts.get(attempt_id)
        if execution is None or execution not in execution.vertex.executions() \
                or execution.state.is_terminal:
            return None
        return execution if resource_id is None or execution.resource_id == resource_id else None

    def _cancel_unwanted(self, resource_id: ResourceID, attempt_id: ExecutionAttemptID) -> None:
        gateway = self._gateways.get(resource_id)
        if gateway is None:
            return
        log.info("TaskExecutor %s runs attempt %s, which job %s does not want: cancelling it",
                 resource_id, attempt_id[:8], self.job_id[:8])
        gateway.cancel_task(attempt_id)

    def disconnect_task_executor(self, resource_id: ResourceID, reason: str) -> None:
        """An executor is gone (its driver saw it end, the ResourceManager or this
        JobMaster missed its heartbeats): the scheduler fails over what it ran and held."""
        if self.scheduler.is_lost(resource_id):
            return
        self._last_heartbeat.pop(resource_id, None)
        self._gateways.pop(resource_id, None)
        self.scheduler.executor_lost(resource_id, reason)

    def notify_allocation_failure(self, allocation_id: AllocationID, cause: str) -> None:
        self.slot_pool.fail_allocation(allocation_id, cause)

    def _check_heartbeats(self) -> None:
        timeout = self.settings.heartbeat_timeout
        now = self._clock.monotonic()
        for resource_id, last in list(self._last_heartbeat.items()):
            if now - last > timeout and not self.scheduler.depends_on(resource_id):
                # it stopped heartbeating because nothing of this job is left there
                self._last_heartbeat.pop(resource_id, None)
                self._gateways.pop(resource_id, None)
            elif now - last > timeout:
                self.disconnect_task_executor(
                    resource_id, f"TaskExecutor {resource_id} sent no heartbeat for "
                    f"{timeout:g} s (heartbeat.timeout): it is presumed dead")

    # --- the end ---------------------------------------------------------------------
    def _terminate(self) -> None:
        """The scheduler says the job is globally terminal: let go of everything."""
        if self.checkpoints is not None:
            self.checkpoints.stop()
        discarded = self.scheduler.stop()
        for timer in (self._heartbeat_check, self._lease_renewal):
            if timer is not None:
                timer.cancel()
        for gateway in self._gateways.values():
            gateway.release_job_partitions(self.job_id)
        freed = self.slot_pool.close(f"job {self.job_id} is {self.graph.status.value}")
        freed.append(discarded)
        if self._stored is not None:     # its results and event log: the job is over
            freed.append(self._stored.storage.discard())
        if self._rm is not None:
            self._rm.disconnect_job_master(f"job {self.graph.status.value}")
        result = JobResult(self.job_id, self.graph.status, self.graph.failure,
                           self.graph.failure_detail, self._details(), self.outputs.collected)
        when_all_done(self.main, freed, self.settings.rpc_timeout,
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
        details = job_details(self.graph, self.scheduler.restarts, self.scheduler.exceptions,
                              self.application_attempt,
                              {vertex_id: a.total for vertex_id, a in self._splits.items()},
                              self.blocklist.blocklist.nodes(), self.scheduler.speculations)
        if self.checkpoints is not None:
            details.checkpoints = self.checkpoints.stats()
        return details

    def details(self) -> JobDetails:
        if self.result.done():
            return self.result.result().details
        answer = self._unless_ended(lambda: self._details())
        return answer.details if isinstance(answer, JobResult) else answer

    def shutdown(self) -> None:
        self.main.shutdown()
