"""Estimates of every vertex of a pipeline, from its sources' metadata on (the
estimate type itself is the model's, ``yarnflow.core.estimates``)."""
from __future__ import annotations

from typing import Any, Callable, Iterable

from yarnflow.core.estimates import UNKNOWN, Estimate, EstimateHint
from yarnflow.core.jobgraph import InvalidPipelineError
from yarnflow.core.units import parse_bytes


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


def estimate_hint(vertex: str, selectivity: float | None, size: int | str | None) -> EstimateHint | None:
    """A user's ``selectivity=``/``size=`` hint on an operator, refused in one line when
    it is none."""
    if selectivity is None and size is None:
        return None
    try:
        return EstimateHint(selectivity, None if size is None else parse_bytes(size))
    except ValueError as err:
        raise InvalidPipelineError(vertex, f"estimate hint: {err}",
                                   "give selectivity as a number above 0 (0.01: 1 % of the "
                                   "input) and size as bytes or '200 mb'") from None
