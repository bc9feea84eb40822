"""The CheckpointCoordinator: one per streaming job, on its JobMaster's main thread
(seed 003: the ExecutionGraph's second responsibility; Flink's class of that name).

It triggers a checkpoint on a timer (``execution.checkpointing.interval``) by sending
a barrier to each source subtask, and to each subtask whose inputs have all ended (so
a finished bounded input never stalls checkpoints, FLIP-147). The barrier travels
with the data; each task snapshots its operators when it has the barrier on every
input and acknowledges with what it wrote. When every running subtask has
acknowledged, the coordinator writes the metadata (off the main thread: the file
system may be slow), the checkpoint is complete, older ones are pruned, and every
task hears that it completed (a sink commits then). A checkpoint that times out or is
declined is aborted; past ``tolerable-failed-checkpoints`` failures in a row the job
fails over, and restarts from the latest completed checkpoint.

The rules of when to trigger are Flink's: at most ``max-concurrent-checkpoints`` in
flight; none sooner than ``min-pause`` after the last one ended; none while a task is
not running. Savepoints (``yarnflow savepoint``, ``stop``) skip the first two.
"""
from __future__ import annotations

import logging
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Callable, Protocol

from yarnflow.appmaster.jobmaster.checkpoint.failure_manager import (
    CheckpointFailureManager, CheckpointFailureReason)
from yarnflow.appmaster.jobmaster.checkpoint.pending import PendingCheckpoint, PendingState, TaskRef
from yarnflow.core.streaming.snapshots import OperatorSubtaskState, SubtaskCheckpointMetrics
from yarnflow.appmaster.jobmaster.checkpoint.stats import CheckpointRecord, CheckpointStatsTracker
from yarnflow.appmaster.jobmaster.checkpoint.store import CompletedCheckpointStore
from yarnflow.core.streaming.checkpoint_metadata import CompletedCheckpoint, OperatorState
from yarnflow.core.ids import ExecutionAttemptID
from yarnflow.core.streaming.events import CheckpointBarrier, CheckpointKind
from yarnflow.rpc.endpoint import MainThreadExecutor, ScheduledTask, run_on_thread

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CheckpointSettings:
    """``execution.checkpointing.*`` and ``state.checkpoints.*``, in seconds."""
    interval: float            # 0: no periodic checkpoints (savepoints still work)
    timeout: float
    min_pause: float
    max_concurrent: int
    tolerable_failures: int
    directory: str             # state.checkpoints.dir, a full URI
    retained: int

    @property
    def enabled(self) -> bool:
        return self.interval > 0


@dataclass(frozen=True)
class CheckpointPlan:
    """Which attempts a checkpoint triggers and waits for, at the moment it starts."""
    to_trigger: tuple[ExecutionAttemptID, ...]
    to_wait_for: dict[ExecutionAttemptID, TaskRef]
    finished: tuple[TaskRef, ...] = ()


class CheckpointTasks(Protocol):
    """What the coordinator needs of the running job (the scheduler's side)."""

    def checkpoint_plan(self) -> CheckpointPlan | None:
        """None when some subtask is not RUNNING (or is being restarted)."""

    def trigger(self, attempt: ExecutionAttemptID, barrier: CheckpointBarrier) -> None:
        """Send ``barrier`` to a source task (retried until the task answers)."""

    def notify_complete(self, attempt: ExecutionAttemptID, checkpoint_id: int) -> None: ...

    def notify_aborted(self, attempt: ExecutionAttemptID, checkpoint_id: int) -> None: ...

    def fail_job(self, reason: str) -> None:
        """Fail the job over (restart strategy permitting) from its latest checkpoint."""

    def terminate(self, checkpoint: CompletedCheckpoint) -> None:
        """A ``stop``'s savepoint completed: the job ends, FINISHED."""


class TriggerRefused(RuntimeError):
    """A checkpoint or savepoint that could not start, with the reason."""

    def __init__(self, reason: CheckpointFailureReason, detail: str = "") -> None:
        super().__init__(detail or reason.message)
        self.reason = reason


# runs a file system call off the main thread (run_on_thread; inline in unit tests)
IoRunner = Callable[[Callable[[], Any]], "Future[Any]"]


class CheckpointCoordinator:
    def __init__(self, job_id: str, settings: CheckpointSettings, main: MainThreadExecutor,
                 tasks: CheckpointTasks, store: CompletedCheckpointStore,
                 io: IoRunner = run_on_thread) -> None:
        self.job_id = job_id
        self.settings = settings
        self._main = main
        self._clock = main.clock
        self._tasks = tasks
        self.store = store
        self._io = io
        self.stats = CheckpointStatsTracker()
        self._failures = CheckpointFailureManager(settings.tolerable_failures)
        self._pending: dict[int, PendingCheckpoint] = {}
        self._results: dict[int, "Future[CompletedCheckpoint]"] = {}
        self._timeouts: dict[int, ScheduledTask] = {}
        self._next_id = store.max_id() + 1
        self._last_end: float | None = None        # monotonic, when the last one ended
        self._periodic: ScheduledTask | None = None
        self._stopped = False
        self._task_finished_since = False     # since the last trigger: one is due soon

    # --- lifecycle (main thread) ---------------------------------------------------------
    def start(self) -> None:
        """Periodic checkpoints from now (the job's tasks are being deployed)."""
        self._stopped = False
        if self.settings.enabled and self._periodic is None:
            self._periodic = self._main.schedule(self.settings.interval, self._periodic_trigger)

    def stop(self, reason: CheckpointFailureReason = CheckpointFailureReason.COORDINATOR_SHUTDOWN
             ) -> None:
        """No more triggers, and every pending checkpoint aborted (the job is failing
        over, cancelled or finished)."""
        self._stopped = True
        if self._periodic is not None:
            self._periodic.cancel()
            self._periodic = None
        for checkpoint_id in sorted(self._pending):
            self._abort(self._pending[checkpoint_id], reason, count=False)

    def restart_after_failover(self) -> None:
        """The job restarted from a checkpoint: pending ones are gone with their tasks."""
        self.stop(CheckpointFailureReason.TASK_FAILURE)
        self.start()

    @property
    def pending_ids(self) -> list[int]:
        return sorted(self._pending)

    # --- triggering -------------------------------------------------------------------------
    def _periodic_trigger(self) -> None:
        self._periodic = None
        if self._stopped:
            return
        delay = self.settings.interval
        try:
            self.trigger(CheckpointKind.CHECKPOINT)
        except TriggerRefused as refused:
            log.debug("checkpoint not triggered: %s", refused)
            if refused.reason is CheckpointFailureReason.MINIMUM_PAUSE:
                assert self._last_end is not None
                delay = max(0.0, self._last_end + self.settings.min_pause - self._clock.monotonic())
        if not self._stopped:
            self._periodic = self._main.schedule(delay, self._periodic_trigger)

    def trigger(self, kind: CheckpointKind, location: str = "") -> "Future[CompletedCheckpoint]":
        """Start a checkpoint (or a savepoint into ``location``); the future completes
        with it, or fails with why it did not. Raises TriggerRefused when it cannot
        start at all."""
        if self._stopped:
            raise TriggerRefused(CheckpointFailureReason.COORDINATOR_SHUTDOWN)
        if not kind.is_savepoint:
            if len(self._pending) >= self.settings.max_concurrent:
                raise TriggerRefused(CheckpointFailureReason.TOO_MANY_CONCURRENT)
            if self.settings.min_pause and self._pending:
                raise TriggerRefused(CheckpointFailureReason.TOO_MANY_CONCURRENT)
            if self.settings.min_pause and self._last_end is not None and \
                    self._clock.monotonic() < self._last_end + self.settings.min_pause:
                raise TriggerRefused(CheckpointFailureReason.MINIMUM_PAUSE)
        plan = self._tasks.checkpoint_plan()
        if plan is None:
            raise TriggerRefused(CheckpointFailureReason.NOT_ALL_TASKS_RUNNING)
        checkpoint_id = self._next_id
        self._next_id += 1
        now_ms = self._clock.time() * 1000.0
        if not location:
            location = self.store.location(checkpoint_id)
        pending = PendingCheckpoint(checkpoint_id, kind, now_ms, self._clock.monotonic(),
                                    location, dict(plan.to_wait_for), plan.finished)
        self._pending[checkpoint_id] = pending
        future: Future[CompletedCheckpoint] = Future()
        self._results[checkpoint_id] = future
        self.stats.triggered(CheckpointRecord(checkpoint_id, kind.value, "IN_PROGRESS", now_ms,
                                              total=len(plan.to_wait_for), location=location))
        self._timeouts[checkpoint_id] = self._main.schedule(
            self.settings.timeout, self._expire, checkpoint_id)
        barrier = self._barrier(pending)
        log.info("triggering %s %d of job %s (%d tasks to trigger, %d to acknowledge)",
                 kind.value, checkpoint_id, self.job_id, len(plan.to_trigger),
                 len(plan.to_wait_for))
        for attempt in plan.to_trigger:
            pending.triggered.add(attempt)
            self._tasks.trigger(attempt, barrier)
        if pending.fully_acknowledged:      # every task had finished
            self._finalize(pending)
        return future

    # --- answers from tasks (main thread) ---------------------------------------------------
    def acknowledge(self, attempt: ExecutionAttemptID, checkpoint_id: int,
                    states: dict[str, OperatorSubtaskState],
                    metrics: SubtaskCheckpointMetrics) -> None:
        pending = self._pending.get(checkpoint_id)
        if pending is None:
            log.debug("acknowledgement of checkpoint %d by %s: not pending (late or repeated)",
                      checkpoint_id, attempt[:8])
            return
        ref = pending.waiting.get(attempt)
        if not pending.acknowledge(attempt, states, metrics):
            return
        assert ref is not None
        self.stats.acknowledged(checkpoint_id, f"{ref.vertex_name}#{ref.subtask_index}",
                                metrics, self._clock.time() * 1000.0)
        if pending.fully_acknowledged:
            self._finalize(pending)

    def decline(self, attempt: ExecutionAttemptID, checkpoint_id: int, reason: str) -> None:
        pending = self._pending.get(checkpoint_id)
        if pending is None or attempt not in pending.waiting:
            return
        log.warning("checkpoint %d of job %s declined by %s: %s", checkpoint_id, self.job_id,
                    attempt[:8], reason)
        self._abort(pending, CheckpointFailureReason.DECLINED, detail=reason)

    @staticmethod
    def _barrier(pending: PendingCheckpoint) -> CheckpointBarrier:
        return CheckpointBarrier(pending.checkpoint_id, int(pending.trigger_ms), pending.kind,
                                 pending.location)

    def task_finished(self, attempt: ExecutionAttemptID) -> None:
        """A task ended while checkpoints waited for it: nothing of it is left to
        snapshot (its output is in its consumers' state), so it counts as finished in
        each of them (FLIP-147). Its barrier may never have left it: the tasks whose
        producers have now all ended are sent the checkpoint's barrier themselves."""
        plan = self._tasks.checkpoint_plan()
        for checkpoint_id in sorted(self._pending):
            pending = self._pending[checkpoint_id]
            ref = pending.waiting.pop(attempt, None) if pending.state is PendingState.PENDING \
                else None
            if ref is None:
                continue
            pending.finished = pending.finished + (ref,)
            if pending.fully_acknowledged:
                self._finalize(pending)
                continue
            for other in plan.to_trigger if plan is not None else ():
                if other in pending.waiting and other not in pending.triggered:
                    pending.triggered.add(other)
                    self._tasks.trigger(other, self._barrier(pending))
        # the tasks after it may wait for a checkpoint to commit what they hold (a file
        # sink at the end of a bounded input): one as soon as none is pending, not an
        # interval later
        self._task_finished_since = True
        if not self._pending and not self._stopped:
            self._main.schedule(0.0, self._trigger_once)

    def _trigger_once(self) -> None:
        if self._stopped or self._pending:
            return
        self._task_finished_since = False
        try:
            self.trigger(CheckpointKind.CHECKPOINT)
        except TriggerRefused as refused:     # the periodic trigger comes back to it
            log.debug("checkpoint after a task finished not triggered: %s", refused)

    def task_failed(self) -> None:
        """A task failed: what is pending cannot complete (the job restarts)."""
        for checkpoint_id in sorted(self._pending):
            self._abort(self._pending[checkpoint_id], CheckpointFailureReason.TASK_FAILURE,
                        count=False)

    # --- ending -----------------------------------------------------------------------------
    def _expire(self, checkpoint_id: int) -> None:
        pending = self._pending.get(checkpoint_id)
        if pending is not None and pending.state is PendingState.PENDING:
            waiting = sorted(f"{r.vertex_name} ({r.subtask_index + 1}/{r.parallelism})"
                             for r in pending.waiting.values())
            self._abort(pending, CheckpointFailureReason.EXPIRED,
                        detail=f"not acknowledged within {self.settings.timeout:g} s by "
                               f"{', '.join(waiting[:5])}{' …' if len(waiting) > 5 else ''}")

    def _finalize(self, pending: PendingCheckpoint) -> None:
        pending.to(PendingState.FINALIZING)
        completed = self._completed(pending)
        store = self.store

        def write() -> list[CompletedCheckpoint]:
            return store.add(completed)

        def written(future: "Future[list[CompletedCheckpoint]]") -> None:
            self._main.execute(self._written, pending, completed, future)
        self._io(write).add_done_callback(written)

    def _written(self, pending: PendingCheckpoint, completed: CompletedCheckpoint,
                 future: "Future[list[CompletedCheckpoint]]") -> None:
        if pending.state is not PendingState.FINALIZING:
            return      # aborted meanwhile (the job failed over)
        error = future.exception()
        if error is not None:
            self._abort(pending, CheckpointFailureReason.FINALIZE_FAILED,
                        detail=f"{type(error).__name__}: {error}")
            return
        pending.to(PendingState.COMPLETED)
        self._forget(pending.checkpoint_id)
        self._last_end = self._clock.monotonic()
        self._failures.completed()
        self.stats.ended(pending.checkpoint_id, True, self._clock.time() * 1000.0,
                         completed.size, completed.location)
        log.info("completed %s %d of job %s (%d bytes, %.0f ms) in %s", completed.kind.value,
                 completed.checkpoint_id, self.job_id, completed.size,
                 completed.completed_ms - completed.trigger_ms, completed.location)
        # older pending checkpoints are subsumed: this one covers what they would have
        for older in [i for i in sorted(self._pending) if i < pending.checkpoint_id]:
            self._abort(self._pending[older], CheckpointFailureReason.SUBSUMED, count=False)
        for attempt in pending.acknowledged:
            self._tasks.notify_complete(attempt, pending.checkpoint_id)
        result = self._results.pop(pending.checkpoint_id, None)
        if result is not None:
            result.set_result(completed)
        if completed.kind is CheckpointKind.TERMINATE:
            self.stop()
            self._tasks.terminate(completed)

    def _abort(self, pending: PendingCheckpoint, reason: CheckpointFailureReason,
               detail: str = "", count: bool = True) -> None:
        if pending.state in (PendingState.COMPLETED, PendingState.ABORTED):
            return
        pending.to(PendingState.ABORTED)
        pending.failure = f"{reason.message}: {detail}" if detail else reason.message
        self._forget(pending.checkpoint_id)
        self._last_end = self._clock.monotonic()
        self.stats.ended(pending.checkpoint_id, False, self._clock.time() * 1000.0,
                         failure=pending.failure)
        for attempt in list(pending.acknowledged) + list(pending.waiting):
            self._tasks.notify_aborted(attempt, pending.checkpoint_id)
        result = self._results.pop(pending.checkpoint_id, None)
        if result is not None:
            result.set_exception(TriggerRefused(reason, f"{pending.kind.value} "
                                                f"{pending.checkpoint_id} failed: "
                                                f"{pending.failure}"))
        if reason is not CheckpointFailureReason.SUBSUMED:
            log.warning("%s %d of job %s aborted: %s", pending.kind.value,
                        pending.checkpoint_id, self.job_id, pending.failure)
        if count and self._failures.failed(reason, pending.kind.is_savepoint):
            self._tasks.fail_job(
                f"{self._failures.continuous_failures} checkpoints failed in a row, more than "
                f"execution.checkpointing.tolerable-failed-checkpoints "
                f"({self.settings.tolerable_failures}); the last: {pending.failure}")
            self._failures.completed()      # the restart starts counting afresh

    def _forget(self, checkpoint_id: int) -> None:
        self._pending.pop(checkpoint_id, None)
        timer = self._timeouts.pop(checkpoint_id, None)
        if timer is not None:
            timer.cancel()
        if self._task_finished_since and not self._pending and not self._stopped:
            self._main.schedule(0.0, self._trigger_once)

    def _completed(self, pending: PendingCheckpoint) -> CompletedCheckpoint:
        operators: dict[str, OperatorState] = {}
        refs = {(r.vertex_id, r.subtask_index): r for r in pending.acknowledged.values()}
        for key, states in pending.states.items():
            ref = refs[key]
            for uid, state in states.items():
                op = operators.get(uid)
                if op is None:
                    op = operators[uid] = OperatorState(uid, ref.vertex_name, ref.parallelism,
                                                        ref.max_parallelism)
                op.subtasks[ref.subtask_index] = state
        return CompletedCheckpoint(self.job_id, pending.checkpoint_id, pending.kind,
                                   pending.trigger_ms, self._clock.time() * 1000.0,
                                   pending.location, operators,
                                   tuple((r.vertex_name, r.subtask_index) for r in pending.finished))

    # --- restore ------------------------------------------------------------------------------
    def latest(self) -> CompletedCheckpoint | None:
        return self.store.latest()

    def restored(self, checkpoint: CompletedCheckpoint) -> None:
        """The job (re)starts from ``checkpoint``: ids go on after it."""
        self._next_id = max(self._next_id, checkpoint.checkpoint_id + 1)
        self.stats.restored_from(checkpoint.checkpoint_id, checkpoint.location,
                                 self._clock.time() * 1000.0, checkpoint.kind.is_savepoint)
