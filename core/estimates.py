"""Row and byte estimates, from the sources' metadata through every operator.

Each operator says what it does to its inputs' estimates (``Operator.estimate``); the
base class carries its first input's estimate unchanged, so an operator that knows
nothing better (a map, a flat_map, Spark SQL) keeps the estimate instead of dropping
it — the fix seed 003 proposes for Flink's FlatMapNode.
"""
from __future__ import annotations

from dataclasses import dataclass



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
