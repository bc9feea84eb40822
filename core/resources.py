"""ResourceSpec: what one operator's subtask needs; slot profiles are sums of them."""
from __future__ import annotations

from yarnflow.core.units import parse_memory_mb


class ResourceSpec:
    """Cores and memory one subtask of an operator needs (Flink's ResourceSpec).

    ``ResourceSpec(cpu=2, memory="3g")``. A slot shared by several operators needs the
    sum of their specs, and its container is sized from that sum, so a CPU-heavy
    operator gets many cores and a memory-heavy one much memory.
    """

    __slots__ = ("cpu", "memory_mb", "gpus", "_identity", "_hash")

    def __init__(self, cpu: float, memory: int | str, gpus: int = 0) -> None:
        if cpu <= 0:
            raise ValueError(f"ResourceSpec cpu must be positive, got {cpu}")
        self.cpu = float(cpu)
        self.memory_mb = parse_memory_mb(memory)
        if self.memory_mb <= 0:
            raise ValueError(f"ResourceSpec memory must be positive, got {memory!r}")
        self.gpus = int(gpus)
        # what equality and hashing compare, made once: the SlotPool's indexes hash a
        # profile for every slot request
        self._identity = (round(self.cpu, 6), self.memory_mb, self.gpus)
        self._hash = hash(self._identity)

    def __add__(self, other: "ResourceSpec") -> "ResourceSpec":
        return ResourceSpec(self.cpu + other.cpu, self.memory_mb + other.memory_mb,
                            self.gpus + other.gpus)

    def __mul__(self, factor: int) -> "ResourceSpec":
        return ResourceSpec(self.cpu * factor, self.memory_mb * factor, self.gpus * factor)

    def fits_in(self, other: "ResourceSpec") -> bool:
        return (self.cpu <= other.cpu + 1e-9 and self.memory_mb <= other.memory_mb
                and self.gpus <= other.gpus)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ResourceSpec) and self._identity == other._identity

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        gpus = f", gpus={self.gpus}" if self.gpus else ""
        return f"ResourceSpec(cpu={self.cpu:g}, memory={self.memory_mb}m{gpus})"

    def label(self) -> str:
        """A short name for a worker spec: ``2c-3072m``."""
        gpus = f"-{self.gpus}g" if self.gpus else ""
        return f"{self.cpu:g}c-{self.memory_mb}m{gpus}"
