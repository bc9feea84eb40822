"""When subtasks get slots and are deployed (Flink's SchedulingStrategy): EAGER or
LAZY_FROM_SOURCES.

EAGER schedules pipelined regions (Flink's PipelinedRegionSchedulingStrategy): each
region asks for its slots and is deployed whole once *its own* slots are there, so a
stage of independent regions (each source subtask's chain ending at a BLOCKING
exchange) runs on what the cluster has, region by region, and the rest take the slots
the first ones free; a streaming job, one region, still starts all at once. A region
that reads BLOCKING results of other regions is scheduled once they are written
(``scheduling_regions``: a BLOCKING exchange within one region of job vertices, or
between regions that read each other's BLOCKING results around a cycle, does not hold
it back). LAZY_FROM_SOURCES deploys the sources, and each consumer vertex
once all of its inputs are consumable: a PIPELINED result when each producer has
produced data (or finished), a BLOCKING one when each producer has finished. Runs on
the JobMaster's main thread.

A consumer need not wait for every PIPELINED input's first batch, and must not: one
producer may feed it through two PIPELINED results (a source and a filter after it, in
one chain or not, both into a union or a join), and it stops at the one with data
until the consumer reads it, so the other's first batch (or end, when the filter keeps
nothing) would never come. Nor for every producer subtask of one input: a producer
subtask stops at its full output to a consumer not yet deployed, and another one that
has not sent a batch yet may be the one waiting for its input from the first (a join
whose chained filter feeds a broadcast, found by the differential run). So once one
partition of one of its inputs has data (Flink's legacy scheduler deployed a consumer
on its producers' first data too), a consumer goes with the vertices it reads through
PIPELINED results that have no data yet, back to producers that have their slots (part
of its pipelined region, as Flink's region scheduling deploys a region whole): each
pipelined region of them asks for its slots together and is deployed once all of its
own are there, producers first. "Have their slots" is asked per partition (consumable
already, or its producer subtask holds a slot): after a region's restart the
producer's other subtasks have long finished. A BLOCKING input from a producer in the
consumer's own pipelined region (a self-join: the source feeds the join's build side
PIPELINED and its probe side BLOCKING) counts once that producer has its slots, as in
Flink, where only a region's inputs from other regions hold it back: its producer
reports FINISHED only after the consumer has read the PIPELINED side, and the
consumer's read of the BLOCKING side waits until the producer has written it whole.

A restart hands the scheduler the subtasks it reset: under EAGER their regions are
scheduled again, each once its BLOCKING inputs are there; under LAZY_FROM_SOURCES each
of their vertices goes again when its inputs are consumable (at once when they come
from results that survived). A slot that arrives for an attempt that was meanwhile
replaced is not used for its successor, which asked for its own.
"""
from __future__ import annotations

import functools
import logging
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Callable

from yarnflow.appmaster.jobmaster.executiongraph import (ConsumedPartitionGroup, ExecutionGraph,
                                                         ExecutionJobVertex, ExecutionState,
                                                         ExecutionVertex, IntermediateResult)
from yarnflow.appmaster.jobmaster.scheduler.allocator import (Allocation, LogicalSlot,
                                                              SlotSharingSlotAllocator)
from yarnflow.appmaster.jobmaster.failover.regions import (PipelinedRegion,
                                                           acyclic_vertex_regions,
                                                           scheduling_regions, vertex_regions)
from yarnflow.core.jobgraph import PartitionType, ScheduleMode
from yarnflow.rpc.endpoint import MainThreadExecutor

log = logging.getLogger(__name__)

Deployer = Callable[[ExecutionVertex], None]
Failer = Callable[[ExecutionVertex, str], None]


class SchedulingStrategy:
    def __init__(self, main: MainThreadExecutor, graph: ExecutionGraph,
                 allocator: SlotSharingSlotAllocator, deploy: Deployer,
                 fail_vertex: Failer,
                 initialize: Callable[[ExecutionJobVertex], None] = lambda ejv: None) -> None:
        """``initialize(ejv)`` gives an adaptive vertex its subtasks, once its inputs are
        written and before it is scheduled."""
        self._main = main
        self._graph = graph
        self._allocator = allocator
        self._deploy = deploy
        self._fail_vertex = fail_vertex
        self._initialize = initialize
        self._scheduled_vertices: set[str] = set()
        self._stopped = False
        self._region = vertex_regions(graph)
        # each subtask's scheduling region (``_regions_now``); under EAGER, the regions
        # waiting for BLOCKING results by result id, and the subtasks in them (a restart
        # does not queue them twice)
        self._regions: dict[ExecutionVertex, PipelinedRegion] | None = None
        self._regions_version = -1
        self._acyclic: dict[str, str] | None = None     # EAGER's regions of job vertices
        self._waiting_for: dict[str, list[_QueuedRegion]] = {}
        self._queued: set[ExecutionVertex] = set()

    def start(self) -> None:
        """Subtasks restored as finished from an earlier ApplicationMaster's job event
        log are not scheduled; a vertex whose inputs they make consumable goes at once."""
        if self._graph.schedule_mode is ScheduleMode.EAGER:
            self._schedule_eager([v for v in self._graph.all_execution_vertices()
                                  if v.current.state is ExecutionState.CREATED])
        else:
            for ejv in self._graph.vertices_topologically():
                self._try_schedule(ejv)

    def stop(self) -> None:
        self._stopped = True

    # --- EAGER: pipelined regions ------------------------------------------------------
    def _schedule_eager(self, vertices: list[ExecutionVertex]) -> None:
        for ejv in self._graph.vertices_topologically():
            self._scheduled_vertices.add(ejv.id)
        regions = self._regions_now()
        members: dict[PipelinedRegion, list[ExecutionVertex]] = {}
        for vertex in vertices:          # topological order, kept within each region
            if vertex not in self._queued:
                members.setdefault(regions[vertex], []).append(vertex)
        for region, waiting in members.items():
            inputs = {id(group): group for vertex in waiting for group in vertex.consumed
                      if self._blocking_from_elsewhere(group.result)}
            queued = _QueuedRegion(region, waiting, [g for g in inputs.values()
                                                     if not _written(g)])
            if not queued.inputs:
                self._deploy_region(queued)
                continue
            self._queued.update(waiting)
            for result_id in {g.result.id for g in queued.inputs}:
                self._waiting_for.setdefault(result_id, []).append(queued)

    def _regions_now(self) -> dict[ExecutionVertex, PipelinedRegion]:
        """Each subtask's scheduling region, built again once adaptive execution gave a
        vertex its subtasks (``ExecutionGraph.version``)."""
        if self._regions is None or self._regions_version != self._graph.version:
            self._regions = scheduling_regions(self._graph)
            self._regions_version = self._graph.version
        return self._regions

    def _blocking_from_elsewhere(self, result: IntermediateResult) -> bool:
        if self._acyclic is None:
            self._acyclic = acyclic_vertex_regions(self._graph)
        return result.partition_type is PartitionType.BLOCKING and \
            self._acyclic[result.producer.id] != self._acyclic[result.consumer.id]

    def _blocking_result_written(self, result: IntermediateResult) -> None:
        """A partition of a BLOCKING result finished: the regions that waited only for
        what it completes go now."""
        waiting = self._waiting_for.get(result.id)
        if not waiting:
            return
        written: dict[int, bool] = {}      # an ALL_TO_ALL group is every consumer's

        def is_written(group: ConsumedPartitionGroup) -> bool:
            if id(group) not in written:
                written[id(group)] = _written(group)
            return written[id(group)]
        for queued in waiting:
            queued.inputs = [g for g in queued.inputs if g.result is not result
                             or not is_written(g)]
        self._waiting_for[result.id] = [q for q in waiting if any(
            g.result is result for g in q.inputs)]
        for queued in waiting:
            if not queued.inputs and not queued.deployed:
                self._queued.difference_update(queued.vertices)
                self._deploy_region(queued)

    def _deploy_region(self, queued: "_QueuedRegion") -> None:
        queued.deployed = True
        vertices = [v for v in queued.vertices if v.current.state is ExecutionState.CREATED]
        if vertices and not self._stopped:
            self._deploy_together(vertices, lambda: None)

    def _deploy_together(self, vertices: list[ExecutionVertex], then: Callable[[], None]) -> None:
        """Slots for all of ``vertices`` (in topological order), then all deployed at
        once, then ``then()``: a consumer's deployment names where its producers run."""
        allocation = self._allocate(vertices)
        remaining = {"n": len(allocation.waiting)}
        attempts = {vertex: vertex.current for vertex in vertices}

        def deploy_all() -> None:      # all slots are there: deploy everything at once
            for v in vertices:
                if v.current.state is ExecutionState.SCHEDULED:
                    self._deploy(v)
            then()

        def one_done(vertex: ExecutionVertex, fut: "Future[LogicalSlot]") -> None:
            if self._stopped or fut.cancelled() or vertex.current is not attempts[vertex]:
                return
            if fut.exception() is not None:
                self._fail_vertex(vertex, f"{vertex.name_with_index} got no slot: {fut.exception()}")
                return
            vertex.current.slot = fut.result()
            remaining["n"] -= 1
            if remaining["n"] == 0:
                deploy_all()
        for vertex, slot in allocation.ready.items():
            vertex.current.slot = slot
        if not allocation.waiting:
            deploy_all()
        for vertex, fut in allocation.waiting.items():
            fut.add_done_callback(functools.partial(self._on_main, one_done, vertex))

    # --- LAZY_FROM_SOURCES -----------------------------------------------------------
    def _schedule_job_vertex(self, ejv: ExecutionJobVertex) -> None:
        if ejv.id in self._scheduled_vertices:
            return
        if not ejv.initialized:
            self._initialize(ejv)
        self._scheduled_vertices.add(ejv.id)
        waiting = [v for v in ejv.task_vertices if v.current.state is ExecutionState.CREATED]
        attempts = {vertex: vertex.current for vertex in waiting}
        allocation = self._allocate(waiting)

        def done(vertex: ExecutionVertex, fut: "Future[LogicalSlot]") -> None:
            if self._stopped or fut.cancelled() or vertex.current is not attempts[vertex]:
                return
            if fut.exception() is not None:
                self._fail_vertex(vertex, f"{vertex.name_with_index} got no slot: {fut.exception()}")
                return
            if vertex.current.state is ExecutionState.SCHEDULED:
                vertex.current.slot = fut.result()
                self._deploy(vertex)
                self._on_slots(ejv)
        for vertex, slot in allocation.ready.items():
            if vertex.current.state is ExecutionState.SCHEDULED and not self._stopped:
                vertex.current.slot = slot
                self._deploy(vertex)
        if allocation.ready:
            self._on_slots(ejv)
        for vertex, fut in allocation.waiting.items():
            fut.add_done_callback(functools.partial(self._on_main, done, vertex))

    def restart(self, vertices: list[ExecutionVertex]) -> None:
        """Schedule subtasks a restart reset (their attempts are CREATED again)."""
        if self._stopped or not vertices:
            return
        if self._graph.schedule_mode is ScheduleMode.EAGER:
            self._schedule_eager(vertices)
            return
        restarted = {v.job_vertex.id for v in vertices}
        for ejv in self._graph.vertices_topologically():
            if ejv.id in restarted:
                self._scheduled_vertices.discard(ejv.id)
        for ejv in self._graph.vertices_topologically():
            if ejv.id in restarted:
                self._try_schedule(ejv)

    def on_partition_consumable(self, result: IntermediateResult) -> None:
        """A producer reported data, or finished: maybe its consumers can go now."""
        if self._stopped:
            return
        if self._graph.schedule_mode is ScheduleMode.EAGER:
            if result.partition_type is PartitionType.BLOCKING:
                self._blocking_result_written(result)
            return
        self._consider(result.consumer, set())

    def _consider(self, ejv: ExecutionJobVertex, seen: set[str]) -> None:
        """``ejv``, or else the vertices after it through PIPELINED results: a consumer
        further down may go with it (see the module's docstring)."""
        if ejv.id in seen or ejv.id in self._scheduled_vertices:
            return
        seen.add(ejv.id)
        self._try_schedule(ejv)
        if ejv.id not in self._scheduled_vertices:
            for result in ejv.produced:
                if result.partition_type is PartitionType.PIPELINED:
                    self._consider(result.consumer, seen)

    def _try_schedule(self, ejv: ExecutionJobVertex) -> None:
        if ejv.id in self._scheduled_vertices:
            return
        if ejv.is_source or all(r.is_consumable() for r in ejv.inputs):
            self._schedule_job_vertex(ejv)
            return
        group = self._pipelined_group(ejv)
        if group == [ejv]:
            self._schedule_job_vertex(ejv)
        elif group:
            for member in group:
                self._scheduled_vertices.add(member.id)

            def placed() -> None:
                for member in group:
                    self._on_slots(member)
            regions = self._regions_now()       # each of the group's regions on its own
            parts: dict[PipelinedRegion, list[ExecutionVertex]] = {}
            for member in group:
                for v in member.task_vertices:
                    if v.current.state is ExecutionState.CREATED:
                        parts.setdefault(regions[v], []).append(v)
            for part in parts.values():
                self._deploy_together(part, placed)

    def _pipelined_group(self, consumer: ExecutionJobVertex) -> list[ExecutionJobVertex] | None:
        """The consumer, once a partition of one of its inputs has data, and the vertices
        it reads through PIPELINED results not consumable yet, back to producers that
        have their slots; producers first. None while it must wait: an input that is
        BLOCKING and not finished, a producer still waiting for slots, a vertex adaptive
        execution has not sized."""
        if not any(r.producer.initialized and any(p.is_consumable() for p in r.partitions)
                   for r in consumer.inputs):
            return None
        group: list[ExecutionJobVertex] = []
        seen: set[str] = set()

        def add(ejv: ExecutionJobVertex) -> bool:
            if ejv.id in seen:
                return True
            seen.add(ejv.id)
            if ejv.adaptive and not ejv.initialized:      # sized from finished inputs
                return False
            for result in ejv.inputs:
                if result.is_consumable():
                    continue
                if result.partition_type is not PartitionType.PIPELINED and (
                        result.store or self._region[result.producer.id] != self._region[ejv.id]):
                    return False          # (a stored result is there once reported FINISHED)
                if _placed(result):
                    continue
                if result.producer.id in self._scheduled_vertices or \
                        result.producer.is_source or not add(result.producer):
                    return False
            group.append(ejv)
            return True
        return group if add(consumer) else None

    def _on_slots(self, ejv: ExecutionJobVertex) -> None:
        """A vertex's subtasks have slots: a consumer that waited only for that (for a
        PIPELINED input from it, or a BLOCKING one within its own region) may go now."""
        if self._stopped or self._graph.schedule_mode is ScheduleMode.EAGER:
            return
        for result in ejv.produced:
            if _placed(result):
                self._consider(result.consumer, set())

    # --- common ----------------------------------------------------------------------
    def _allocate(self, vertices: list[ExecutionVertex]) -> Allocation:
        for vertex in vertices:
            vertex.current.transition(ExecutionState.SCHEDULED)
        return self._allocator.allocate(vertices)

    def _on_main(self, fn: Callable[..., None], *args: object) -> None:
        if self._main.in_main_thread():
            fn(*args)
        else:
            self._main.execute(fn, *args)

    def release_slot_of(self, vertex: ExecutionVertex) -> None:
        self._allocator.release(vertex)


@dataclass(eq=False)
class _QueuedRegion:
    """A region's subtasks to schedule, and the BLOCKING inputs from other regions not
    yet written whole."""
    region: PipelinedRegion
    vertices: list[ExecutionVertex]
    inputs: list[ConsumedPartitionGroup]
    deployed: bool = False


def _written(group: ConsumedPartitionGroup) -> bool:
    return group.result.producer.initialized and all(p.finished for p in group.partitions())


def _placed(result: IntermediateResult) -> bool:
    """Whether each partition of the result is consumable or has a producer subtask that
    holds its slot and has not ended: where each one is or will be is known, and a
    consumer's request waits there for the partition to appear
    (``taskmanager.network.partition-request-timeout``). Per partition, since after a
    region's restart the producer's other subtasks have long finished."""
    return result.producer.initialized and all(
        p.is_consumable() or _holds_slot(p.producer) for p in result.partitions)


def _holds_slot(vertex: ExecutionVertex) -> bool:
    current = vertex.current
    return current.slot is not None and not current.state.is_terminal \
        and current.state is not ExecutionState.CANCELING
