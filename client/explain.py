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
from yarnflow.core.plan import plan_vertices, spec_json
from yarnflow.core.resources import ResourceSpec
from yarnflow.core.worker_spec import slots_needed


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
    if edge.ship in (ShipStrategy.HASH, ShipStrategy.RANGE):
        ship = f"{ship}({', '.join(edge.keys)})"
    blocking = " [BLOCKING]" if edge.partition_type is PartitionType.BLOCKING else ""
    return f"{ship} <- {edge.source.name}{blocking}"


def plan_json(graph: JobGraph, config: Configuration) -> dict[str, Any]:
    """The plan as data, for tools and tests: what the table shows, plus the profile of
    each shared slot and the executors (worker specs) the job would start."""
    from yarnflow.client.targets.base import planned_worker_specs
    default_slot = options.default_slot_profile(config)
    vertices = plan_vertices(graph, default_slot)
    needed = slots_needed(graph, default_slot)
    workers = []
    for profile, spec in planned_worker_specs(graph, config).items():
        workers.append({"name": spec.name, "slot_profile": spec_json(spec.slot_profile),
                        "slots": spec.num_slots, "container": spec_json(spec.container),
                        "executors": -(-needed.get(profile, 0) // spec.num_slots)})
    return {
        "name": graph.name, "job_id": graph.job_id, "schedule_mode": graph.schedule_mode.name,
        "vertices": vertices,
        "shared_slots": {group: [spec_json(p) for p in graph.shared_slot_profiles(group, default_slot)]
                         for group in graph.slot_sharing_groups()},
        "worker_specs": workers,
        "joins": [{"vertex": graph.vertices[v].name, "operator": graph.vertices[v].operators[0],
                   "strategy": plan.strategy.name, "type": plan.join_type,
                   "broadcast_input": plan.broadcast_input, "build_input": plan.build_input,
                   "reason": plan.reason} for v, plan in graph.join_plans.items()]}


def plan_renderable(graph: JobGraph, config: Configuration) -> Group:
    plan = plan_json(graph, config)
    table = Table(title=f"plan of {graph.name} ({graph.schedule_mode.name})", title_justify="left")
    for column in ("vertex", "parallelism", "slot sharing group", "slot profiles", "inputs",
                   "est. rows", "est. size", "estimated from"):
        table.add_column(column, justify="right" if column.startswith(("est.", "par")) else "left",
                         no_wrap=column == "inputs")     # an input reads as one phrase
    shown: set[str] = set()
    for vertex in graph.topological_order():
        estimate = vertex.estimate or UNKNOWN
        group = vertex.slot_sharing_group or ""
        table.add_row(
            vertex.name, "auto" if vertex.adaptive else str(vertex.parallelism), group,
            _profiles(plan["shared_slots"].get(group, [])) if group not in shown else "(as above)",
            "\n".join(describe_input(e) for e in graph.inputs_of(vertex)) or "(source)",
            "?" if estimate.rows is None else f"{estimate.rows:,}", format_bytes(estimate.bytes),
            estimate.origin or "-")
        shown.add(group)
    lines: list[Table | Text] = [table]
    lines.append(Text("executors: " + ", ".join(
        f"{w['executors']} x {w['name']} ({_label(w['container'])} each)"
        for w in plan["worker_specs"] if w["executors"])))
    for vertex_id, join in graph.join_plans.items():
        join_name = graph.vertices[vertex_id].operators[0]     # a join heads its chain
        lines.append(Text(f"{join_name}: {join.strategy.name} join, {join.join_type} — "
                          f"{join.reason}"))
    if any(v.adaptive for v in graph.vertices.values()):
        lines.append(Text(adaptive_note(config)))
    return Group(*lines)


def adaptive_note(config: Configuration) -> str:
    """What ``auto`` in the parallelism column means."""
    memory = options.slot_memory(config)
    return ("auto: parallelism decided at run time, once the inputs are written, from the "
            "bytes they measured: "
            f"{format_bytes(config.get(options.ADAPTIVE_AVG_DATA_VOLUME))} per subtask, "
            f"{config.get(options.ADAPTIVE_MIN_PARALLELISM)}.."
            f"{config.get(options.ADAPTIVE_MAX_PARALLELISM)} "
            "(execution.batch.adaptive.auto-parallelism.*)" + (
                "; slots sized from the bytes read, among "
                + ", ".join(f"{size} MB" for size in memory.rungs())
                + " (execution.batch.adaptive.slot-memory.*)" if memory.enabled else "")
            + "; job details show the decisions")


def _label(spec: dict[str, Any]) -> str:
    return ResourceSpec(spec["cpu"], spec["memory_mb"], spec["gpus"],
                        spec.get("node_label", "")).label()


def _profiles(slots: list[dict[str, Any]]) -> str:
    """Each shared slot's profile, runs of equal ones counted: "3c-3072m, 1c-1024m x 3"."""
    runs: list[list[Any]] = []
    for label in map(_label, slots):
        if runs and runs[-1][0] == label:
            runs[-1][1] += 1
        else:
            runs.append([label, 1])
    return ", ".join(label if n == 1 else f"{label} x {n}" for label, n in runs)


def join_strategies(graph: JobGraph) -> dict[str, str]:
    """Each join's chosen strategy ('broadcast' or 'hash') by its operator's name (a join
    heads its chain)."""
    return {graph.vertices[v].operators[0]: plan.strategy.value
            for v, plan in graph.join_plans.items()}
