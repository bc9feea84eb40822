"""Estimates of every vertex of a pipeline, from its sources' metadata on (the
estimate type itself is the model's, ``yarnflow.core.estimates``)."""
from __future__ import annotations

from typing import Any, Callable, Iterable

from yarnflow.core.estimates import UNKNOWN, Estimate


def estimate_vertices(order: Iterable[Any],
                      inputs_of: Callable[[Any], list[Any]]) -> dict[str, Estimate]:
    """Estimates of every vertex (given producers before consumers), keyed by vertex id.
    An operator whose estimate fails is unknown rather than fatal: estimates guide the
    plan, they never stop a job."""
    estimates: dict[str, Estimate] = {}
    for vertex in order:
        inputs = [estimates.get(v.id, UNKNOWN) for v in inputs_of(vertex)]
        try:
            estimate = vertex.operator.value.estimate(inputs)
        except Exception:      # noqa: BLE001 - e.g. an input only the cluster can see
            estimate = UNKNOWN
        estimates[vertex.id] = estimate if isinstance(estimate, Estimate) else UNKNOWN
    return estimates
