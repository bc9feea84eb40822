"""When subtasks get slots and are deployed (Flink's SchedulingStrategy): EAGER or
LAZY_FROM_SOURCES.

EAGER asks for every slot first and deploys all subtasks once all slots are there
(a streaming job's tasks must all run at once). LAZY_FROM_SOURCES deploys the
sources, and each consumer vertex once all of its inputs are consumable: a PIPELINED
result when each producer has produced data (or finished), a BLOCKING one when each
producer has finished. Once one input is consumable, a PIPELINED input whose producers
all have their slots counts as well, without waiting for its first batch: one producer
may feed a consumer through two PIPELINED results (a source and a filter after it, in
one chain or not, both into a union or a join), and it stops at the one with data until
the consumer reads it, so the other's first batch (or end, when the filter keeps
nothing) would never come. Runs on the JobMaster's main thread.

A restart hands the scheduler the subtasks it reset: under EAGER they are scheduled
at once, all together; under LAZY_FROM_SOURCES each of their vertices goes again
when its inputs are consumable (at once when they come from results that survived).
A slot that arrives for an attempt that was meanwhile replaced is not used for its
successor, which asked for its own.
"""
from __future__ import annotations

import functools
import logging
from concurrent.futures import Future
from typing import Callable

from yarnflow.appmaster.jobmaster.executiongraph import (ExecutionGraph, ExecutionJobVertex,
                                                         ExecutionState, ExecutionVertex,
                                                         IntermediateResult)
from yarnflow.appmaster.jobmaster.scheduler.allocator import (Allocation, LogicalSlot,
                                                              SlotSharingSlotAllocator)
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

    def start(self) -> None:
        """Subtasks restored as finished from an earlier ApplicationMaster's job event
        log are not scheduled; a vertex whose inputs they make consumable goes at once."""
        if self._graph.schedule_mode is ScheduleMode.EAGER:
            self._schedule_eager([v for v in self._graph.all_execution_vertices()
                                  if v.current.state is ExecutionState.CREATED])
        else:
            for ejv in self._graph.vertices_topologically():
                if ejv.is_source or self._inputs_ready(ejv):
                    self._schedule_job_vertex(ejv)

    def stop(self) -> None:
        self._stopped = True

    # --- EAGER -----------------------------------------------------------------------
    def _schedule_eager(self, vertices: list[ExecutionVertex]) -> None:
        for ejv in self._graph.vertices_topologically():
            self._scheduled_vertices.add(ejv.id)
        allocation = self._allocate(vertices)
        remaining = {"n": len(allocation.waiting)}
        attempts = {vertex: vertex.current for vertex in vertices}

        def deploy_all() -> None:      # all slots are there: deploy everything at once
            for v in vertices:
                if v.current.state is ExecutionState.SCHEDULED:
                    self._deploy(v)

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
                self._placed(ejv)
        for vertex, slot in allocation.ready.items():
            if vertex.current.state is ExecutionState.SCHEDULED and not self._stopped:
                vertex.current.slot = slot
                self._deploy(vertex)
        if allocation.ready:
            self._placed(ejv)
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
                if ejv.is_source or self._inputs_ready(ejv):
                    self._schedule_job_vertex(ejv)

    def on_partition_consumable(self, result: IntermediateResult) -> None:
        """A producer reported data, or finished: maybe its consumers can go now."""
        if self._stopped or self._graph.schedule_mode is ScheduleMode.EAGER:
            return
        consumer = result.consumer
        if consumer.id not in self._scheduled_vertices and self._inputs_ready(consumer):
            self._schedule_job_vertex(consumer)

    def _inputs_ready(self, consumer: ExecutionJobVertex) -> bool:
        consumable = [r.is_consumable() for r in consumer.inputs]
        if all(consumable):
            return True
        if not any(consumable) or consumer.adaptive:  # adaptive: sized from finished inputs
            return False
        return all(ok or _producers_placed(r) for r, ok in zip(consumer.inputs, consumable))

    def _placed(self, ejv: ExecutionJobVertex) -> None:
        """A vertex's subtasks have slots: a consumer of one of its PIPELINED results
        that waited only for it may go (see the module's docstring)."""
        if self._graph.schedule_mode is ScheduleMode.EAGER:
            return
        for result in ejv.produced:
            if result.partition_type is PartitionType.PIPELINED and _producers_placed(result):
                self.on_partition_consumable(result)

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


def _producers_placed(result: IntermediateResult) -> bool:
    """A PIPELINED result whose producer subtasks all have a slot and have not ended:
    where each one runs is known, and a consumer's request waits there for the
    partition to appear (``taskmanager.network.partition-request-timeout``)."""
    return result.partition_type is PartitionType.PIPELINED and result.producer.initialized \
        and all(v.current.slot is not None and not v.current.state.is_terminal
                and v.current.state is not ExecutionState.CANCELING
                for v in result.producer.task_vertices)
