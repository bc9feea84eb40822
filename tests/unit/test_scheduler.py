"""Scheduler semantics (seed 000/001/002), each its own test, on a real JobMaster with
in-memory executors."""
from __future__ import annotations

import collections

import pyarrow as pa
import pytest

from tests.conftest import wait_until
from tests.unit.fakes import FINISHED, RUNNING, Harness, ManualMainThread
from yarnflow.appmaster.jobmaster.executiongraph import ExecutionState, JobStatus
from yarnflow.appmaster.jobmaster.scheduler.preferred_locations import preferred_locations
from yarnflow.appmaster.jobmaster.failover.regions import vertex_regions
from yarnflow.appmaster.jobmaster.slotpool import (PhysicalSlot, SlotPreferences,
                                                   TaskExecutorLocation, select_slot)
from yarnflow.conf import Configuration
from yarnflow.core.jobgraph import JobGraph, JobVertex, PartitionType, ScheduleMode, ShipStrategy
from yarnflow.core.messages import SlotOffer
from yarnflow.core.resources import ResourceSpec
from yarnflow.core.operators import MapOperator, TableSource
from yarnflow.core.user_code import UserCode

PROFILE = ResourceSpec(1, 1024)


def source(name: str, p: int, **kw: object) -> JobVertex:
    return JobVertex(name, UserCode.of(TableSource(pa.table({"x": [1, 2, 3]}))), p, num_inputs=0, **kw)


def op(name: str, p: int, **kw: object) -> JobVertex:
    return JobVertex(name, UserCode.of(MapOperator(lambda b: b, name)), p, num_inputs=1, **kw)


def chain(p: int = 4, mode: ScheduleMode = ScheduleMode.EAGER,
          ship: ShipStrategy = ShipStrategy.FORWARD,
          partition_type: PartitionType = PartitionType.PIPELINED) -> JobGraph:
    graph = JobGraph("chain", mode)
    src, mid, sink = (graph.add_vertex(source("source", p)), graph.add_vertex(op("map", p)),
                      graph.add_vertex(op("sink", p)))
    graph.connect(src, mid, ship, ["x"] if ship is ShipStrategy.HASH else (), partition_type)
    graph.connect(mid, sink, ShipStrategy.FORWARD)
    return graph.resolve(1)


@pytest.fixture
def harness_factory():
    made: list[Harness] = []

    def make(graph: JobGraph) -> Harness:
        h = Harness(graph)
        made.append(h)
        return h
    yield make
    for h in made:
        h.close()


def test_slot_sharing_uses_one_slot_per_pipeline_and_never_two_subtasks_of_a_vertex(harness_factory):
    h = harness_factory(chain(4, ship=ShipStrategy.HASH))
    h.start()
    assert len(h.rm.requests) == 4, "source->map->sink at parallelism 4 needs exactly 4 slots"
    h.offer_pending(["te-1", "te-2"])
    wait_until(lambda: len(h.deployed()) == 12, 5, "all 12 subtasks deployed")
    placement = h.placement()
    assert len(placement) == 4
    for allocation, tasks in placement.items():
        vertices = [name for name, _ in tasks]
        assert len(vertices) == len(set(vertices)), f"slot {allocation} holds {tasks}"


def test_co_location_puts_subtask_i_of_each_vertex_in_the_same_slot(harness_factory):
    graph = JobGraph("coloc")
    src = graph.add_vertex(source("source", 3))
    head = graph.add_vertex(op("head", 3, co_location_group="loop"))
    tail = graph.add_vertex(op("tail", 3, co_location_group="loop"))
    graph.connect(src, head, ShipStrategy.REBALANCE)   # ALL_TO_ALL: no forward hint
    graph.connect(head, tail, ShipStrategy.REBALANCE)
    graph.resolve(1)
    h = harness_factory(graph)
    h.start()
    h.offer_pending(["te-1", "te-2", "te-3"])
    wait_until(lambda: len(h.deployed()) == 9, 5, "all subtasks deployed")
    slot_of = {(t.info.vertex_name, t.subtask_index): t.allocation_id for t in h.deployed()}
    for i in range(3):
        assert slot_of[("head", i)] == slot_of[("tail", i)]


def _lazy_two_stage(producers: int) -> JobGraph:
    graph = JobGraph("lazy", ScheduleMode.LAZY_FROM_SOURCES)
    src = graph.add_vertex(source("source", producers, slot_sharing_group="a"))
    sink = graph.add_vertex(op("sink", 2, slot_sharing_group="b"))
    graph.connect(src, sink, ShipStrategy.REBALANCE, partition_type=PartitionType.BLOCKING)
    return graph.resolve(1)


def test_lazy_from_sources_deploys_consumers_only_after_partitions_are_consumable(harness_factory):
    h = harness_factory(_lazy_two_stage(2))
    h.start()
    assert len(h.rm.requests) == 2, "only the sources ask for slots at first"
    h.offer_pending(["te-1", "te-2"])
    wait_until(lambda: len(h.deployed()) == 2, 5, "sources deployed")
    sources = h.deployed()
    for tdd in sources:
        h.report(tdd.attempt_id, RUNNING)
    h.report(sources[0].attempt_id, FINISHED)
    assert h.rm.requests == {} and len(h.deployed()) == 2, \
        "a BLOCKING result is not consumable until every producer finished"
    h.report(sources[1].attempt_id, FINISHED)
    wait_until(lambda: len(h.rm.requests) + len(h.deployed()) > 2, 5, "consumer scheduled")
    h.offer_pending(["te-1", "te-2"])
    wait_until(lambda: len(h.deployed()) == 4, 5, "consumers deployed")
    assert collections.Counter(t.info.vertex_name for t in h.deployed()) == {"source": 2, "sink": 2}


def diamond() -> JobGraph:
    """The source feeds the union twice: at once, and through a filter."""
    graph = JobGraph("diamond", ScheduleMode.LAZY_FROM_SOURCES)
    src, kept = graph.add_vertex(source("source", 2)), graph.add_vertex(op("filter", 2))
    union = graph.add_vertex(JobVertex("union", UserCode.of(MapOperator(lambda b: b, "union")),
                                       2, num_inputs=2))
    graph.connect(src, kept, ShipStrategy.FORWARD)
    graph.connect(src, union, ShipStrategy.FORWARD, target_input=0)
    graph.connect(kept, union, ShipStrategy.FORWARD, target_input=1)
    return graph.resolve(1)


def test_lazy_from_sources_deploys_a_consumer_whose_other_pipelined_input_has_no_data_yet(
        harness_factory):
    """The source stops at its full output to the union until the union reads it, so the
    filter (which keeps no row here) can neither send a batch nor end: once the union's
    first input has data, the union goes with the filter, whose own input comes from a
    producer that runs; both deployed once both have slots."""
    h = harness_factory(diamond())
    h.start()
    h.offer_pending(["te-1", "te-2"])
    wait_until(lambda: len(h.deployed()) == 2, 5, "sources deployed")
    sources = h.deployed()
    for tdd in sources:
        h.report(tdd.attempt_id, RUNNING)
    h.call(lambda: None)                  # the reports handled
    assert len(h.deployed()) == 2, "no input of the union has data yet"
    results = {(r.producer.name, r.consumer.name): r.id for r in h.jm.graph.results.values()}
    h.jm.notify_partition_data_available(sources[0].attempt_id, results[("source", "union")])
    h.offer_pending(["te-1", "te-2"])
    wait_until(lambda: len(h.deployed()) == 6, 5, "the filter and the union deployed")
    assert collections.Counter(t.info.vertex_name for t in h.deployed()) == {
        "source": 2, "filter": 2, "union": 2}


def test_pipelined_regions_of_job_vertices_follow_pipelined_results_only(harness_factory):
    graph = JobGraph("regions", ScheduleMode.LAZY_FROM_SOURCES)
    s1, s2 = graph.add_vertex(source("s1", 1)), graph.add_vertex(source("s2", 1))
    a, b, c, d, e, f = (graph.add_vertex(op(name, 1)) for name in "abcdef")
    d.num_inputs = e.num_inputs = 2
    for producer, consumer in ((s1, a), (a, b), (b, f), (c, d), (d, e), (s2, e)):
        graph.connect(producer, consumer, ShipStrategy.FORWARD,
                      target_input=1 if producer is s2 else 0)
    graph.connect(f, c, ShipStrategy.FORWARD, partition_type=PartitionType.BLOCKING)
    graph.connect(s1, d, ShipStrategy.FORWARD, partition_type=PartitionType.BLOCKING,
                  target_input=1)
    h = harness_factory(graph.resolve(1))
    regions = vertex_regions(h.jm.graph)
    of = {v.name: regions[v.id] for v in h.jm.graph.job_vertices.values()}
    assert of["s1"] == of["a"] == of["b"] == of["f"] != of["c"]
    assert of["c"] == of["d"] == of["e"] == of["s2"]


def test_preferred_locations_follow_producers(harness_factory):
    h = harness_factory(_lazy_two_stage(2))
    h.start()
    h.offer_pending(["te-1", "te-2"], {"te-1": "host-1", "te-2": "host-2"})
    wait_until(lambda: len(h.deployed()) == 2, 5, "sources deployed")
    consumer = h.jm.graph.job_vertices[[v for v in h.jm.graph.job_vertices.values()
                                        if v.name == "sink"][0].id].task_vertices[0]
    prefs = h.call(preferred_locations, consumer)
    assert sorted(prefs.resource_ids) == ["te-1", "te-2"]
    assert sorted(prefs.hosts) == ["host-1", "host-2"]


def test_preferred_locations_are_dropped_past_eight_producers(harness_factory):
    h = harness_factory(_lazy_two_stage(9))
    h.start()
    h.offer_pending([f"te-{i}" for i in range(9)])
    wait_until(lambda: len(h.deployed()) == 9, 5, "sources deployed")
    consumer = [v for v in h.jm.graph.job_vertices.values() if v.name == "sink"][0].task_vertices[0]
    assert h.call(preferred_locations, consumer).empty


def test_restarted_execution_prefers_its_previous_allocation():
    location = TaskExecutorLocation("te-1", "host-a")
    slots = [PhysicalSlot(f"alloc-{i}", location, i, PROFILE) for i in range(4)]
    previous = SlotPreferences(resource_ids=("te-1",), prior_allocations=frozenset({"alloc-2"}))
    assert select_slot(slots, PROFILE, previous, {}).allocation_id == "alloc-2"


def test_restart_preferences_come_from_the_prior_attempt(harness_factory):
    h = harness_factory(chain(1))
    h.start()
    h.offer_pending(["te-1"])
    wait_until(lambda: len(h.deployed()) == 3, 5, "deployed")
    vertex = next(h.jm.graph.all_execution_vertices())
    allocation = vertex.current.allocation_id

    def fail_and_reset() -> SlotPreferences:
        vertex.current.transition(ExecutionState.FAILED)
        vertex.reset_for_new_execution()
        return preferred_locations(vertex)
    prefs = h.call(fail_and_reset)
    assert prefs.prior_allocations == frozenset({allocation})
    assert prefs.resource_ids == ("te-1",)


def test_subtasks_spread_round_robin_across_executors_without_preferences(harness_factory):
    graph = JobGraph("spread")
    graph.add_vertex(source("source", 7))
    graph.resolve(1)
    h = harness_factory(graph)
    h.offer_free_slots({"te-1": 4, "te-2": 4, "te-3": 4}, PROFILE)   # warm slots, before start
    h.start()
    wait_until(lambda: len(h.deployed()) == 7, 5, "all subtasks deployed")
    per_executor = collections.Counter(t.allocation_id.split("-slot")[0] for t in h.deployed())
    assert len(per_executor) == 3
    assert max(per_executor.values()) - min(per_executor.values()) <= 1, per_executor


# --- EAGER: region by region -------------------------------------------------------------
def _stage_of_regions(p: int = 3) -> JobGraph:
    """Each source subtask's chain ends at a BLOCKING exchange: ``p`` independent
    regions, then ``p`` regions of aggregate -> sink, sharing the sources' slots."""
    graph = JobGraph("regions", ScheduleMode.EAGER)
    src, agg, sink = (graph.add_vertex(source("source", p)), graph.add_vertex(op("aggregate", p)),
                      graph.add_vertex(op("sink", p)))
    graph.connect(src, agg, ShipStrategy.HASH, ["x"], PartitionType.BLOCKING)
    graph.connect(agg, sink, ShipStrategy.FORWARD)
    return graph.resolve(1)


def _manual(graph: JobGraph) -> Harness:
    return Harness(graph, Configuration.load(), main=ManualMainThread())


def _offer(h: Harness, count: int, executor: str) -> None:
    """Answer the first ``count`` pending slot requests, each with a slot on an executor
    of its own (a cluster with room for ``count`` more containers)."""
    def offer() -> None:
        for i, (allocation_id, profile) in enumerate(list(h.rm.requests.items())[:count]):
            del h.rm.requests[allocation_id]
            te = h.executor(f"{executor}-{i}")
            h.jm.offer_slots(te.location, [SlotOffer(allocation_id, 0, profile)])
    h.call(offer)


def _current(h: Harness, name: str) -> dict[int, object]:
    """The deployments of ``name``'s current attempts, by subtask."""
    current = {v.current.attempt_id for v in h.jm.graph.all_execution_vertices()}
    return {t.subtask_index: t for t in h.deployed()
            if t.info.vertex_name == name and t.attempt_id in current}


def test_eager_regions_run_one_by_one_on_a_cluster_short_of_a_whole_stage():
    """Room for two of the stage's three regions: two run at once, and the third takes
    the slot the first to finish gives back (issue 81: the whole stage waited for three
    slots together until slot.request.timeout, while two executors sat idle)."""
    h = _manual(_stage_of_regions(3))
    try:
        h.start()
        assert len(h.rm.requests) == 3, "the sources' regions ask; their consumers wait"
        _offer(h, 2, "te")
        assert sorted(_current(h, "source")) == [0, 1], "each region goes on its own slots"
        assert len(h.rm.requests) == 1
        for tdd in _current(h, "source").values():
            h.report(tdd.attempt_id, RUNNING)
        h.report(_current(h, "source")[0].attempt_id, FINISHED)
        assert sorted(_current(h, "source")) == [0, 1, 2], "the freed slot went to region 3"
        assert h.rm.requests == {}, "its request to the ResourceManager was withdrawn"
        assert _current(h, "aggregate") == {}, "the BLOCKING input is not written yet"
        for index in (1, 2):
            h.report(_current(h, "source")[index].attempt_id, RUNNING)
            h.report(_current(h, "source")[index].attempt_id, FINISHED)
        # the consumers' three regions, on the two slots the sources gave back
        assert len(_current(h, "aggregate")) == 2 and len(h.rm.requests) == 1
        while len(_current(h, "sink")) < 3 or any(
                h.jm.graph.attempts[t.attempt_id].state is not FINISHED
                for name in ("aggregate", "sink") for t in _current(h, name).values()):
            for name in ("aggregate", "sink"):
                for tdd in _current(h, name).values():
                    if h.jm.graph.attempts[tdd.attempt_id].state is not FINISHED:
                        h.report(tdd.attempt_id, RUNNING)
                        h.report(tdd.attempt_id, FINISHED)
        assert len(h.executors) == 2, "two executors served all nine subtasks"
        assert h.jm.result.result(timeout=0).status is JobStatus.FINISHED
        assert not h.jm.scheduler.exceptions, "nothing failed"
    finally:
        h.close()


def _finish(h: Harness, *names: str) -> None:
    for name in names:
        for tdd in _current(h, name).values():
            if h.jm.graph.attempts[tdd.attempt_id].state is not FINISHED:
                h.report(tdd.attempt_id, RUNNING)
                h.report(tdd.attempt_id, FINISHED)


def test_a_later_stage_asks_for_the_slots_it_needs_not_its_shared_slots_largest():
    """The issue's job: 3-core source regions, a BLOCKING exchange, then a 1-core stage
    whose regions are joined by a broadcast into one (it needs its three slots at
    once). The cluster has room for two 3-core containers. Asked for at the shared
    slots' size (3 cores, the largest of their members), the third slot of the second
    stage could never come; asked for what the second stage needs, it is a 1-core slot."""
    from yarnflow.core.resources import ResourceSpec as R
    graph = JobGraph("stages", ScheduleMode.EAGER)
    src = graph.add_vertex(source("source", 3, resources=R(3, "1g")))
    agg = graph.add_vertex(op("aggregate", 3, resources=R(1, "512m")))
    names = graph.add_vertex(source("names", 1))
    sink = graph.add_vertex(JobVertex("sink", UserCode.of(MapOperator(lambda b: b, "sink")), 3,
                                      num_inputs=2))
    graph.connect(src, agg, ShipStrategy.HASH, ["x"], PartitionType.BLOCKING)
    graph.connect(agg, sink, ShipStrategy.FORWARD)
    graph.connect(names, sink, ShipStrategy.BROADCAST, target_input=1)
    h = _manual(graph.resolve(1))
    try:
        h.start()
        assert sorted(h.rm.requests.values(), key=str) == [R(3, "1g")] * 3
        _offer(h, 2, "te")
        _finish(h, "source")
        _finish(h, "source")
        assert len(_current(h, "source")) == 3 and _current(h, "aggregate") == {}
        # the second stage: two slots from the pool (the 3-core ones stage 1 gave
        # back), and the third asked for at the second stage's own size
        assert list(h.rm.requests.values()) == [R(1, "512m")]
        _offer(h, 1, "small")
        _finish(h, "aggregate", "names", "sink")
        assert h.jm.result.result(timeout=0).status is JobStatus.FINISHED
    finally:
        h.close()


def test_eager_one_pipelined_region_waits_for_all_its_slots():
    """A region joined by PIPELINED exchanges goes whole: with two of its three slots
    nothing is deployed (its tasks exchange data while they run)."""
    h = _manual(chain(3, ship=ShipStrategy.HASH))
    try:
        h.start()
        assert len(h.rm.requests) == 3
        _offer(h, 2, "te")
        assert h.deployed() == []
        _offer(h, 1, "te-late")
        assert len(h.deployed()) == 9
    finally:
        h.close()


def test_stage_by_stage_a_consumer_group_goes_region_by_region():
    """Stage by stage, the union goes with the filter (its input with no data yet): each
    subtask's pair is a region of its own (FORWARD edges), deployed once its own slot is
    there, not once both regions' are."""
    graph = JobGraph("diamond", ScheduleMode.LAZY_FROM_SOURCES)
    src = graph.add_vertex(source("source", 2, slot_sharing_group="a"))
    kept = graph.add_vertex(op("filter", 2, slot_sharing_group="b"))
    union = graph.add_vertex(JobVertex("union", UserCode.of(MapOperator(lambda b: b, "union")),
                                       2, num_inputs=2, slot_sharing_group="b"))
    graph.connect(src, kept, ShipStrategy.FORWARD)
    graph.connect(src, union, ShipStrategy.FORWARD, target_input=0)
    graph.connect(kept, union, ShipStrategy.FORWARD, target_input=1)
    h = _manual(graph.resolve(1))
    try:
        h.start()
        _offer(h, 2, "te")
        sources = _current(h, "source")
        results = {(r.producer.name, r.consumer.name): r.id for r in h.jm.graph.results.values()}
        for tdd in sources.values():
            h.report(tdd.attempt_id, RUNNING)
            h.jm.notify_partition_data_available(tdd.attempt_id, results[("source", "union")])
        assert len(h.rm.requests) == 2, "the filter and union of each region share a slot"
        _offer(h, 1, "te-late")
        assert len(_current(h, "filter")) == 1 and len(_current(h, "union")) == 1, \
            "the region whose slot came is deployed; the other waits for its own"
        _offer(h, 1, "te-later")
        assert len(_current(h, "filter")) == 2 and len(_current(h, "union")) == 2
    finally:
        h.close()


def test_stage_by_stage_a_consumer_goes_once_one_producer_subtask_has_data():
    """Two of the three producers of a broadcast have sent a batch and stopped at their
    full outputs; the third waits for its own input, which the first two hold back (a
    join whose chained filter feeds a broadcast, restarted after a lost executor: the
    differential run's hang). The consumer goes on the first data, as Flink's legacy
    scheduler deployed it, not once every producer has some."""
    graph = JobGraph("broadcast", ScheduleMode.LAZY_FROM_SOURCES)
    src = graph.add_vertex(source("source", 3, slot_sharing_group="a"))
    sink = graph.add_vertex(op("sink", 2, slot_sharing_group="b"))
    graph.connect(src, sink, ShipStrategy.BROADCAST)
    h = _manual(graph.resolve(1))
    try:
        h.start()
        _offer(h, 3, "te")
        result = next(iter(h.jm.graph.results.values())).id
        for index, tdd in sorted(_current(h, "source").items()):
            h.report(tdd.attempt_id, RUNNING)
            if index:
                h.jm.notify_partition_data_available(tdd.attempt_id, result)
        _offer(h, 2, "te-sink")
        assert len(_current(h, "sink")) == 2, "the consumer waited for the third producer's data"
    finally:
        h.close()


def test_eager_regions_that_read_each_others_blocking_results_go_as_one():
    """Region one (s1 -> x) reads y's BLOCKING result, region two (s2 -> y) reads s1's:
    each would wait for the other (TPC-H Q21's shape hung so), so they are one region,
    deployed whole as Flink merges regions on a cycle."""
    graph = JobGraph("cycle", ScheduleMode.EAGER)
    s1, s2 = graph.add_vertex(source("s1", 2)), graph.add_vertex(source("s2", 2))
    x = graph.add_vertex(JobVertex("x", UserCode.of(MapOperator(lambda b: b, "x")), 2, num_inputs=2))
    y = graph.add_vertex(JobVertex("y", UserCode.of(MapOperator(lambda b: b, "y")), 2, num_inputs=2))
    graph.connect(s1, x, ShipStrategy.HASH, ["x"], target_input=0)
    graph.connect(s2, y, ShipStrategy.HASH, ["x"], target_input=0)
    graph.connect(s1, y, ShipStrategy.HASH, ["x"], PartitionType.BLOCKING, target_input=1)
    graph.connect(y, x, ShipStrategy.HASH, ["x"], PartitionType.BLOCKING, target_input=1)
    h = _manual(graph.resolve(1))
    try:
        h.start()
        _offer(h, len(h.rm.requests), "te")
        assert sorted((t.info.vertex_name, t.subtask_index) for t in h.deployed()) == [
            (name, i) for name in ("s1", "s2", "x", "y") for i in (0, 1)]
    finally:
        h.close()
