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

from typing import Callable, Iterable, Iterator

from yarnflow.appmaster.jobmaster.executiongraph import (ExecutionGraph, ExecutionVertex,
                                                         IntermediateResult)
from yarnflow.core.jobgraph import DistributionPattern, PartitionType


class PipelinedRegion:
    __slots__ = ("index", "vertices")

    def __init__(self, index: int) -> None:
        self.index = index
        self.vertices: list[ExecutionVertex] = []

    def __repr__(self) -> str:
        return f"region#{self.index}({', '.join(map(str, self.vertices[:4]))}" \
               f"{', ...' if len(self.vertices) > 4 else ''})"


def _roots(size: int, pairs: Iterable[tuple[int, int]]) -> list[int]:
    """Union-find over ``range(size)``: each element's component, named by its least
    element, once every pair is joined."""
    parent = list(range(size))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i
    for a, b in pairs:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    return [find(i) for i in range(size)]


def pipelined_regions(graph: ExecutionGraph) -> dict[ExecutionVertex, PipelinedRegion]:
    return _regions(graph, lambda result: result.partition_type is PartitionType.PIPELINED)


def scheduling_regions(graph: ExecutionGraph) -> dict[ExecutionVertex, PipelinedRegion]:
    """The subtasks deployed together: pipelined regions, also joined through a BLOCKING
    result whose producer and consumer are in one region of job vertices
    (``acyclic_vertex_regions``: a self-join's BLOCKING probe side, which the region
    reads whole before its producer can finish). Each waits only for BLOCKING results
    of other job-vertex regions (Flink's SchedulingPipelinedRegion and its consumed
    BLOCKING partition groups)."""
    of_vertex = acyclic_vertex_regions(graph)
    return _regions(graph, lambda result: result.partition_type is PartitionType.PIPELINED
                    or of_vertex[result.producer.id] == of_vertex[result.consumer.id])


def _regions(graph: ExecutionGraph, joins: Callable[[IntermediateResult], bool]
             ) -> dict[ExecutionVertex, PipelinedRegion]:
    vertices = list(graph.all_execution_vertices())
    number = {v: i for i, v in enumerate(vertices)}

    def joined() -> Iterator[tuple[int, int]]:
        for result in graph.results.values():
            if not joins(result):
                continue
            producers = result.producer.task_vertices
            consumers = result.consumer.task_vertices
            if not producers:      # an adaptive producer not yet decided: nothing to join
                continue
            if result.distribution is DistributionPattern.ALL_TO_ALL:
                first = number[producers[0]]
                yield from ((first, number[v]) for v in producers[1:] + consumers)
            else:
                yield from ((number[p], number[c]) for p, c in zip(producers, consumers))

    roots = _roots(len(vertices), joined())
    regions: dict[int, PipelinedRegion] = {}
    of: dict[ExecutionVertex, PipelinedRegion] = {}
    for v in vertices:
        root = roots[number[v]]
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
    ids = list(graph.job_vertices)
    number = {vertex_id: i for i, vertex_id in enumerate(ids)}
    roots = _roots(len(ids), ((number[r.producer.id], number[r.consumer.id])
                              for r in graph.results.values()
                              if r.partition_type is PartitionType.PIPELINED))
    return {vertex_id: ids[roots[i]] for i, vertex_id in enumerate(ids)}


def acyclic_vertex_regions(graph: ExecutionGraph) -> dict[str, str]:
    """``vertex_regions``, with the regions that read each other's BLOCKING results
    around a cycle merged into one, as Flink merges regions on cycles: each would wait
    for the other (TPC-H Q21: a source's region reads a join's BLOCKING result, and
    that join's region reads the source's). The components of the regions' graph,
    strongly connected, by Kosaraju's two passes."""
    region = vertex_regions(graph)
    after: dict[str, set[str]] = {r: set() for r in region.values()}
    before: dict[str, set[str]] = {r: set() for r in region.values()}
    for result in graph.results.values():
        a, b = region[result.producer.id], region[result.consumer.id]
        if a != b:
            after[a].add(b)
            before[b].add(a)
    order: list[str] = []
    seen: set[str] = set()
    for start in after:                       # finishing order, without recursion
        if start in seen:
            continue
        seen.add(start)
        stack = [(start, iter(after[start]))]
        while stack:
            node, rest = stack[-1]
            nxt = next((n for n in rest if n not in seen), None)
            if nxt is None:
                order.append(node)
                stack.pop()
            else:
                seen.add(nxt)
                stack.append((nxt, iter(after[nxt])))
    component: dict[str, str] = {}
    for root in reversed(order):              # the reversed graph, latest finish first
        if root in component:
            continue
        todo = [root]
        component[root] = root
        while todo:
            for prev in before[todo.pop()]:
                if prev not in component:
                    component[prev] = root
                    todo.append(prev)
    return {vertex_id: component[r] for vertex_id, r in region.items()}
