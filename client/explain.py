"""``yarnflow explain``: the plan a pipeline would run with, without running it.

Shows what Flink's plan visualizer and Spark's ``EXPLAIN`` show — vertices,
parallelism, slot profiles, how each input is shipped, the estimates the planner
used — and why each join got its strategy.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text

from yarnflow.conf import Configuration, options
from yarnflow.core.jobgraph import JobGraph, PartitionType, ShipStrategy
from yarnflow.core.estimates import UNKNOWN, format_bytes
from yarnflow.core.resources import ResourceSpec


class ExplainStatus(enum.Enum):
    EXPLAINED = "EXPLAINED"


@dataclass
class ExplainResult:
    """What ``execute()`` returns under ``yarnflow explain``: the plan, not a run (it
    answers ``status()`` as a job handle does, so a script runs on unchanged)."""
    graph: JobGraph

    def status(self) -> ExplainStatus:
        return ExplainStatus.EXPLAINED


def describe_input(edge: Any) -> str:
    ship = edge.ship.name
    if edge.ship is ShipStrategy.HASH:
        ship = f"HASH({', '.join(edge.keys)})"
    blocking = " [BLOCKING]" if edge.partition_type is PartitionType.BLOCKING else ""
    return f"{ship} <- {edge.source.name}{blocking}"


def plan_renderable(graph: JobGraph, config: Configuration) -> Group:
    default_slot = ResourceSpec(config.get(options.DEFAULT_SLOT_CPU),
                                config.get(options.DEFAULT_SLOT_MEMORY))
    table = Table(title=f"plan of {graph.name} ({graph.schedule_mode.name})", title_justify="left")
    for column in ("vertex", "parallelism", "slot sharing group", "slot profile", "inputs",
                   "est. rows", "est. size", "estimated from"):
        table.add_column(column, justify="right" if column.startswith(("est.", "par")) else "left")
    for vertex in graph.topological_order():
        estimate = vertex.estimate or UNKNOWN
        group = vertex.slot_sharing_group or ""
        table.add_row(
            vertex.name, str(vertex.parallelism), group,
            graph.slot_profile(group, default_slot).label() if group else "",
            "\n".join(describe_input(e) for e in graph.inputs_of(vertex)) or "(source)",
            "?" if estimate.rows is None else f"{estimate.rows:,}", format_bytes(estimate.bytes),
            estimate.origin or "-")
    lines: list[Table | Text] = [table]
    for vertex_id, plan in graph.join_plans.items():
        lines.append(Text(f"{graph.vertices[vertex_id].name}: {plan.strategy.name} join — "
                          f"{plan.reason}"))
    return Group(*lines)


def join_strategies(graph: JobGraph) -> dict[str, str]:
    """Each join's chosen strategy by vertex name ('broadcast' or 'hash')."""
    return {graph.vertices[v].name: plan.strategy.value for v, plan in graph.join_plans.items()}
