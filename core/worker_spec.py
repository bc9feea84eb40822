"""A worker spec: the container size for a slot profile."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from yarnflow.core.resources import ResourceSpec

if TYPE_CHECKING:
    from yarnflow.core.jobgraph import JobGraph


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
        return total.with_memory(total.memory_mb + self.overhead_mb)

    @property
    def vcores(self) -> int:
        """YARN grants whole vcores."""
        return max(1, math.ceil(self.container.cpu - 1e-9))


def plan_worker_specs(graph: "JobGraph", default_slot: ResourceSpec, max_slots: int,
                      overhead_mb: int, largest: ResourceSpec) -> dict[ResourceSpec, WorkerSpec]:
    """One worker spec per slot profile of a job known up front (per-job mode): as many
    slots as the job can use at once of that profile, up to
    ``taskmanager.numberOfTaskSlots`` and what fits the largest container. Packing a
    job's small slots into one TaskExecutor pays its process overhead once."""
    specs = {}
    for profile, count in slots_needed(graph, default_slot).items():
        slots = max(1, min(max_slots, count))
        while slots > 1 and not WorkerSpec(profile, slots, overhead_mb).container.within(largest):
            slots -= 1
        specs[profile] = WorkerSpec(profile, slots, overhead_mb)
    return specs


def executors_needed(graph: "JobGraph", specs: dict[ResourceSpec, WorkerSpec],
                     default_slot: ResourceSpec) -> dict[ResourceSpec, int]:
    """Executors of each profile's spec the job holds when all of it runs at once."""
    return {profile: -(-count // specs[profile].num_slots)
            for profile, count in slots_needed(graph, default_slot).items()}


def slots_needed(graph: "JobGraph", default_slot: ResourceSpec) -> dict[ResourceSpec, int]:
    """Slots of each profile the job holds when all of it runs at once (EAGER)."""
    needed: dict[ResourceSpec, int] = {}
    for group in graph.slot_sharing_groups():
        for profile in graph.shared_slot_profiles(group, default_slot):
            needed[profile] = needed.get(profile, 0) + 1
    return needed
