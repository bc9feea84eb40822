"""A slot a TaskExecutor offered to this job, and where that executor is."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from yarnflow.core.resources import ResourceSpec


@dataclass(frozen=True)
class TaskExecutorLocation:
    resource_id: str
    host: str
    rpc_address: str = ""
    data_address: str = ""

    @classmethod
    def from_proto(cls, message: Any) -> "TaskExecutorLocation":
        return cls(message.resource_id, message.host, message.rpc_address, message.data_address)


@dataclass(eq=False)
class PhysicalSlot:
    """A slot the SlotPool holds, keyed by AllocationID."""
    allocation_id: str
    location: TaskExecutorLocation
    slot_index: int
    profile: ResourceSpec
    gateway: Any = field(repr=False, default=None)

    def __repr__(self) -> str:
        return f"slot {self.allocation_id[:8]} on {self.location.resource_id} ({self.profile})"
