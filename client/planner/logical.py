"""What a pipeline records as the user builds it: the logical plan, nothing decided.

``Pipeline`` and ``DataSet`` add a node (a ``JobVertex`` holding the user's operator
and what the user set on it: a name, a parallelism, resources, a slot sharing group)
and the edges into it as the user shaped them (``key_by``, ``forward``, a blocking
exchange), or a join with its inputs and its requested strategy. Whatever the user
left open (a ship strategy, a join's strategy, a parallelism, a partition type) stays
open here; the compiler's passes (``compiler.py``) decide it, on copies, so the same
pipeline compiles again under another configuration.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from yarnflow.client.planner.joins import JoinStrategy
from yarnflow.core.jobgraph import JobVertex, PartitionType, ScheduleMode, ShipStrategy


@dataclass(frozen=True)
class LogicalEdge:
    """An edge as the user shaped it: ``ship`` None (and ``partition_type`` None) is for
    the planner to decide."""
    source: JobVertex
    target: JobVertex
    ship: ShipStrategy | None
    keys: tuple[str, ...]
    partition_type: PartitionType | None
    target_input: int


@dataclass(frozen=True)
class JoinInput:
    """One side of a join: its producer and the exchange the user shaped it with, which
    the join's strategy keeps for the side it does not broadcast."""
    vertex: JobVertex
    ship: ShipStrategy | None
    keys: tuple[str, ...]
    partition_type: PartitionType | None


@dataclass(frozen=True)
class LogicalJoin:
    """A join whose ship strategies the planner chooses from both inputs' estimates."""
    vertex: JobVertex
    left: JoinInput
    right: JoinInput
    left_keys: list[str]
    right_keys: list[str]
    strategy: JoinStrategy

    @property
    def sides(self) -> tuple[JoinInput, JoinInput]:
        return self.left, self.right


@dataclass(frozen=True)
class LogicalPlan:
    name: str
    parallelism: int | None
    schedule_mode: ScheduleMode
    exchange: PartitionType | None
    vertices: tuple[JobVertex, ...]
    edges: tuple[LogicalEdge, ...]
    joins: tuple[LogicalJoin, ...]
    # a step the planner's user-facing API added for an operator (a local aggregate):
    # the operator's name, which the user knows, for its errors
    step_of: Mapping[str, str] = field(default_factory=dict)

    def inputs_of(self, vertex: JobVertex) -> list[JobVertex]:
        """A node's inputs in input order, matched by id."""
        for join in self.joins:
            if join.vertex.id == vertex.id:
                return [join.left.vertex, join.right.vertex]
        edges = sorted((e for e in self.edges if e.target.id == vertex.id),
                       key=lambda e: e.target_input)
        return [e.source for e in edges]

    def producers_first(self) -> list[JobVertex]:
        """Every node after its inputs (a cycle is left for validation to name)."""
        order: list[JobVertex] = []
        placed: set[str] = set()

        def place(vertex: JobVertex, path: tuple[str, ...]) -> None:
            if vertex.id in placed or vertex.id in path:
                return
            for upstream in self.inputs_of(vertex):
                place(upstream, path + (vertex.id,))
            placed.add(vertex.id)
            order.append(vertex)
        for vertex in self.vertices:
            place(vertex, ())
        return order

    def name_of(self, vertex: JobVertex) -> str:
        """The name an error gives a node: a step added for an operator goes by the
        operator's."""
        return self.step_of.get(vertex.id, vertex.name)
