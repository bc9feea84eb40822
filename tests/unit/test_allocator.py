"""Slots for shared slots: a warm pool's slot is handed over at once (no Future per
subtask), a slot still to come through a Future, and either way the shared slot
holds it until its last member ends."""
from __future__ import annotations

from yarnflow.appmaster.jobmaster.executiongraph import ExecutionGraph, ExecutionState
from yarnflow.appmaster.jobmaster.scheduler.allocator import SlotSharingSlotAllocator
from yarnflow.appmaster.jobmaster.scheduler.slot_sharing import build_slot_sharing_groups
from yarnflow.appmaster.jobmaster.slotpool import SlotPool, TaskExecutorLocation
from yarnflow.core.ids import AllocationID, ResourceID
from yarnflow.core.jobgraph import JobGraph, JobVertex, ShipStrategy
from yarnflow.core.messages import SlotOffer
from yarnflow.core.resources import ResourceSpec
from yarnflow.core.user_code import UserCode
from tests.unit.fakes import ManualMainThread

PROFILE = ResourceSpec(1, 1024)
WHERE = TaskExecutorLocation(ResourceID("te-0"), "host-0", "te-0:1", "te-0:2")


def setup(free_slots: int):
    graph = JobGraph("alloc")
    src = graph.add_vertex(JobVertex("source", UserCode.received(b"op"), 2, num_inputs=0))
    sink = graph.add_vertex(JobVertex("sink", UserCode.received(b"op"), 2, num_inputs=1))
    graph.connect(src, sink, ShipStrategy.HASH, ["k"])
    eg = ExecutionGraph(graph.resolve(1))
    pool = SlotPool(ManualMainThread(), eg.job_id, idle_timeout=3600, request_timeout=3600,
                    on_allocated_slot_lost=lambda slot, cause: None)
    pool.offer_slots(WHERE, None, [SlotOffer(AllocationID(f"free-{i}"), i, PROFILE)
                                   for i in range(free_slots)])
    allocator = SlotSharingSlotAllocator(pool, build_slot_sharing_groups(eg, {"default": [PROFILE]}))
    vertices = list(eg.all_execution_vertices())
    for v in vertices:
        v.current.transition(ExecutionState.SCHEDULED)
    return pool, allocator, vertices


def test_a_warm_pool_hands_its_slots_over_at_once_one_per_shared_slot():
    pool, allocator, vertices = setup(free_slots=2)
    allocation = allocator.allocate(vertices)
    assert not allocation.waiting
    assert set(allocation.ready) == set(vertices)
    by_slot = {}
    for vertex, logical in allocation.ready.items():
        by_slot.setdefault(logical.allocation_id, []).append(vertex.job_vertex.name)
    assert sorted(map(sorted, by_slot.values())) == [["sink", "source"]] * 2
    slot_id = allocation.ready[vertices[0]].allocation_id
    assert sorted(v.job_vertex.name for v in allocator.vertices_in_slot(slot_id)) == ["sink", "source"]


def test_a_slot_still_to_come_arrives_through_a_future_and_is_held_like_a_warm_one():
    pool, allocator, vertices = setup(free_slots=1)
    allocation = allocator.allocate(vertices)
    assert len(allocation.ready) == 2 and len(allocation.waiting) == 2
    waiting = next(iter(allocation.waiting.values()))
    assert not waiting.done()
    requested = next(iter(pool._pending))
    pool.offer_slots(WHERE, None, [SlotOffer(requested, 1, PROFILE)])
    assert waiting.result(timeout=0).allocation_id == requested
    assert len(allocator.vertices_in_slot(requested)) == 2, "the shared slot holds it now"
    for vertex in allocation.waiting:
        allocator.release(vertex)
    assert not allocator.vertices_in_slot(requested)
    again = allocator.allocate([v for v in allocation.waiting])
    assert {s.allocation_id for s in again.ready.values()} == {requested}, \
        "the released slot went back to the pool, which serves it again at once"


def test_a_cancelled_wait_for_a_slot_is_withdrawn_and_never_served_a_released_slot():
    """Cancelling a job cancels its subtasks still waiting for slots and then releases the
    slots of running ones, in one main-thread call: a released slot must not go to a
    request whose consumer is gone, and the ResourceManager hears the request is withdrawn."""
    from tests.unit.fakes import FakeResourceManager
    pool, allocator, vertices = setup(free_slots=1)
    rm = FakeResourceManager()
    pool.connect_resource_manager(rm)
    main = pool._main
    allocation = allocator.allocate(vertices)
    requested = next(iter(pool._pending))
    assert rm.requests, "the missing slot was asked of the ResourceManager"

    def cancel_everything():
        for vertex in allocation.waiting:
            allocator.release(vertex)
        for vertex in allocation.ready:
            allocator.release(vertex)
    main.execute(cancel_everything).result(timeout=0)
    assert requested not in pool._pending and requested not in rm.requests
    assert all(f.cancelled() for f in allocation.waiting.values())
    again = allocator.allocate(list(allocation.ready))
    assert len(again.ready) == 2, "the released slot stayed free in the pool"
