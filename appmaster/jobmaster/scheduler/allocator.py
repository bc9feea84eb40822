"""Slots for subtasks through their shared slots (Flink's SlotSharingExecutionSlotAllocator).

The first subtask of a shared slot to be scheduled requests the physical slot from
the SlotPool (with the merged location preferences of the subtasks scheduled with
it), sized for the members that may run from then on (``profile_now``: not those of
an earlier stage, which have ended); later members ride along. When every member that was assigned has ended, the
physical slot goes back to the pool. A source subtask also prefers the host its
input's splits are stored on (``input_hosts``), so a container started for it is asked
there.
"""
from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass
from typing import Callable, Iterable

from yarnflow.core.resources import ResourceSpec

from yarnflow.core.ids import AllocationID
from yarnflow.appmaster.jobmaster.executiongraph import ExecutionJobVertex, ExecutionVertex
from yarnflow.appmaster.jobmaster.scheduler.preferred_locations import merge, preferred_locations
from yarnflow.appmaster.jobmaster.scheduler.slot_sharing import (ExecutionSlotSharingGroup,
                                                                 SlotSharing)
from yarnflow.appmaster.jobmaster.slotpool import (PhysicalSlot, SlotPool, SlotPreferences,
                                                   TaskExecutorLocation)
from yarnflow.taskexecutor.gateway import TaskExecutorGateway


# (shared slot, its members starting now) -> the profile to ask for
ProfileNow = Callable[[ExecutionSlotSharingGroup, list[ExecutionVertex]], ResourceSpec]


@dataclass(eq=False)
class LogicalSlot:
    """A subtask's share of a physical slot."""
    physical: PhysicalSlot
    group: ExecutionSlotSharingGroup

    @property
    def location(self) -> TaskExecutorLocation:
        return self.physical.location

    @property
    def allocation_id(self) -> AllocationID:
        return self.physical.allocation_id

    @property
    def gateway(self) -> TaskExecutorGateway | None:
        return self.physical.gateway


@dataclass
class Allocation:
    """Slots for the subtasks scheduled together: ``ready`` now (a warm pool held a slot
    for their shared slot), the rest ``waiting`` for one the ResourceManager starts."""
    ready: dict[ExecutionVertex, LogicalSlot]
    waiting: dict[ExecutionVertex, "Future[LogicalSlot]"]


class SlotSharingSlotAllocator:
    def __init__(self, pool: SlotPool,
                 groups: dict[ExecutionVertex, ExecutionSlotSharingGroup],
                 input_hosts: Callable[[ExecutionVertex], str] = lambda _: "",
                 sharing: SlotSharing | None = None,
                 profile_now: ProfileNow | None = None) -> None:
        """``sharing``: what assigned ``groups``, to assign the subtasks an adaptive
        vertex gets later; ``profile_now(group, scheduled)``: the profile a shared slot
        is asked for when ``scheduled`` of its members start (default: its own)."""
        self._profile_now = profile_now
        self._pool = pool
        self._groups = groups
        self._input_hosts = input_hosts
        self._sharing = sharing

    def add_subtasks(self, ejv: ExecutionJobVertex) -> None:
        """Shared slots for the subtasks an adaptive vertex just got."""
        if self._sharing is None:
            raise RuntimeError("this allocator cannot take subtasks added later")
        self._sharing.add(ejv)

    def allocate(self, vertices: Iterable[ExecutionVertex]) -> Allocation:
        by_group: dict[ExecutionSlotSharingGroup, list[ExecutionVertex]] = {}
        for vertex in vertices:
            by_group.setdefault(self._groups[vertex], []).append(vertex)
        allocation = Allocation({}, {})
        ready = allocation.ready
        for group, members in by_group.items():
            if group.slot is None and group.slot_future is None:
                prefs = merge([preferred_locations(v) for v in members]
                              + [SlotPreferences(hosts=(h,), input_hosts=(h,)) for v in members
                                 if (h := self._input_hosts(v))])
                profile = group.profile if group.exact or self._profile_now is None \
                    else self._profile_now(group, members)
                group.slot = self._pool.allocate_available(profile, prefs, group.exact)
                if group.slot is None:
                    group.slot_future = self._pool.request_new_slot(profile, prefs, group.exact)
            group.assigned.update(members)
            # one logical slot per shared slot: its members scheduled together share it
            if group.slot is not None:
                logical = LogicalSlot(group.slot, group)
                for vertex in members:
                    ready[vertex] = logical
            else:
                waiting = _logical(group)
                for vertex in members:
                    allocation.waiting[vertex] = waiting
        return allocation

    def group_of(self, vertex: ExecutionVertex) -> ExecutionSlotSharingGroup:
        return self._groups[vertex]

    def release(self, vertex: ExecutionVertex) -> None:
        """``vertex`` ended; give the physical slot back once no member needs it."""
        group = self._groups[vertex]
        group.assigned.discard(vertex)
        if group.assigned:
            return
        if group.slot is not None:
            self._pool.release_slot(group.slot.allocation_id)
        elif group.slot_future is not None:
            group.slot_future.cancel()
        group.slot, group.slot_future = None, None

    def vertices_in_slot(self, allocation_id: AllocationID) -> list[ExecutionVertex]:
        return [v for v, g in self._groups.items()
                if v in g.assigned and g.slot is not None and g.slot.allocation_id == allocation_id]


def _logical(group: ExecutionSlotSharingGroup) -> "Future[LogicalSlot]":
    """The shared slot's LogicalSlot once its requested slot arrives; the group holds
    that slot from then on."""
    out: Future[LogicalSlot] = Future()
    requested = group.slot_future
    assert requested is not None

    def done(fut: "Future[PhysicalSlot]") -> None:
        if fut.cancelled():
            out.cancel()
        elif (err := fut.exception()) is not None:
            out.set_exception(err)
        else:
            if group.slot_future is fut:
                group.slot, group.slot_future = fut.result(), None
            out.set_result(LogicalSlot(fut.result(), group))
    requested.add_done_callback(done)
    return out
