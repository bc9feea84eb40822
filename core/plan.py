"""A JobGraph's plan as data: what ``yarnflow explain`` prints before a run and what
the web UI draws during one, so both show the same vertices, inputs and estimates."""
from __future__ import annotations

from typing import Any

from yarnflow.core.estimates import UNKNOWN
from yarnflow.core.jobgraph import JobGraph
from yarnflow.core.resources import ResourceSpec


def spec_json(spec: ResourceSpec) -> dict[str, Any]:
    labelled = {"node_label": spec.node_label} if spec.node_label else {}
    return {"cpu": spec.cpu, "memory_mb": spec.memory_mb, "gpus": spec.gpus, **labelled}


def plan_vertices(graph: JobGraph, default_slot: ResourceSpec) -> list[dict[str, Any]]:
    """Every vertex in topological order with its parallelism, subtask profile, the
    planner's estimate of its output and each input's producer, ship strategy and
    exchange (PIPELINED or BLOCKING)."""
    vertices = []
    for vertex in graph.topological_order():
        estimate = vertex.estimate or UNKNOWN
        vertices.append({
            "id": vertex.id, "name": vertex.name, "operators": list(vertex.operators),
            "parallelism": vertex.parallelism,
            "slot_sharing_group": vertex.slot_sharing_group or "",
            "subtask_profile": spec_json(vertex.resources or default_slot),
            "uses_spark": vertex.uses_spark,
            "adaptive": vertex.adaptive,      # parallelism decided at run time
            "estimate": {"rows": estimate.rows, "bytes": estimate.bytes,
                         "from": estimate.origin},
            "inputs": [{"index": e.target_input, "producer": e.source.name,
                        "producer_id": e.source.id, "ship": e.ship.name, "keys": list(e.keys),
                        "exchange": e.partition_type.name} for e in graph.inputs_of(vertex)]})
    return vertices
