"""What a TaskExecutor needs of the tasks it runs and of its partitions: the
interfaces its tests' fakes implement beside the real ``task.Task``."""
from __future__ import annotations

from typing import Any, Callable, Protocol

from yarnflow.core.deployment import TaskDeploymentDescriptor
from yarnflow.core.ids import AllocationID, ExecutionAttemptID, JobID
from yarnflow.core.messages import TaskExecutionState
from yarnflow.core.streaming.events import CheckpointBarrier
from yarnflow.taskexecutor.job_master_outbox import TaskJobMasterGateway


class RunningTask(Protocol):
    """What the executor needs of a task: ``taskexecutor.task.Task``, or a test's fake."""
    attempt_id: ExecutionAttemptID
    allocation_id: AllocationID
    job_id: JobID
    name: str

    def start(self) -> None: ...
    def cancel(self) -> None: ...

    def current_state(self) -> TaskExecutionState:
        """Its state as a report, for the heartbeats that reconcile it with the JobMaster."""
        ...

    def trigger_checkpoint(self, barrier: CheckpointBarrier) -> None:
        """A stream task starts a checkpoint; a batch task has none and ignores it."""

    def notify_checkpoint(self, checkpoint_id: int, completed: bool) -> None: ...


# (descriptor, its JobMaster, on_done) -> a task not yet started
TaskFactory = Callable[[TaskDeploymentDescriptor, TaskJobMasterGateway,
                        Callable[[Any], None]], RunningTask]


class PartitionHolder(Protocol):
    def holds_blocking_partitions(self) -> bool: ...
    def jobs_with_blocking_partitions(self) -> set[str]: ...
    def release_job(self, job_id: JobID) -> None: ...
