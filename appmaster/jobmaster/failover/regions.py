"""Pipelined regions (Flink's SchedulingPipelinedRegion): the subtasks joined by
PIPELINED exchanges. Data flows through such an exchange while both sides run, so a
failure of one side takes the other with it; a BLOCKING exchange is written whole
before it is read, so it is where a failure can stop spreading.

An ALL_TO_ALL pipelined exchange joins every producer and consumer subtask into one
region; a POINTWISE one joins subtask i of each side. Built with a union-find over
the subtasks: O(subtasks + edges), an ALL_TO_ALL edge counting once per side.
Subtasks an adaptive vertex does not have yet belong to no region; the regions are
built again once it has them (``ExecutionGraph.version``).
"""
from __future__ import annotations

from yarnflow.appmaster.jobmaster.executiongraph import ExecutionGraph, ExecutionVertex
from yarnflow.core.jobgraph import DistributionPattern, PartitionType


class PipelinedRegion:
    __slots__ = ("index", "vertices")

    def __init__(self, index: int) -> None:
        self.index = index
        self.vertices: list[ExecutionVertex] = []

    def __repr__(self) -> str:
        return f"region#{self.index}({', '.join(map(str, self.vertices[:4]))}" \
               f"{', ...' if len(self.vertices) > 4 else ''})"


def pipelined_regions(graph: ExecutionGraph) -> dict[ExecutionVertex, PipelinedRegion]:
    vertices = list(graph.all_execution_vertices())
    number = {v: i for i, v in enumerate(vertices)}
    parent = list(range(len(vertices)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    def union(a: int, b: int) -> None:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)

    for result in graph.results.values():
        if result.partition_type is not PartitionType.PIPELINED:
            continue
        producers = result.producer.task_vertices
        consumers = result.consumer.task_vertices
        if not producers:          # an adaptive producer not yet decided: nothing to join
            continue
        if result.distribution is DistributionPattern.ALL_TO_ALL:
            first = number[producers[0]]
            for v in producers[1:] + consumers:
                union(first, number[v])
        else:
            for producer, consumer in zip(producers, consumers):
                union(number[producer], number[consumer])

    regions: dict[int, PipelinedRegion] = {}
    of: dict[ExecutionVertex, PipelinedRegion] = {}
    for v in vertices:
        root = find(number[v])
        region = regions.get(root)
        if region is None:
            region = regions[root] = PipelinedRegion(len(regions))
        region.vertices.append(v)
        of[v] = region
    return of


def vertex_regions(graph: ExecutionGraph) -> dict[str, str]:
    """Each job vertex's pipelined region, named by one of its vertices: the job vertices
    joined by PIPELINED results, whatever their parallelism (decided or not). A BLOCKING
    result between two vertices of one region is read within the region: the scheduler
    deploys its consumer with the region, and it is never stored for another."""
    region = {ejv.id: ejv.id for ejv in graph.job_vertices.values()}

    def find(vertex_id: str) -> str:
        while region[vertex_id] != vertex_id:
            region[vertex_id] = region[region[vertex_id]]
            vertex_id = region[vertex_id]
        return vertex_id
    for result in graph.results.values():
        if result.partition_type is PartitionType.PIPELINED:
            region[find(result.producer.id)] = find(result.consumer.id)
    return {vertex_id: find(vertex_id) for vertex_id in region}
