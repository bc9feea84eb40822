"""Row and byte estimates, from the sources' metadata through every operator.

Each operator says what it does to its inputs' estimates (``Operator.estimate``); the
base class carries its first input's estimate unchanged, so an operator that knows
nothing better (a map, a flat_map, Spark SQL) keeps the estimate instead of dropping
it — the fix seed 003 proposes for Flink's FlatMapNode.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace


@dataclass(frozen=True)
class Estimate:
    """Rows and in-memory (Arrow) bytes; None where unknown. ``origin`` says where it
    came from (``explain`` shows it), and takes no part in comparisons."""
    rows: int | None = None
    bytes: int | None = None
    origin: str = field(default="", compare=False)

    @property
    def known(self) -> bool:
        return self.bytes is not None

    def __str__(self) -> str:
        rows = "? rows" if self.rows is None else f"{self.rows:,} rows"
        return f"{rows}, {format_bytes(self.bytes)}"


UNKNOWN = Estimate()


@dataclass(frozen=True)
class EstimateHint:
    """A user's correction of what an operator emits, for the planner: a
    ``selectivity`` (output rows and bytes per input row and byte) and/or a ``size``
    (output bytes), as Spark's and Flink's optimizers cannot know what user code does."""
    selectivity: float | None = None
    size: int | None = None

    def __post_init__(self) -> None:
        if self.selectivity is not None and not self.selectivity > 0:
            raise ValueError(f"selectivity must be above 0, got {self.selectivity}")
        if self.size is not None and not self.size > 0:
            raise ValueError(f"size must be above 0 bytes, got {self.size}")

    def apply(self, estimate: Estimate) -> Estimate:
        rows, size = estimate.rows, estimate.bytes
        if self.selectivity is not None:
            rows = None if rows is None else int(rows * self.selectivity)
            size = None if size is None else int(size * self.selectivity)
        if self.size is not None:
            size = self.size
        return replace(estimate, rows=rows, bytes=size, origin="the user's hint")


def format_bytes(size: int | None) -> str:
    if size is None:
        return "? bytes"
    value = float(size)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")
