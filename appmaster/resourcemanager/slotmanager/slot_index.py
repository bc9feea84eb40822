"""What the slot manager looks slots up by, so a request looks at no more than it must
with a thousand executors registered: a scan of every slot per request (to find a
free one, and to see whether its allocation is known) made the ResourceManager's main
thread quadratic in the executors (FLINK-13184's blocked main thread).

- the slot of each allocation;
- per slot profile, a lazily updated heap of (load, seq, executor) entries, pushed
  whenever an executor with a free slot changes load. An entry whose load is no
  longer its executor's, or whose executor has no free slot or is gone, is stale and
  dropped when it comes to the top.
"""
from __future__ import annotations

import heapq
import itertools

from yarnflow.appmaster.resourcemanager.slotmanager.slots import SlotState, TaskManagerSlot, Worker
from yarnflow.core.ids import AllocationID, ResourceID
from yarnflow.core.resources import ResourceSpec


class SlotIndex:
    def __init__(self, workers: dict[ResourceID, Worker]) -> None:
        self._workers = workers          # the slot manager's registered executors
        self._by_allocation: dict[AllocationID, TaskManagerSlot] = {}
        self._heaps: dict[ResourceSpec, list[tuple[float, int, ResourceID]]] = {}
        self._seq = itertools.count()

    def slot_changed(self, slot: TaskManagerSlot, former: AllocationID) -> None:
        """Every change of a slot comes here: of its allocation (``former`` differs), or
        of its state, which is what its executor's load and free slots depend on."""
        if former == slot.allocation_id:
            self.executor_changed(slot.resource_id)
            return
        if former and self._by_allocation.get(former) is slot:
            del self._by_allocation[former]
        if slot.allocation_id:
            self._by_allocation[slot.allocation_id] = slot

    def executor_changed(self, resource_id: ResourceID) -> None:
        """Re-key the executor in its profile's heap: its load just changed."""
        worker = self._workers.get(resource_id)
        if worker is None or not worker.slots or not worker.has_free_slot():
            return
        profile = worker.slots[0].profile        # an executor's slots share one profile
        heap = self._heaps.setdefault(profile, [])
        heapq.heappush(heap, (worker.load(), next(self._seq), resource_id))
        if len(heap) > 4 * len(self._workers) + 64:       # mostly stale entries: rebuild
            heap[:] = [(w.load(), next(self._seq), rid) for rid, w in self._workers.items()
                       if w.slots and w.slots[0].profile == profile and w.has_free_slot()]
            heapq.heapify(heap)

    def forget(self, worker: Worker) -> None:
        """The executor is gone (its heap entries go stale by themselves)."""
        for slot in worker.slots:
            if self._by_allocation.get(slot.allocation_id) is slot:
                del self._by_allocation[slot.allocation_id]

    def slot_of(self, allocation_id: AllocationID) -> TaskManagerSlot | None:
        slot = self._by_allocation.get(allocation_id)
        if slot is None or slot.allocation_id != allocation_id:
            return None
        worker = self._workers.get(slot.resource_id)
        return slot if worker is not None and worker.slots[slot.index] is slot else None

    def free_slot(self, profile: ResourceSpec, exact: bool = False) -> TaskManagerSlot | None:
        """A free slot that fits ``profile``: of the exact profile before a larger one
        (``exact``: only of that profile), then on the least-loaded executor."""
        best: Worker | None = None
        best_key: tuple[int, float] | None = None
        for slot_profile, heap in self._heaps.items():
            if not profile.fits_in(slot_profile) or (exact and slot_profile != profile):
                continue
            top = self._least_loaded(slot_profile, heap)
            if top is not None:
                key = (0 if slot_profile == profile else 1, top[0])
                if best_key is None or key < best_key:
                    best, best_key = top[1], key
        if best is None:
            return None
        return next(s for s in best.slots if s.state is SlotState.FREE)

    def _least_loaded(self, slot_profile: ResourceSpec,
                      heap: list[tuple[float, int, ResourceID]]) -> tuple[float, Worker] | None:
        while heap:
            load, _, resource_id = heap[0]
            worker = self._workers.get(resource_id)
            if worker is None or not worker.slots or worker.slots[0].profile != slot_profile \
                    or load != worker.load() or not worker.has_free_slot():
                heapq.heappop(heap)
                continue
            return load, worker
        return None
