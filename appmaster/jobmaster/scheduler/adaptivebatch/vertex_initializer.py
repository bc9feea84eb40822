"""Initializing an adaptive vertex once its inputs are written: its decided parallelism,
the subpartitions each of its subtasks reads, its subtasks' shared slots, and the
vertices FORWARD-connected after it, which take the same parallelism (Flink's forward
groups). Runs on the JobMaster's main thread, just before the vertex is scheduled."""
from __future__ import annotations

import logging
from typing import Callable

from yarnflow.appmaster.jobmaster.executiongraph import ExecutionGraph, ExecutionJobVertex
from yarnflow.appmaster.jobmaster.scheduler.adaptivebatch.decider import (
    AutoParallelism, InputBytes, ParallelismDecision, decide)
from yarnflow.appmaster.jobmaster.scheduler.adaptivebatch.join_decider import (SkewSettings,
                                                                               decide_join)
from yarnflow.conf import Configuration, options
from yarnflow.core.jobgraph import DistributionPattern, ShipStrategy

log = logging.getLogger(__name__)


def auto_parallelism(config: Configuration) -> AutoParallelism:
    return AutoParallelism(config.get(options.ADAPTIVE_MIN_PARALLELISM),
                           config.get(options.ADAPTIVE_MAX_PARALLELISM),
                           config.get(options.ADAPTIVE_AVG_DATA_VOLUME))


def skew_settings(config: Configuration) -> SkewSettings:
    return SkewSettings(config.get(options.SKEWED_JOIN_STRATEGY) == "auto",
                        config.get(options.SKEWED_JOIN_FACTOR),
                        config.get(options.SKEWED_JOIN_THRESHOLD))


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
                 skew: SkewSettings = SkewSettings()) -> None:
        """``add_subtasks(ejv)`` gives a vertex's new subtasks their shared slots."""
        self._graph = graph
        self._settings = settings
        self._skew = skew
        self._add_subtasks = add_subtasks

    def initialize(self, ejv: ExecutionJobVertex) -> None:
        if ejv.initialized:
            return
        join = ejv.job_vertex.join
        if join is not None and len(ejv.inputs) == 2:
            names = (ejv.inputs[0].producer.name, ejv.inputs[1].producer.name)
            decision = decide_join(measured_inputs(ejv), names, ejv.configured_parallelism,
                                   self._settings, join, self._skew)
        else:
            decision = decide(measured_inputs(ejv), ejv.configured_parallelism, self._settings)
        self._apply(ejv, decision)
        log.info("job %s: %s runs with parallelism %d (configured %d): %s", self._graph.job_id[:8],
                 ejv.name, decision.parallelism, decision.configured, decision.reason)

    def _apply(self, ejv: ExecutionJobVertex, decision: ParallelismDecision) -> None:
        self._graph.initialize(ejv, decision.parallelism, decision.reads)
        ejv.decision = decision
        self._add_subtasks(ejv)
        for result in ejv.produced:
            follower = result.consumer
            if follower.adaptive and not follower.initialized and \
                    result.distribution is DistributionPattern.POINTWISE:
                self._apply(follower, ParallelismDecision(
                    decision.parallelism, follower.configured_parallelism, None, {},
                    f"as its FORWARD input '{ejv.name}'"))
