"""The interface between a JobMaster and its scheduler (Flink's SchedulerNG): the
JobMaster takes messages in and hands what they mean for subtasks over; the scheduler
calls back only to say a subtask finished, that one ran slow, and that the job ended."""
from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Callable, Protocol

from yarnflow.core.ids import ExecutionAttemptID, JobMasterId, ResourceID
from yarnflow.appmaster.jobmaster.slotpool import PhysicalSlot
from yarnflow.core.details import ExceptionEntry, SpeculativeAttempt
from yarnflow.core.messages import TaskExecutionState


class CheckpointHooks(Protocol):
    """What a streaming job's scheduler tells its CheckpointCoordinator, and asks it."""
    max_parallelism: int

    def task_finished(self, attempt: ExecutionAttemptID) -> None: ...
    def task_failed(self) -> None: ...
    def restore_for(self, execution: Any) -> bytes:
        """What an attempt about to be deployed restores (b"": nothing)."""


class _NoCheckpoints:
    """A batch job's: nothing to tell, nothing to restore."""
    max_parallelism = 0

    def task_finished(self, attempt: ExecutionAttemptID) -> None: ...
    def task_failed(self) -> None: ...

    def restore_for(self, execution: Any) -> bytes:
        return b""


NO_CHECKPOINTS: CheckpointHooks = _NoCheckpoints()


class SchedulerNG(Protocol):
    """What the JobMaster hands its subtasks to."""
    restarts: int
    exceptions: list[ExceptionEntry]

    @property
    def speculations(self) -> list[SpeculativeAttempt]:
        """Its speculative attempts, oldest first."""

    def start(self) -> None: ...
    def fail_before_start(self, cause: str) -> None: ...
    def cancel(self) -> None: ...
    def stop(self) -> "Future[None]":
        """Done once what it keeps outside this process (offloaded deployment parts) is gone."""
    def update_task_execution_state(self, report: TaskExecutionState) -> bool: ...
    def partition_has_data(self, attempt_id: ExecutionAttemptID, result_id: str) -> None: ...
    def executor_lost(self, resource_id: ResourceID, reason: str) -> None: ...
    def slot_lost(self, slot: PhysicalSlot, cause: str) -> None: ...
    def is_lost(self, resource_id: ResourceID) -> bool: ...
    def depends_on(self, resource_id: ResourceID) -> bool: ...
    def set_checkpoint_hooks(self, hooks: CheckpointHooks) -> None:
        """A streaming job: deployments restore state, finished and failed tasks are told."""
    def fail_over(self, cause: str) -> None:
        """Restart every subtask, as the restart strategy allows."""


@dataclass(frozen=True)
class JobMasterAddress:
    """Where the deployed subtasks report to, and the fencing token they report with."""
    job_master_id: JobMasterId
    address: str


# How a JobMaster makes its scheduler: DefaultScheduler's constructor, or a test's fake.
SchedulerFactory = Callable[..., SchedulerNG]
