"""What a failure restarts (Flink's FailoverStrategy).

``region`` (RestartPipelinedRegionFailoverStrategy): the failed subtask's pipelined
region; every producer region whose BLOCKING result a restarted region reads and
that is no longer available (it was lost with its executor); and every region that
consumes what a restarted region produces, since a rerun may produce different data
than its consumers already read. A finished BLOCKING result on a live executor is
read again, not recomputed.

``full`` (RestartAllFailoverStrategy): every subtask.
"""
from __future__ import annotations

from typing import Callable, Iterable, Protocol

from yarnflow.appmaster.jobmaster.executiongraph import (ExecutionGraph, ExecutionVertex,
                                                         IntermediateResultPartition)
from yarnflow.appmaster.jobmaster.failover.regions import PipelinedRegion, pipelined_regions
from yarnflow.core.jobgraph import DistributionPattern, PartitionType

# Whether a finished partition can still be read (its executor is alive).
Availability = Callable[[IntermediateResultPartition], bool]


class FailoverStrategy(Protocol):
    def tasks_to_restart(self, failed: Iterable[ExecutionVertex],
                         available: Availability) -> set[ExecutionVertex]: ...


class RestartAll:
    def __init__(self, graph: ExecutionGraph) -> None:
        self._graph = graph

    def tasks_to_restart(self, failed: Iterable[ExecutionVertex],
                         available: Availability) -> set[ExecutionVertex]:
        return set(self._graph.all_execution_vertices())


class RestartPipelinedRegion:
    """Regions are computed at the first failure: a job that never fails never pays."""

    def __init__(self, graph: ExecutionGraph) -> None:
        self._graph = graph
        self._regions: dict[ExecutionVertex, PipelinedRegion] | None = None
        self._version = -1

    def region_of(self, vertex: ExecutionVertex) -> PipelinedRegion:
        if self._regions is None or self._version != self._graph.version:
            self._regions = pipelined_regions(self._graph)     # subtasks were added
            self._version = self._graph.version
        return self._regions[vertex]

    def tasks_to_restart(self, failed: Iterable[ExecutionVertex],
                         available: Availability) -> set[ExecutionVertex]:
        visited: set[int] = set()
        queue: list[PipelinedRegion] = []
        seen_groups: set[int] = set()      # ALL_TO_ALL groups are shared: look once
        seen_results: set[str] = set()

        def visit(region: PipelinedRegion) -> None:
            if region.index not in visited:
                visited.add(region.index)
                queue.append(region)

        for vertex in failed:
            visit(self.region_of(vertex))
        restart: set[ExecutionVertex] = set()
        while queue:
            region = queue.pop()
            restart.update(region.vertices)
            for vertex in region.vertices:
                for group in vertex.consumed:
                    if group.result.partition_type is not PartitionType.BLOCKING \
                            or id(group) in seen_groups:
                        continue
                    if group.result.distribution is DistributionPattern.ALL_TO_ALL:
                        seen_groups.add(id(group))
                    for partition in group.partitions():
                        if not available(partition):
                            visit(self.region_of(partition.producer))
                for result in vertex.job_vertex.produced:
                    if result.distribution is DistributionPattern.ALL_TO_ALL:
                        if result.id in seen_results:
                            continue
                        seen_results.add(result.id)
                        for consumer in result.consumer.task_vertices:
                            visit(self.region_of(consumer))
                    else:
                        visit(self.region_of(result.consumer.task_vertices[vertex.subtask_index]))
        return restart


def failover_strategy(name: str, graph: ExecutionGraph) -> FailoverStrategy:
    return RestartAll(graph) if name == "full" else RestartPipelinedRegion(graph)
