"""How other components reach a JobMaster (Flink's JobMasterGateway); a handle is
fenced with the JobMasterId it was made for, so a call meant for a JobMaster that has
since been replaced is refused (``FencingError``), never applied to its successor.
The gRPC implementation is ``yarnflow.rpc.gateways.jobmaster.GrpcJobMasterGateway``."""
from __future__ import annotations

from concurrent.futures import Future
from typing import Protocol

from yarnflow.core.ids import AllocationID, ExecutionAttemptID, ResourceID
from yarnflow.core.messages import SlotOffer, SplitAnswer, TaskExecutionState, TaskExecutorLocation


class JobMasterGateway(Protocol):
    # --- from the ResourceManager ------------------------------------------------------
    def disconnect_task_executor(self, resource_id: ResourceID, reason: str) -> "Future[None]":
        """The executor is gone: its slots and the tasks in them are lost."""
        ...

    def notify_allocation_failure(self, allocation_id: AllocationID, cause: str) -> "Future[None]":
        """A slot request cannot be served (workers keep failing to start)."""
        ...

    # --- from a TaskExecutor and its tasks ---------------------------------------------
    def offer_slots(self, location: TaskExecutorLocation,
                    offers: list[SlotOffer]) -> "Future[list[str]]":
        """The AllocationIDs the JobMaster accepted; the executor frees the others."""
        ...

    def heartbeat_from_task_executor(self, resource_id: ResourceID,
                                     attempts: list[TaskExecutionState]) -> "Future[None]":
        """``attempts``: the JobMaster's attempts on the executor, running or with a
        final report not yet acknowledged, which the JobMaster reconciles."""
        ...

    def report_task_progress(self, resource_id: ResourceID,
                             attempts: list[TaskExecutionState]) -> "Future[None]":
        """Live metrics of running attempts on the executor (only those that changed);
        a report that is lost is made good by the next one."""
        ...

    def update_task_execution_state(self, update: TaskExecutionState) -> "Future[None]":
        """Refused when the JobMaster no longer knows the attempt (it was replaced)."""
        ...

    def notify_partition_data_available(self, attempt_id: ExecutionAttemptID, result_id: str) -> "Future[None]": ...

    def request_next_input_split(self, vertex_id: str, attempt_id: ExecutionAttemptID,
                                 request: int) -> "Future[SplitAnswer]":
        """``request`` numbers the attempt's requests: a retry repeats the number and
        gets the same answer."""
        ...

    def acknowledge_checkpoint(self, attempt_id: ExecutionAttemptID, checkpoint_id: int,
                               snapshot: bytes) -> "Future[None]":
        """The attempt's snapshot of the checkpoint is written (``snapshot``: what each
        operator wrote, ``core/streaming/snapshots.py``)."""
        ...

    def decline_checkpoint(self, attempt_id: ExecutionAttemptID, checkpoint_id: int,
                           reason: str) -> "Future[None]":
        ...
