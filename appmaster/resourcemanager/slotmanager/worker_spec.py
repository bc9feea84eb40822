"""A worker spec: the container size for a slot profile."""
from __future__ import annotations

from dataclasses import dataclass

from yarnflow.resources import ResourceSpec


@dataclass(frozen=True)
class WorkerSpec:
    """``num_slots`` slots of ``slot_profile``; the container also holds the
    TaskExecutor's own process (``overhead_mb``)."""
    slot_profile: ResourceSpec
    num_slots: int
    overhead_mb: int

    @property
    def name(self) -> str:
        return f"{self.num_slots}x{self.slot_profile.label()}"

    @property
    def container(self) -> ResourceSpec:
        total = self.slot_profile * self.num_slots
        return ResourceSpec(total.cpu, total.memory_mb + self.overhead_mb, total.gpus)
