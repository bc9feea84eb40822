"""Slot memory sized from measured bytes (adaptive batch execution, issue 36 item 4).

A slot of an operator without a ResourceSpec gets ``read-factor`` times the bytes its
largest subtask reads, at least the minimum, rounded up to the next of a few sizes
(the minimum doubled until the maximum). The client declares those sizes up front (a
per-job application's containers are named when it is submitted), and the
ApplicationMaster rounds each decision up to one of them, so a handful of container
sizes serve every stage and an idle executor of one size can serve the next stage
that fits it.
"""
from __future__ import annotations

from dataclasses import dataclass

from yarnflow.core.resources import ResourceSpec


@dataclass(frozen=True)
class SlotMemory:
    enabled: bool = True
    min_mb: int = 64
    max_mb: int = 8192
    per_byte: float = 3.0
    exact: bool = True       # only an executor of its size serves a sized slot

    def rungs(self) -> list[int]:
        """Every size a sized slot may get, smallest first."""
        sizes, size = [], max(1, self.min_mb)
        while size < self.max_mb:
            sizes.append(size)
            size *= 2
        sizes.append(max(self.min_mb, self.max_mb))
        return sizes

    def for_bytes(self, read: int) -> int:
        """The memory (MB) of a slot whose largest subtask reads ``read`` bytes."""
        wanted = max(self.min_mb, self.per_byte * read / 2**20)
        return next((size for size in self.rungs() if size >= wanted), self.rungs()[-1])

    def profiles(self, default: ResourceSpec) -> list[ResourceSpec]:
        return [default.with_memory(size) for size in self.rungs()]
