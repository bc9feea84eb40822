"""Grouping subtasks into shared slots (seed 000).

Every slot sharing group of the job gets as many shared slots as its widest vertex
has subtasks. Subtask i of a vertex goes to the shared slot of its FORWARD producer
when there is one (the data then never leaves the slot), to the slot of its
co-location constraint when it has one, and otherwise to the i-th slot of the
group — so one shared slot never holds two subtasks of the same vertex.
"""
from __future__ import annotations

from concurrent.futures import Future

from yarnflow.appmaster.jobmaster.executiongraph import (ExecutionGraph, ExecutionJobVertex,
                                                         ExecutionVertex)
from yarnflow.appmaster.jobmaster.slotpool import PhysicalSlot
from yarnflow.core.jobgraph import DistributionPattern
from yarnflow.core.resources import ResourceSpec


class ExecutionSlotSharingGroup:
    """The subtasks that share one slot, and (at run time) that slot."""

    __slots__ = ("slot_sharing_group", "index", "members", "profile", "exact", "slot",
                 "slot_future", "assigned", "_vertex_ids")

    def __init__(self, slot_sharing_group: str, index: int, profile: ResourceSpec,
                 exact: bool = False) -> None:
        """``exact``: only a slot of ``profile`` itself serves it (an adaptively sized
        stage's), never a larger one."""
        self.slot_sharing_group = slot_sharing_group
        self.index = index
        self.members: list[ExecutionVertex] = []
        self.profile = profile
        self.exact = exact
        self.slot: PhysicalSlot | None = None                   # the slot it holds
        self.slot_future: Future[PhysicalSlot] | None = None    # while requested
        self.assigned: set[ExecutionVertex] = set()
        self._vertex_ids: set[str] = set()

    def add(self, vertex: ExecutionVertex) -> None:
        job_vertex_id = vertex.job_vertex.id
        if job_vertex_id in self._vertex_ids:
            raise AssertionError(f"shared slot {self} would hold two subtasks of "
                                 f"{vertex.job_vertex.name}")
        self._vertex_ids.add(job_vertex_id)
        self.members.append(vertex)

    def holds_vertex(self, job_vertex_id: str) -> bool:
        return job_vertex_id in self._vertex_ids

    def __repr__(self) -> str:
        return f"{self.slot_sharing_group}#{self.index}"


def build_slot_sharing_groups(graph: ExecutionGraph, profiles: dict[str, list[ResourceSpec]]
                              ) -> dict[ExecutionVertex, ExecutionSlotSharingGroup]:
    """Assign every subtask to a shared slot; ``profiles`` gives the size of each
    group's shared slots by index (``JobGraph.shared_slot_profiles``)."""
    return SlotSharing(graph, profiles).assignment


class SlotSharing:
    """The shared slots of a job's subtasks: all of them at the start, and an adaptive
    vertex's when it gets them (``add``), into the same shared slots by the same rules."""

    def __init__(self, graph: ExecutionGraph, profiles: dict[str, list[ResourceSpec]]) -> None:
        self._profiles = profiles
        self.assignment: dict[ExecutionVertex, ExecutionSlotSharingGroup] = {}
        self._groups: dict[str, list[ExecutionSlotSharingGroup]] = {}
        self._co_located: dict[tuple[str, int], ExecutionSlotSharingGroup] = {}
        for ejv in graph.vertices_topologically():
            self.add(ejv)

    def _profile(self, name: str, index: int) -> ResourceSpec:
        sizes = self._profiles[name]
        return sizes[index] if index < len(sizes) else sizes[0]

    def add(self, ejv: ExecutionJobVertex) -> None:
        """Shared slots for the vertex's subtasks (none yet for an undecided one); a
        vertex whose slots adaptive execution sized gets shared slots of that size."""
        name = ejv.slot_sharing_group
        if ejv.sized_profile is not None:
            self._profiles.setdefault(name, [ejv.sized_profile])
        slots = self._groups.setdefault(name, [])
        forward_producer = next(
            (r.producer for r in ejv.inputs
             if r.distribution is DistributionPattern.POINTWISE
             and r.producer.slot_sharing_group == name), None)
        for vertex in ejv.task_vertices:
            i = vertex.subtask_index
            target: ExecutionSlotSharingGroup | None = None
            key = (ejv.co_location_group, i) if ejv.co_location_group else None
            if key is not None:
                target = self._co_located.get(key)
            if target is None and forward_producer is not None:
                target = self.assignment[forward_producer.task_vertices[i]]
                if target.holds_vertex(ejv.id):
                    target = None
            if target is None:
                while len(slots) <= i:
                    slots.append(ExecutionSlotSharingGroup(name, len(slots),
                                                           self._profile(name, len(slots)),
                                                           ejv.sized_exact))
                target = slots[i]
                if target.holds_vertex(ejv.id):   # pragma: no cover - defensive
                    target = ExecutionSlotSharingGroup(name, len(slots), self._profiles[name][0])
                    slots.append(target)
            target.add(vertex)
            self.assignment[vertex] = target
            if key is not None:
                self._co_located.setdefault(key, target)
