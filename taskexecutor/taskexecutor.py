"""The TaskExecutor (seed 004): registers with the ResourceManager, heartbeats with its
slot report, offers slots to JobMasters when told to, runs their tasks.

It is an endpoint: one main thread, time from that thread's clock, and its peers only
behind gateways, so a unit test drives it with in-memory peers and a manual clock.
The process around it (servers, channels, Spark) is ``taskexecutor.runner``.
"""
from __future__ import annotations

import enum
import functools
import logging
from collections import OrderedDict
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Callable

from yarnflow.core.ids import AllocationID, ExecutionAttemptID, JobID, JobMasterId, ResourceID, ResourceManagerId
from yarnflow.appmaster.jobmaster.gateway import JobMasterGateway
from yarnflow.appmaster.resourcemanager.gateway import ResourceManagerExecutorGateway
from yarnflow.taskexecutor.settings import TaskExecutorSettings
from yarnflow.core.deployment import TaskDeploymentDescriptor
from yarnflow.core.errors import FencingError, NotRegisteredYet, Refused
from yarnflow.core.fs.tokens import CREDENTIALS, HadoopToken
from yarnflow.core.messages import (SlotAllocation, SlotOffer, SlotReport, SlotStatus,
                                    TaskExecutionState, TaskExecutorLocation,
                                    TaskExecutorRegistration)
from yarnflow.core.status import check_transition
from yarnflow.core.streaming.events import CheckpointBarrier
from yarnflow.taskexecutor.running_task import PartitionHolder, RunningTask, TaskFactory
from yarnflow.rpc.endpoint import MainThreadExecutor, ScheduledTask, describe_rpc_error
from yarnflow.taskexecutor.progress import ProgressReports
from yarnflow.taskexecutor.job_master_outbox import JobMasterOutbox, TaskJobMasterGateway
from yarnflow.taskexecutor.slot import SlotStateError, TaskSlotTable

log = logging.getLogger(__name__)
# how many ended attempts an executor remembers, to run none of them again
_REMEMBERED_ATTEMPTS = 10_000


class Registration(enum.Enum):
    """The executor's connection to the ResourceManager."""
    UNREGISTERED = "unregistered"
    REGISTERING = "registering"      # attempts under way, with backoff, until the deadline
    REGISTERED = "registered"
    STOPPED = "stopped"


_REGISTRATION_TRANSITIONS = {
    Registration.UNREGISTERED: {Registration.REGISTERING, Registration.STOPPED},
    Registration.REGISTERING: {Registration.REGISTERED, Registration.STOPPED},
    Registration.REGISTERED: {Registration.REGISTERING, Registration.STOPPED},
    Registration.STOPPED: set(),
}


@dataclass
class _Attempt:
    """One registration run: retried with doubling backoff until ``deadline``."""
    deadline: float
    backoff: float
    last_error: str = ""


class TaskExecutor:
    def __init__(self, resource_id: ResourceID, settings: TaskExecutorSettings, slots: TaskSlotTable,
                 worker_spec: str, resource_manager: ResourceManagerExecutorGateway,
                 job_master_gateway: Callable[[str, JobMasterId], JobMasterGateway],
                 new_task: TaskFactory, partitions: PartitionHolder,
                 main: MainThreadExecutor, on_fatal: Callable[[str], None]) -> None:
        """``job_master_gateway(address, job_master_id)`` makes a fenced handle;
        ``on_fatal(reason)`` stops the process (registration timed out, the
        ResourceManager said shut down)."""
        self.resource_id = resource_id
        self.settings = settings
        self.slots = slots
        # free_slot calls waiting for a task still leaving the slot (allocation id ->)
        self._freeing: dict[str, "Future[None]"] = {}
        self.worker_spec = worker_spec
        self.main = main
        self._clock = main.clock
        self._rm = resource_manager
        self._jm_gateway = job_master_gateway
        self._new_task = new_task
        self._partitions = partitions
        self._on_fatal = on_fatal
        self.location = TaskExecutorLocation(resource_id, "")
        self.resource_manager_id = ResourceManagerId("")
        self.registration = Registration.UNREGISTERED
        self._attempt: _Attempt | None = None
        self._last_rm_ack = self._clock.monotonic()
        self._jm_last_ack: dict[JobMasterId, float] = {}
        # job id -> (JobMaster address, JobMasterId), from its slot allocations: a job's
        # JobMaster hears from this executor while it has slots or results here
        self._job_masters: dict[JobID, tuple[str, JobMasterId]] = {}
        self._heartbeats: ScheduledTask | None = None
        self._progress_reports: ScheduledTask | None = None
        self._progress = ProgressReports()
        self._outbox = JobMasterOutbox(main, job_master_gateway)
        # attempts that ran here and left their slot, the latest _REMEMBERED_ATTEMPTS: a
        # SubmitTask delivered again (a retry, a duplicate, a late copy) must not run one twice
        self._ran: OrderedDict[ExecutionAttemptID, None] = OrderedDict()

    # --- lifecycle (main thread) -----------------------------------------------------
    def start(self, location: TaskExecutorLocation) -> None:
        """Begin registering, once the servers at ``location`` answer."""
        self.location = location
        self._register()

    def stop(self, reason: str) -> None:
        if self.registration is Registration.STOPPED:
            return
        log.info("TaskExecutor %s stopping: %s", self.resource_id, reason)
        self._set_registration(Registration.STOPPED)
        for task in self.slots.tasks():
            task.cancel()
        for timer in (self._heartbeats, self._progress_reports):
            if timer is not None:
                timer.cancel()

    def _set_registration(self, target: Registration) -> None:
        check_transition(_REGISTRATION_TRANSITIONS, self.registration, target,
                         lambda: f"TaskExecutor {self.resource_id} registration")
        self.registration = target

    # --- registration with the ResourceManager ----------------------------------------
    def _register(self) -> None:
        if self.registration in (Registration.REGISTERING, Registration.STOPPED):
            return
        self._set_registration(Registration.REGISTERING)
        self._attempt = _Attempt(
            self._clock.monotonic() + self.settings.registration_timeout,
            self.settings.registration_initial_backoff)
        self._try_register(self._attempt)

    def _try_register(self, attempt: _Attempt) -> None:
        if attempt is not self._attempt or self.registration is not Registration.REGISTERING:
            return
        registration = TaskExecutorRegistration(self.location, self.slot_report(),
                                                worker_spec=self.worker_spec)
        self._rm.register_task_executor(registration).add_done_callback(
            lambda answer: self.main.execute(self._registration_answered, attempt, answer))

    def _registration_answered(self, attempt: _Attempt, answer: "Future[ResourceManagerId]") -> None:
        if attempt is not self._attempt or self.registration is not Registration.REGISTERING:
            return
        err = answer.exception()
        if err is None:
            self._registered(answer.result())
            return
        attempt.last_error = str(err) if isinstance(err, Refused) else describe_rpc_error(err)
        if self._clock.monotonic() + attempt.backoff > attempt.deadline:
            log.error("could not register with the ResourceManager within "
                      "taskmanager.registration.timeout: %s", attempt.last_error)
            self._on_fatal("registration timed out")
            return
        log.info("registration with the ResourceManager failed (%s); retrying in %.1f s",
                 attempt.last_error, attempt.backoff)
        self.main.schedule(attempt.backoff, self._try_register, attempt)
        attempt.backoff = min(attempt.backoff * 2,
                              self.settings.registration_max_backoff)

    def _registered(self, resource_manager_id: ResourceManagerId) -> None:
        self._set_registration(Registration.REGISTERED)
        self._attempt = None
        self.resource_manager_id = resource_manager_id
        self._last_rm_ack = self._clock.monotonic()
        log.info("registered with ResourceManager %s", resource_manager_id)
        if self._heartbeats is None:
            self._heartbeats = self.main.schedule_periodic(
                self.settings.heartbeat_interval, self._send_heartbeats)
        interval = self.settings.progress_interval
        if self._progress_reports is None and interval > 0:
            self._progress_reports = self.main.schedule_periodic(interval, self._send_progress)

    def slot_report(self) -> SlotReport:
        return SlotReport(tuple(SlotStatus(slot.index, slot.profile, slot.allocation_id,
                                           slot.job_id) for slot in self.slots.slots),
                          self.slots.version)

    # --- heartbeats ------------------------------------------------------------------
    def _send_heartbeats(self) -> None:
        timeout = self.settings.heartbeat_timeout
        now = self._clock.monotonic()
        if self.registration is Registration.REGISTERED:
            self._rm.heartbeat_from_task_executor(
                self.resource_manager_id, self.resource_id, self.slot_report(),
                self._partitions.holds_blocking_partitions()).add_done_callback(
                lambda known: known.exception() is None
                and self.main.execute(self._rm_heartbeat_answered, known.result()))
            if now - self._last_rm_ack > timeout:
                self._resource_manager_lost(f"ResourceManager silent for {timeout:g} s")
        job_masters = self._job_masters_to_heartbeat()
        for gone in set(self._jm_last_ack) - set(job_masters):
            del self._jm_last_ack[gone]     # nothing of that JobMaster is left here
        for jm_id, address in job_masters.items():
            self._jm_last_ack.setdefault(jm_id, now)
            attempts = self._attempts_of(jm_id)
            self._jm_gateway(address, jm_id).heartbeat_from_task_executor(
                self.resource_id, attempts).add_done_callback(
                functools.partial(self._on_jm_heartbeat_done, jm_id, attempts))
            if now - self._jm_last_ack[jm_id] > timeout:
                self._job_master_lost(jm_id, f"JobMaster silent for {timeout:g} s")

    def _send_progress(self) -> None:
        """Live progress of the running attempts, to each JobMaster whose attempts here
        moved (``yarnflow.taskexecutor.progress``); a lost report is not retried."""
        running = [(slot.job_master_id, state) for slot in self.slots.slots
                   for task in slot.tasks.values()
                   if not (state := task.current_state()).state.is_terminal]
        addresses = {jm_id: address for jm_id, (address, _) in self.slots.job_masters().items()}
        for jm_id, states in self._progress.changed(running).items():
            if jm_id in addresses:
                self._jm_gateway(addresses[jm_id], jm_id).report_task_progress(
                    self.resource_id, states)

    def _job_masters_to_heartbeat(self) -> dict[JobMasterId, str]:
        """JobMasterId -> address: those with a slot here, those whose job has results
        here that consumers will still read (a finished stage's executor must not be
        presumed dead by its JobMaster), and those a report is still on its way to."""
        targets = {jm_id: address for jm_id, (address, _) in self.slots.job_masters().items()}
        holding = self._partitions.jobs_with_blocking_partitions()
        for job_id, (address, jm_id) in list(self._job_masters.items()):
            if job_id in holding:
                targets.setdefault(jm_id, address)
            elif jm_id not in targets:
                del self._job_masters[job_id]
        for jm_id, address in self._outbox.job_masters().items():
            targets.setdefault(jm_id, address)
        return targets

    def _attempts_of(self, job_master_id: JobMasterId) -> list[TaskExecutionState]:
        """What the heartbeat tells the JobMaster of its attempts here: each running
        one, and each ended one whose final report it has not acknowledged (an ended
        task still in its slot is left to its own report, which carries the cause)."""
        reports = {r.attempt_id: r for r in self._outbox.unacknowledged_reports(job_master_id)}
        for slot in self.slots.slots:
            if slot.job_master_id != job_master_id:
                continue
            for task in slot.tasks.values():
                state = task.current_state()
                if not state.state.is_terminal:
                    reports.setdefault(state.attempt_id, state)
        return list(reports.values())

    def _resource_manager_lost(self, reason: str) -> None:
        """The ResourceManager and the JobMasters live in one ApplicationMaster: when it
        is silent, the process is most likely gone (a new attempt starts with new
        JobMasters that know nothing of these tasks). So the tasks are cancelled and
        their results released rather than left running for nobody, and the executor
        registers again; it exits after ``taskmanager.registration.timeout`` if no
        ResourceManager answers, so no executor outlives its application."""
        log.warning("%s: cancelling this executor's tasks and registering again", reason)
        job_masters = {jm_id for _, jm_id in self._job_masters.values()}
        job_masters |= set(self.slots.job_masters())
        for jm_id in job_masters:
            self._job_master_lost(jm_id, reason)
        self._register()

    def _rm_heartbeat_answered(self, known: bool) -> None:
        self._last_rm_ack = self._clock.monotonic()
        if not known and self.registration is Registration.REGISTERED:
            log.warning("the ResourceManager does not know this executor: registering again")
            self._register()

    def _on_jm_heartbeat_done(self, jm_id: JobMasterId, attempts: list[TaskExecutionState],
                              answer: "Future[None]") -> None:
        if answer.exception() is None:
            self.main.execute(self._jm_heartbeat_answered, jm_id, attempts)

    def _jm_heartbeat_answered(self, jm_id: JobMasterId, attempts: list[TaskExecutionState]) -> None:
        if jm_id in self._jm_last_ack:
            self._jm_last_ack[jm_id] = self._clock.monotonic()
        self._outbox.heartbeat_acknowledged(jm_id, attempts)

    def _job_master_lost(self, job_master_id: JobMasterId, reason: str) -> None:
        log.warning("%s: freeing its slots and releasing its results", reason)
        self._jm_last_ack.pop(job_master_id, None)
        self._outbox.forget(job_master_id)
        for slot in list(self.slots.slots):
            if slot.job_master_id == job_master_id:
                self.free_slot(slot.allocation_id, reason)
        for job_id, (_, jm_id) in list(self._job_masters.items()):
            if jm_id == job_master_id:
                del self._job_masters[job_id]
                self._partitions.release_job(job_id)

    # --- calls from the ResourceManager and JobMasters (main thread) --------------------
    def request_slot(self, allocation: SlotAllocation, resource_manager_id: ResourceManagerId) -> int:
        """Allocate and offer the slot; returns the slot table's version that holds it."""
        if resource_manager_id != self.resource_manager_id:
            if self.registration is Registration.REGISTERING:
                raise NotRegisteredYet(f"TaskExecutor {self.resource_id} is waiting for the "
                                       "answer to its registration: ask again")
            raise FencingError("stale ResourceManagerId: ignored")
        try:
            self.slots.allocate(allocation.slot_index, allocation.job_id, allocation.allocation_id,
                                allocation.job_master_id, allocation.job_master_address)
        except SlotStateError as err:
            raise Refused(str(err)) from None
        allocation_id = allocation.allocation_id
        self._job_masters[allocation.job_id] = (allocation.job_master_address,
                                                allocation.job_master_id)
        offer = SlotOffer(allocation_id, allocation.slot_index, allocation.profile,
                          self.worker_spec)
        self._offer(allocation, offer, 0.0)
        return self.slots.version

    def _offer(self, allocation: SlotAllocation, offer: SlotOffer, pause: float) -> None:
        self._jm_gateway(allocation.job_master_address, allocation.job_master_id).offer_slots(
            self.location, [offer]).add_done_callback(
            lambda answer: self.main.execute(self._offer_answered, allocation, offer, pause,
                                             answer))

    def _offer_answered(self, allocation: SlotAllocation, offer: SlotOffer, pause: float,
                        answer: "Future[list[str]]") -> None:
        allocation_id = allocation.allocation_id
        slot = self.slots.by_allocation(allocation_id)
        if slot is None or slot.job_master_id != allocation.job_master_id:
            return
        err = answer.exception()
        if err is None and allocation_id in answer.result():
            self.slots.activate(allocation_id)
            return
        if err is not None and not isinstance(err, Refused) \
                and self.registration is not Registration.STOPPED:
            # The offer or its answer was lost (FLIP-6's message 14): offer again; the
            # JobMaster knows the slot by (AllocationID, ResourceID) and accepts it once.
            # A JobMaster that is gone is noticed by its heartbeats, which free the slot.
            pause = min(max(pause * 2, 0.5), 5.0)
            log.info("offer of slot %s got no answer (%s): offering again in %.1f s",
                     allocation_id[:8], describe_rpc_error(err), pause)
            self.main.schedule(pause, self._offer_again, allocation, offer, pause)
            return
        why = "not accepted" if err is None else str(err)
        log.info("JobMaster declined slot %s (%s): freeing it", allocation_id[:8], why)
        self.free_slot(allocation_id, why)

    def _offer_again(self, allocation: SlotAllocation, offer: SlotOffer, pause: float) -> None:
        slot = self.slots.by_allocation(allocation.allocation_id)
        if slot is not None and slot.job_master_id == allocation.job_master_id \
                and self.registration is not Registration.STOPPED:
            self._offer(allocation, offer, pause)

    def submit_task(self, tdd: TaskDeploymentDescriptor) -> None:
        """Runs each attempt once: the same deployment delivered again is answered as
        the first was (two runs of one attempt would split its inputs between them and
        write its output twice)."""
        if self.slots.find_task(tdd.attempt_id) is not None or tdd.attempt_id in self._ran:
            log.info("attempt %s of %s was delivered again: it runs once", tdd.attempt_id[:8],
                     tdd.info.vertex_name)
            return

        def on_done(finished: RunningTask) -> None:
            self.main.execute(self._task_done, finished)
        address, jm_id = tdd.info.job_master_address, tdd.info.job_master_id
        task = self._new_task(tdd, TaskJobMasterGateway(self._outbox, self.main, address, jm_id,
                                                        self._jm_gateway(address, jm_id)),
                              on_done)
        try:
            self.slots.add_task(tdd.allocation_id, tdd.info.job_master_id, tdd.attempt_id, task)
        except SlotStateError as err:
            raise Refused(f"cannot run {task.name}: {err}") from None
        log.info("deploying %s (attempt %s) of job %s in slot %s", task.name,
                 task.attempt_id[:8], task.job_id[:8], tdd.allocation_id[:8])
        task.start()

    def cancel_task(self, job_master_id: JobMasterId, attempt_id: ExecutionAttemptID) -> bool:
        """Whether the attempt is known here: False (it never arrived, or ended and was
        reported long ago) lets the JobMaster count it cancelled at once."""
        task = self._fenced_task(job_master_id, attempt_id)
        if task is None:
            return self._outbox.holds(attempt_id)   # its final report is on its way
        self._cancel(task)
        return True

    def trigger_checkpoint(self, job_master_id: JobMasterId, attempt_id: ExecutionAttemptID,
                           barrier: CheckpointBarrier) -> None:
        """A checkpoint starts at this attempt (a stream task's source); one gone is
        answered all the same: the checkpoint expires without it."""
        task = self._fenced_task(job_master_id, attempt_id)
        if task is not None:
            task.trigger_checkpoint(barrier)

    def notify_checkpoint(self, job_master_id: JobMasterId, attempt_id: ExecutionAttemptID,
                          checkpoint_id: int, completed: bool) -> None:
        task = self._fenced_task(job_master_id, attempt_id)
        if task is not None:
            task.notify_checkpoint(checkpoint_id, completed)

    def _fenced_task(self, job_master_id: JobMasterId,
                     attempt_id: ExecutionAttemptID) -> RunningTask | None:
        task: RunningTask | None = self.slots.find_task(attempt_id)
        if task is None:
            return None
        slot = self.slots.by_allocation(task.allocation_id)
        if slot is not None and slot.job_master_id != job_master_id:
            raise FencingError("stale JobMasterId")
        return task

    def _cancel(self, task: RunningTask) -> None:
        """Cancel, and watch (Flink's TaskCancelerWatchDog): a task still in its slot
        task.cancellation.timeout later ignores cancellation (user code stuck in a
        native call or a sleep) and holds its slot forever, so the executor exits and
        its ResourceManager and JobMasters treat it as lost."""
        task.cancel()
        self.main.schedule(self.settings.task_cancel_timeout, self._cancel_overdue, task)

    def _cancel_overdue(self, task: RunningTask) -> None:
        if self.slots.find_task(task.attempt_id) is task and \
                self.registration is not Registration.STOPPED:
            log.error("%s did not stop within task.cancellation.timeout after it was cancelled: "
                      "stopping this TaskExecutor", task.name)
            self._on_fatal(f"{task.name} ignored cancellation")

    def _task_done(self, task: RunningTask) -> None:
        self._ran[task.attempt_id] = None
        if len(self._ran) > _REMEMBERED_ATTEMPTS:
            self._ran.popitem(last=False)
        freed = self.slots.remove_task(task.allocation_id, task.attempt_id)
        waiting = self._freeing.pop(task.allocation_id, None) if freed is not None else None
        if freed is not None:
            heard = self._notify_slot_available(freed.index, task.allocation_id)
            if waiting is not None:
                if heard is None:
                    waiting.set_result(None)
                else:
                    heard.add_done_callback(lambda _: waiting.set_result(None))

    def free_slot(self, allocation_id: AllocationID, cause: str,
                  job_master_id: JobMasterId | None = None) -> "Future[None] | None":
        """Returns the ResourceManager's acknowledgement of the now free slot, which the
        caller may wait for so the slot is known free at once."""
        slot = self.slots.by_allocation(allocation_id)
        if slot is None:
            return None
        if job_master_id is not None and slot.job_master_id != job_master_id:
            raise FencingError("stale JobMasterId")
        for task in list(slot.tasks.values()):
            self._cancel(task)
        index = slot.index
        if self.slots.free(allocation_id) is not None and not slot.tasks:
            return self._notify_slot_available(index, allocation_id)
        if slot.tasks:
            # A task that already reported its end is still leaving the slot: the
            # ResourceManager hears of the free slot once it left, and so does the caller,
            # so a job that ends is not announced before its slots are known free.
            return self._freeing.setdefault(allocation_id, Future())
        return None

    def _notify_slot_available(self, index: int, allocation_id: AllocationID) -> "Future[None] | None":
        if self.registration is not Registration.REGISTERED:
            return None      # the next registration's slot report says it
        return self._rm.notify_slot_available(self.resource_manager_id, self.resource_id,
                                              index, allocation_id)

    def release_job_partitions(self, job_id: JobID, job_master_id: JobMasterId) -> None:
        """Fenced like every JobMaster call: only the job's current JobMaster may drop
        its results (a stale one, of an earlier attempt, must not)."""
        known = self._job_masters.get(job_id)
        if known is not None and known[1] != job_master_id:
            raise FencingError("stale JobMasterId")
        self._partitions.release_job(job_id)
        self._job_masters.pop(job_id, None)

    def update_delegation_tokens(self, resource_manager_id: ResourceManagerId,
                                 tokens: list[HadoopToken]) -> None:
        """A session's renewed tokens: every read and write from now on uses them."""
        if resource_manager_id != self.resource_manager_id:
            raise FencingError("stale ResourceManagerId")
        CREDENTIALS.update(tokens)
        log.info("took %d renewed delegation token(s) from the ResourceManager", len(tokens))

    def shutdown_requested(self, resource_manager_id: ResourceManagerId, reason: str) -> None:
        if resource_manager_id != self.resource_manager_id:
            raise FencingError("stale ResourceManagerId")
        self._on_fatal(reason)
