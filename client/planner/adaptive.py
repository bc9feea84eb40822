"""Which operators get their parallelism at run time (``execution.batch.adaptive.enabled``).

An operator is decided at run time when the user did not set its parallelism
(``set_parallelism``; the pipeline's and ``parallelism.default`` are defaults, not
settings), it is in no co-location group, and every input reaches it through a
BLOCKING redistribution (hash, rebalance or broadcast; at least one not a
broadcast): those inputs are written whole before it starts, and their bytes decide.
An operator whose one input is a FORWARD edge from such an operator follows its
parallelism (Flink's forward group). An operator that feeds a FORWARD edge to one of
fixed parallelism must match it, so it is not decided at run time either.
"""
from __future__ import annotations

from typing import AbstractSet

from yarnflow.core.jobgraph import JobGraph, JobVertex, PartitionType, ShipStrategy


def mark_adaptive(graph: JobGraph, unset: AbstractSet[str]) -> list[JobVertex]:
    """Mark the vertices decided at run time (``unset``: ids of the vertices whose
    parallelism the user left unset); returns them, producers first."""
    order = graph.topological_order()
    chosen: set[str] = set()
    for vertex in order:
        if vertex.id not in unset or vertex.co_location_group:
            continue
        inputs = graph.inputs_of(vertex)
        if inputs and all(e.partition_type is PartitionType.BLOCKING and
                          e.ship is not ShipStrategy.FORWARD for e in inputs) and \
                any(e.ship is not ShipStrategy.BROADCAST for e in inputs):
            chosen.add(vertex.id)
        elif len(inputs) == 1 and inputs[0].ship is ShipStrategy.FORWARD and \
                inputs[0].source.id in chosen:
            chosen.add(vertex.id)
    changed = True
    while changed:             # a FORWARD edge into a fixed vertex pins its producer
        changed = False
        for edge in graph.edges:
            if edge.ship is ShipStrategy.FORWARD and edge.source.id in chosen and \
                    edge.target.id not in chosen:
                chosen.discard(edge.source.id)
                changed = True
            if edge.ship is ShipStrategy.FORWARD and edge.target.id in chosen and \
                    edge.source.id not in chosen:
                chosen.discard(edge.target.id)
                changed = True
    marked = [v for v in order if v.id in chosen]
    for vertex in marked:
        vertex.adaptive = True
    return marked
