"""What a shared slot must hold at once: the largest set of its subtasks that can run
at the same time, not all of them.

Why: a shared slot holds subtask i of every vertex of its group (seed 000), stage
after stage. Subtasks joined by PIPELINED edges run together, so their specs add up.
A subtask that reads a BLOCKING result over an all-to-all edge starts only once every
producer subtask has finished, so a source stage and the aggregate after it never
need the slot at the same time. Summing the whole group (as Flink sums the operators
of a slot sharing group) asked YARN for 4-vcore containers for a job whose largest
stage needs 3, and on a cluster with 3 vcores free per host none was ever placed
(issue 81).

So the graph is cut into pipelined regions of job vertices (joined by PIPELINED
edges), and region A runs before region B when a chain of such regions leads from A to
B through BLOCKING edges that make a consumer wait for every producer subtask: all to
all, or forward between equal parallelisms (subtask i reads subtask i, and both are
in shared slot i). Regions of which neither runs before the other may run together
(regions that read each other's results around a cycle are scheduled as one); for
each of cores, memory and GPUs the slot needs the largest sum over such a set (a
maximum-weight antichain), found exactly for the few regions a group has, and the
plain sum beyond ``MAX_EXACT`` of them.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

from yarnflow.core.resources import ResourceSpec

if TYPE_CHECKING:
    from yarnflow.core.jobgraph import JobGraph, JobVertex

# more regions than this in one group: the plain sum (enumerating sets grows as 3^(n/3))
MAX_EXACT = 16


def pipelined_regions(graph: "JobGraph") -> dict[str, int]:
    """Each job vertex's pipelined region: vertices joined by PIPELINED edges share one."""
    parent = {vertex_id: vertex_id for vertex_id in graph.vertices}

    def root(vertex_id: str) -> str:
        while parent[vertex_id] != vertex_id:
            parent[vertex_id] = parent[parent[vertex_id]]
            vertex_id = parent[vertex_id]
        return vertex_id

    for edge in graph.edges:
        if edge.pipelined:
            parent[root(edge.source.id)] = root(edge.target.id)
    numbers: dict[str, int] = {}
    return {vertex_id: numbers.setdefault(root(vertex_id), len(numbers))
            for vertex_id in graph.vertices}


def _reach(graph: "JobGraph", region: dict[str, int]) -> dict[int, set[int]]:
    """Region -> the regions that run after it."""
    after: dict[int, set[int]] = {r: set() for r in region.values()}
    for edge in graph.edges:
        a, b = region[edge.source.id], region[edge.target.id]
        if a != b and edge.waits_for_every_producer:
            after[a].add(b)
    reach: dict[int, set[int]] = {}
    for start in after:
        seen: set[int] = set()
        todo = list(after[start])
        while todo:
            r = todo.pop()
            if r not in seen:
                seen.add(r)
                todo.extend(after[r])
        reach[start] = seen
    return reach


def _largest_together(weights: dict[int, tuple[float, int, int]],
                      together: dict[int, set[int]]) -> tuple[float, int, int]:
    """For each dimension, the largest sum over sets of regions that may all run at the
    same time (Bron-Kerbosch over the graph of regions that may run together)."""
    best = [0.0, 0.0, 0.0]

    def extend(chosen: list[int], candidates: set[int], excluded: set[int]) -> None:
        if not candidates and not excluded:
            for dim in range(3):
                best[dim] = max(best[dim], sum(weights[r][dim] for r in chosen))
            return
        pivot = max(candidates | excluded, key=lambda r: len(together[r] & candidates))
        for r in list(candidates - together[pivot]):
            extend(chosen + [r], candidates & together[r], excluded & together[r])
            candidates = candidates - {r}
            excluded = excluded | {r}

    extend([], set(weights), set())
    return best[0], int(best[1]), int(best[2])


class SlotConcurrency:
    """A job graph's pipelined regions and which run before which, worked out once."""

    def __init__(self, graph: "JobGraph") -> None:
        self.region = pipelined_regions(graph)
        self._reach = _reach(graph, self.region)

    def runs_before(self, vertex_id: str, other_id: str) -> bool:
        """Whether every subtask of ``vertex_id`` in a shared slot has ended before the
        one of ``other_id`` in that slot starts."""
        a, b = self.region[vertex_id], self.region[other_id]
        return b in self._reach[a] and a not in self._reach[b]

    def profile(self, members: Iterable["JobVertex"]) -> ResourceSpec | None:
        """The resources a shared slot holding ``members`` (each with its spec) needs
        at once; None when none of them has a spec. The node label is theirs, merged."""
        specs = [(v.id, v.resources) for v in members if v.resources]
        if not specs:
            return None
        total = specs[0][1]
        for _, spec in specs[1:]:
            total = total + spec              # the label merged, and the sum as a fallback
        weights: dict[int, tuple[float, int, int]] = {}
        for vertex_id, spec in specs:
            cpu, memory, gpus = weights.get(self.region[vertex_id], (0.0, 0, 0))
            weights[self.region[vertex_id]] = (cpu + spec.cpu, memory + spec.memory_mb,
                                               gpus + spec.gpus)
        if len(weights) == 1 or len(weights) > MAX_EXACT:
            return total
        together = {a: {b for b in weights if b != a and
                        ((b in self._reach[a]) == (a in self._reach[b]))} for a in weights}
        cpu, memory, gpus = _largest_together(weights, together)
        return ResourceSpec(cpu, memory, gpus, total.node_label)

    def still_needed(self, members: Iterable["JobVertex"],
                     scheduled: Iterable["JobVertex"]) -> list["JobVertex"]:
        """The members that may still run once ``scheduled`` start: not those that
        ended before (an earlier stage in the same shared slot)."""
        starting = [v.id for v in scheduled]
        return [v for v in members
                if not starting or not all(self.runs_before(v.id, s) for s in starting)]
