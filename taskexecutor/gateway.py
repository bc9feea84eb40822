"""How other components reach a TaskExecutor (Flink's TaskExecutorGateway). A handle
is made for one caller and carries its fencing token: the ResourceManager's calls are
fenced with its ResourceManagerId, a JobMaster's with its JobMasterId. The gRPC
implementation is ``yarnflow.rpc.gateways.taskexecutor.GrpcTaskExecutorGateway``; unit tests use
in-memory ones. A refusal fails the future with ``yarnflow.core.errors.Refused``."""
from __future__ import annotations

from concurrent.futures import Future
from typing import Any, Protocol

from yarnflow.core.ids import AllocationID, ExecutionAttemptID, JobID
from yarnflow.core.deployment import TaskDeploymentDescriptor
from yarnflow.core.fs.tokens import HadoopToken
from yarnflow.core.messages import SlotAllocation
from yarnflow.core.streaming.events import CheckpointBarrier


class TaskExecutorGateway(Protocol):
    # --- from the ResourceManager ------------------------------------------------------
    def request_slot(self, allocation: SlotAllocation) -> "Future[int]":
        """Give a slot to a job; the result is the slot report version that holds it."""
        ...

    def shutdown(self, reason: str) -> "Future[None]": ...

    def update_delegation_tokens(self, tokens: list[HadoopToken]) -> "Future[None]":
        """Fresh delegation tokens (fenced by the ResourceManager's id)."""
        ...

    # --- from a JobMaster --------------------------------------------------------------
    def submit_task(self, descriptor: TaskDeploymentDescriptor) -> "Future[Any]": ...
    def cancel_task(self, attempt_id: ExecutionAttemptID) -> "Future[bool]":
        """Whether the executor knew the attempt; if not, it counts as cancelled."""
        ...

    def free_slot(self, allocation_id: AllocationID, cause: str) -> "Future[Any]": ...
    def release_job_partitions(self, job_id: JobID) -> "Future[Any]": ...

    # --- from a streaming job's CheckpointCoordinator -------------------------------------
    def trigger_checkpoint(self, attempt_id: ExecutionAttemptID,
                           barrier: CheckpointBarrier) -> "Future[Any]":
        """Start a checkpoint at a source task (or one whose inputs all ended)."""
        ...

    def notify_checkpoint(self, attempt_id: ExecutionAttemptID, checkpoint_id: int,
                          completed: bool) -> "Future[Any]":
        """The checkpoint completed (commit what it covers) or was aborted."""
        ...
