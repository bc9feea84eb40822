"""Initializing an adaptive vertex once its inputs are written: its decided parallelism,
the subpartitions each of its subtasks reads, its subtasks' shared slots, and the
vertices FORWARD-connected after it, which take the same parallelism (Flink's forward
groups). Runs on the JobMaster's main thread, just before the vertex is scheduled."""
from __future__ import annotations

import dataclasses
import logging
from typing import Callable

from yarnflow.appmaster.jobmaster.settings import AdaptiveSettings
from yarnflow.appmaster.jobmaster.executiongraph import ExecutionGraph, ExecutionJobVertex
from yarnflow.appmaster.jobmaster.scheduler.adaptivebatch.decider import (
    AutoParallelism, InputBytes, ParallelismDecision, decide)
from yarnflow.appmaster.jobmaster.scheduler.adaptivebatch.join_decider import (SkewSettings,
                                                                               decide_join)
from yarnflow.appmaster.jobmaster.scheduler.adaptivebatch.slot_sizing import (bytes_read,
                                                                              sized_profile)
from yarnflow.core.estimates import format_bytes
from yarnflow.core.resources import ResourceSpec
from yarnflow.core.slot_memory import SlotMemory
from yarnflow.core.jobgraph import DistributionPattern, ShipStrategy

log = logging.getLogger(__name__)


def measured_inputs(ejv: ExecutionJobVertex) -> list[InputBytes]:
    """What the producers of each input reported writing, per subpartition."""
    out = []
    for result in ejv.inputs:
        position = result.producer.produced.index(result)
        sizes: list[tuple[int, ...] | None] = []
        for partition in result.partitions:
            metrics = partition.producer.current.metrics
            produced = metrics.produced_bytes if metrics is not None else ()
            sizes.append(produced[position] if position < len(produced) else None)
        out.append(InputBytes(result.id, result.ship is ShipStrategy.BROADCAST,
                              result.num_subpartitions, tuple(sizes)))
    return out


class AdaptiveVertexInitializer:
    def __init__(self, graph: ExecutionGraph, settings: AutoParallelism,
                 add_subtasks: Callable[[ExecutionJobVertex], None],
                 skew: SkewSettings = SkewSettings(), memory: SlotMemory = SlotMemory(False),
                 default_slot: ResourceSpec = ResourceSpec(1, 1024)) -> None:
        """``add_subtasks(ejv)`` gives a vertex's new subtasks their shared slots."""
        self._graph = graph
        self._settings = settings
        self._skew = skew
        self._memory = memory
        self._default_slot = default_slot
        self._add_subtasks = add_subtasks

    @classmethod
    def of(cls, settings: AdaptiveSettings, default_slot: ResourceSpec, graph: ExecutionGraph,
           add_subtasks: Callable[[ExecutionJobVertex], None]) -> "AdaptiveVertexInitializer":
        return cls(graph, settings.parallelism, add_subtasks, settings.skew,
                   settings.slot_memory, default_slot)

    def initialize(self, ejv: ExecutionJobVertex) -> None:
        if ejv.initialized:
            return
        join = ejv.job_vertex.join
        inputs = measured_inputs(ejv)
        if join is not None and len(ejv.inputs) == 2:
            # each side by the operator whose output it is (one of a chain's)
            names = (ejv.inputs[0].edge.producer_name, ejv.inputs[1].edge.producer_name)
            decision = decide_join(inputs, names, ejv.configured_parallelism,
                                   self._settings, join, self._skew)
        else:
            decision = decide(inputs, ejv.configured_parallelism, self._settings)
        stage = self._stage(ejv)
        profile = None
        if self._memory.enabled and all(v.job_vertex.resources is None and
                                        not v.job_vertex.uses_spark for v in stage):
            largest = max(bytes_read(inputs, decision.reads, decision.parallelism), default=0)
            profile = sized_profile(largest, self._default_slot, self._memory)
            decision = dataclasses.replace(decision, reason=(
                f"{decision.reason}; slots of {profile.label()} for the "
                f"{format_bytes(largest)} its largest subtask reads "
                "(execution.batch.adaptive.slot-memory.*)"))
        for vertex in stage:
            if profile is not None:
                vertex.sized_profile, vertex.sized_group = profile, f"{ejv.id}@{profile.label()}"
                vertex.sized_exact = self._memory.exact
            self._apply(vertex, decision if vertex is ejv else ParallelismDecision(
                decision.parallelism, vertex.configured_parallelism, None, {},
                f"as its FORWARD input '{ejv.name}'"))
        log.info("job %s: %s runs with parallelism %d (configured %d): %s", self._graph.job_id[:8],
                 ejv.name, decision.parallelism, decision.configured, decision.reason)

    @staticmethod
    def _stage(ejv: ExecutionJobVertex) -> list[ExecutionJobVertex]:
        """The vertex and those FORWARD-connected after it, which take its parallelism
        (Flink's forward group), producers first."""
        stage, i = [ejv], 0
        while i < len(stage):
            for result in stage[i].produced:
                follower = result.consumer
                if follower.adaptive and not follower.initialized and \
                        result.distribution is DistributionPattern.POINTWISE and \
                        follower not in stage:
                    stage.append(follower)
            i += 1
        return stage

    def _apply(self, ejv: ExecutionJobVertex, decision: ParallelismDecision) -> None:
        self._graph.initialize(ejv, decision.parallelism, decision.reads)
        ejv.decision = decision
        self._add_subtasks(ejv)
