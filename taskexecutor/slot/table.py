"""The TaskExecutor's slot table (Flink's TaskSlotTable): which slot is allocated to
which job and AllocationID, and which tasks run in it. Its report is the truth the
ResourceManager's slot manager follows."""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

from yarnflow.core.ids import AllocationID, ExecutionAttemptID, JobID, JobMasterId
from yarnflow.core.resources import ResourceSpec


class SlotStateError(RuntimeError):
    """A slot operation that the slot's state does not allow."""


class TaskSlotState(enum.Enum):
    FREE = "FREE"
    ALLOCATED = "ALLOCATED"     # reserved for a job, offer to its JobMaster under way
    ACTIVE = "ACTIVE"           # the JobMaster accepted it: tasks may be submitted
    RELEASING = "RELEASING"     # freed while tasks still run: free once they end


_TRANSITIONS = {
    TaskSlotState.FREE: {TaskSlotState.ALLOCATED},
    TaskSlotState.ALLOCATED: {TaskSlotState.ACTIVE, TaskSlotState.FREE, TaskSlotState.RELEASING},
    TaskSlotState.ACTIVE: {TaskSlotState.FREE, TaskSlotState.RELEASING},
    TaskSlotState.RELEASING: {TaskSlotState.FREE},
}


@dataclass
class TaskSlot:
    index: int
    profile: ResourceSpec
    state: TaskSlotState = TaskSlotState.FREE
    allocation_id: AllocationID = AllocationID("")
    job_id: JobID = JobID("")
    job_master_id: JobMasterId = JobMasterId("")
    job_master_address: str = ""
    tasks: dict[str, Any] = field(default_factory=dict)

    def transition(self, target: TaskSlotState) -> None:
        if target not in _TRANSITIONS[self.state]:
            raise SlotStateError(f"slot {self.index}: {self.state.name} -> {target.name} "
                                 "is not allowed")
        self.state = target
        if target is TaskSlotState.FREE:
            self.allocation_id, self.job_id = AllocationID(""), JobID("")
            self.job_master_id, self.job_master_address = JobMasterId(""), ""


class TaskSlotTable:
    def __init__(self, num_slots: int, profile: ResourceSpec) -> None:
        self.slots = [TaskSlot(i, profile) for i in range(num_slots)]
        self._by_allocation: dict[str, TaskSlot] = {}
        self.version = 0   # bumped on every allocation change (see SlotReport.version)

    def allocate(self, index: int, job_id: JobID, allocation_id: AllocationID, job_master_id: JobMasterId,
                 job_master_address: str) -> TaskSlot:
        if not 0 <= index < len(self.slots):
            raise SlotStateError(f"no slot {index}: this executor has {len(self.slots)}")
        slot = self.slots[index]
        if slot.allocation_id == allocation_id:
            return slot   # a repeated request: idempotent
        if slot.state is not TaskSlotState.FREE:
            raise SlotStateError(f"slot {index} is already allocated to {slot.allocation_id}")
        slot.transition(TaskSlotState.ALLOCATED)
        slot.job_id, slot.allocation_id = job_id, allocation_id
        slot.job_master_id, slot.job_master_address = job_master_id, job_master_address
        self._by_allocation[allocation_id] = slot
        self.version += 1
        return slot

    def by_allocation(self, allocation_id: AllocationID) -> TaskSlot | None:
        return self._by_allocation.get(allocation_id)

    def activate(self, allocation_id: AllocationID) -> None:
        slot = self._by_allocation[allocation_id]
        if slot.state is TaskSlotState.ALLOCATED:
            slot.transition(TaskSlotState.ACTIVE)

    def free(self, allocation_id: AllocationID) -> TaskSlot | None:
        """Free the slot, or mark it RELEASING while its tasks still run."""
        slot = self._by_allocation.get(allocation_id)
        if slot is None:
            return None
        if slot.tasks:
            if slot.state is not TaskSlotState.RELEASING:
                slot.transition(TaskSlotState.RELEASING)
            return slot
        del self._by_allocation[allocation_id]
        slot.transition(TaskSlotState.FREE)
        self.version += 1
        return slot

    def add_task(self, allocation_id: AllocationID, job_master_id: JobMasterId,
                 attempt_id: ExecutionAttemptID, task: Any) -> None:
        slot = self._by_allocation.get(allocation_id)
        if slot is None:
            raise SlotStateError(f"no slot is allocated for {allocation_id}")
        if slot.job_master_id != job_master_id:
            raise SlotStateError(f"slot {slot.index} belongs to another JobMaster (fencing)")
        if slot.state is TaskSlotState.ALLOCATED:   # the JobMaster's accept may still be in flight
            slot.transition(TaskSlotState.ACTIVE)
        if slot.state is not TaskSlotState.ACTIVE:
            raise SlotStateError(f"slot {slot.index} is {slot.state.name}, not ACTIVE")
        slot.tasks[attempt_id] = task

    def remove_task(self, allocation_id: AllocationID, attempt_id: ExecutionAttemptID) -> TaskSlot | None:
        """Forget a finished task; returns the slot if that freed a RELEASING slot."""
        slot = self._by_allocation.get(allocation_id)
        if slot is None:
            return None
        slot.tasks.pop(attempt_id, None)
        if not slot.tasks and slot.state is TaskSlotState.RELEASING:
            del self._by_allocation[allocation_id]
            slot.transition(TaskSlotState.FREE)
            self.version += 1
            return slot
        return None

    def tasks(self) -> list[Any]:
        return [task for slot in self.slots for task in slot.tasks.values()]

    def find_task(self, attempt_id: ExecutionAttemptID) -> Any | None:
        for slot in self.slots:
            if attempt_id in slot.tasks:
                return slot.tasks[attempt_id]
        return None

    def job_masters(self) -> dict[JobMasterId, tuple[str, JobID]]:
        """job_master_id -> (address, job_id) for every JobMaster holding a slot here."""
        return {s.job_master_id: (s.job_master_address, s.job_id)
                for s in self.slots if s.state is not TaskSlotState.FREE}

    def is_idle(self) -> bool:
        return all(s.state is TaskSlotState.FREE for s in self.slots)
