"""A slot a TaskExecutor offered to this job, and where that executor is."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from yarnflow.core.ids import AllocationID
from yarnflow.core.messages import TaskExecutorLocation
from yarnflow.core.resources import ResourceSpec

if TYPE_CHECKING:
    from yarnflow.taskexecutor.gateway import TaskExecutorGateway

__all__ = ["PhysicalSlot", "TaskExecutorLocation"]


@dataclass(eq=False)
class PhysicalSlot:
    """A slot the SlotPool holds, keyed by AllocationID."""
    allocation_id: AllocationID
    location: TaskExecutorLocation
    slot_index: int
    profile: ResourceSpec
    gateway: TaskExecutorGateway | None = field(repr=False, default=None)
    worker_spec: str = ""     # the executor's worker spec, e.g. 2x1c1024m

    def __repr__(self) -> str:
        return f"slot {self.allocation_id[:8]} on {self.location.resource_id} ({self.profile})"
