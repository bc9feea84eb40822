"""The slots the ResourceManager's slot manager tracks: each registered executor's
slots, as the slot manager believes them to be until the executor's report says
otherwise."""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Callable

from yarnflow.core.ids import AllocationID, JobID, ResourceID
from yarnflow.core.resources import ResourceSpec
from yarnflow.core.status import check_transition
from yarnflow.core.worker_spec import WorkerSpec


class SlotState(enum.Enum):
    FREE = "FREE"
    PENDING = "PENDING"        # asked the executor to allocate it, no answer yet
    ALLOCATED = "ALLOCATED"


_SLOT_TRANSITIONS = {
    SlotState.FREE: frozenset({SlotState.PENDING, SlotState.ALLOCATED}),
    SlotState.PENDING: frozenset({SlotState.FREE, SlotState.ALLOCATED}),
    SlotState.ALLOCATED: frozenset({SlotState.FREE, SlotState.ALLOCATED}),
}


@dataclass
class TaskManagerSlot:
    resource_id: ResourceID
    index: int
    profile: ResourceSpec
    state: SlotState = SlotState.FREE
    allocation_id: AllocationID = AllocationID("")
    job_id: JobID = JobID("")

    # the slot manager's indexes hear of every change: (this slot, its former allocation id)
    on_change: Callable[["TaskManagerSlot", AllocationID], None] | None = \
        field(default=None, repr=False, compare=False)

    def transition(self, target: SlotState) -> None:
        check_transition(_SLOT_TRANSITIONS, self.state, target,
                         lambda: f"slot {self.resource_id}/{self.index}")
        self.state = target
        if self.on_change is not None:
            self.on_change(self, self.allocation_id)

    def assign(self, allocation_id: AllocationID, job_id: JobID) -> None:
        """Give the slot to an allocation, or (empty ids) to none."""
        former, self.allocation_id, self.job_id = self.allocation_id, allocation_id, job_id
        if self.on_change is not None:
            self.on_change(self, former)


@dataclass
class Worker:
    resource_id: ResourceID
    spec: WorkerSpec | None
    slots: list[TaskManagerSlot]
    idle_since: float | None       # None while it has busy slots or holds partitions
    holds_partitions: bool = False
    min_report_version: int = 0     # reports older than this predate an allocation we know of
    host: str = ""                   # where it runs: a blocked host's slots are not given out

    def busy_slots(self) -> int:
        return sum(1 for s in self.slots if s.state is not SlotState.FREE)

    def load(self) -> float:
        return self.busy_slots() / max(1, len(self.slots))

    def has_free_slot(self) -> bool:
        return any(s.state is SlotState.FREE for s in self.slots)
