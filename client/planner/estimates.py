"""Row and byte estimates, from the sources' metadata through every operator.

Each operator says what it does to its inputs' estimates (``Operator.estimate``); the
base class carries its first input's estimate unchanged, so an operator that knows
nothing better (a map, a flat_map, Spark SQL) keeps the estimate instead of dropping
it — the fix seed 003 proposes for Flink's FlatMapNode.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable


@dataclass(frozen=True)
class Estimate:
    """Rows and in-memory (Arrow) bytes; None where unknown."""
    rows: int | None = None
    bytes: int | None = None

    @property
    def known(self) -> bool:
        return self.bytes is not None

    def __str__(self) -> str:
        rows = "? rows" if self.rows is None else f"{self.rows:,} rows"
        return f"{rows}, {format_bytes(self.bytes)}"


UNKNOWN = Estimate()


def format_bytes(size: int | None) -> str:
    if size is None:
        return "? bytes"
    value = float(size)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def estimate_vertices(order: Iterable[Any],
                      inputs_of: Callable[[Any], list[Any]]) -> dict[str, Estimate]:
    """Estimates of every vertex (given producers before consumers), keyed by vertex id.
    An operator whose estimate fails is unknown rather than fatal: estimates guide the
    plan, they never stop a job."""
    estimates: dict[str, Estimate] = {}
    for vertex in order:
        inputs = [estimates.get(v.id, UNKNOWN) for v in inputs_of(vertex)]
        try:
            estimate = vertex.operator.estimate(inputs)
        except Exception:      # noqa: BLE001 - e.g. an input only the cluster can see
            estimate = UNKNOWN
        estimates[vertex.id] = estimate if isinstance(estimate, Estimate) else UNKNOWN
    return estimates
