"""ResourceSpec: what one operator's subtask needs; slot profiles are sums of them."""
from __future__ import annotations

import re

from yarnflow.core.units import parse_memory_mb

# YARN's own rule for a node label's name (CommonNodeLabelsManager.checkAndThrowLabelName)
_NODE_LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,254}")


def check_node_label(label: str) -> str:
    """``label`` if YARN would take it as a node label's name; "" is the default partition."""
    if label and not _NODE_LABEL.fullmatch(label):
        raise ValueError(f"{label!r} is not a YARN node label: letters, digits, '-' and '_', "
                         "starting with a letter or digit")
    return label


class NodeLabelConflict(ValueError):
    """Two operators that share a slot name different node labels."""


class ResourceSpec:
    """Cores and memory one subtask of an operator needs (Flink's ResourceSpec).

    ``ResourceSpec(cpu=2, memory="3g")``. A slot shared by several operators needs the
    sum of their specs, and its container is sized from that sum, so a CPU-heavy
    operator gets many cores and a memory-heavy one much memory.

    ``node_label`` names the YARN partition (node label) the containers of this
    profile must run in, e.g. ``"highmem"`` for a memory-heavy operator on a cluster
    whose large-memory hosts carry that label (Spark's
    ``spark.yarn.executor.nodeLabelExpression``, per profile). It is part of the
    profile: a slot serves only profiles of its own label, and a slot shared by an
    operator with a label and others without one gets the label.

    ``gpus`` must stay 0: YARN is not asked for GPUs (see the error a non-zero value
    raises for the way to reach GPU hosts).
    """

    __slots__ = ("cpu", "memory_mb", "gpus", "node_label", "_identity", "_hash")

    def __init__(self, cpu: float, memory: int | str, gpus: int = 0,
                 node_label: str = "") -> None:
        if cpu <= 0:
            raise ValueError(f"ResourceSpec cpu must be positive, got {cpu}")
        self.cpu = float(cpu)
        self.memory_mb = parse_memory_mb(memory)
        if self.memory_mb <= 0:
            raise ValueError(f"ResourceSpec memory must be positive, got {memory!r}")
        if gpus:
            # refused, not ignored: YARN would never be asked for them, and a job that
            # counts on a GPU would run on whatever host without one
            raise ValueError(f"ResourceSpec(gpus={gpus}): yarnflow does not ask YARN for GPUs "
                             "(its yarn.io/gpu resource type); fix: drop gpus=, and put the "
                             "operator on the GPU hosts with a node label of theirs, "
                             "ResourceSpec(..., node_label='gpu')")
        self.gpus = 0
        self.node_label = check_node_label(node_label)
        # what equality and hashing compare, made once: the SlotPool's indexes hash a
        # profile for every slot request
        self._identity = (round(self.cpu, 6), self.memory_mb, self.gpus, node_label)
        self._hash = hash(self._identity)

    def __add__(self, other: "ResourceSpec") -> "ResourceSpec":
        return ResourceSpec(self.cpu + other.cpu, self.memory_mb + other.memory_mb,
                            self.gpus + other.gpus, merged_label(self, other))

    def __mul__(self, factor: int) -> "ResourceSpec":
        return ResourceSpec(self.cpu * factor, self.memory_mb * factor, self.gpus * factor,
                            self.node_label)

    def with_label(self, node_label: str) -> "ResourceSpec":
        """The same cores and memory in the YARN partition ``node_label``."""
        return ResourceSpec(self.cpu, self.memory_mb, self.gpus, node_label)

    def with_memory(self, memory_mb: int) -> "ResourceSpec":
        """The same cores and label with ``memory_mb`` megabytes."""
        return ResourceSpec(self.cpu, memory_mb, self.gpus, self.node_label)

    def fits_in(self, other: "ResourceSpec") -> bool:
        """Whether a slot of ``other`` serves this profile: enough of everything, and
        the same node label (a labelled profile must not run outside its partition,
        nor an unlabelled one take a labelled partition's slots)."""
        return self.node_label == other.node_label and self.within(other)

    def within(self, limit: "ResourceSpec") -> bool:
        """Whether this much fits under a size limit (the largest container), whatever
        the labels."""
        return (self.cpu <= limit.cpu + 1e-9 and self.memory_mb <= limit.memory_mb
                and self.gpus <= limit.gpus)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ResourceSpec) and self._identity == other._identity

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        gpus = f", gpus={self.gpus}" if self.gpus else ""
        label = f", node_label={self.node_label!r}" if self.node_label else ""
        return f"ResourceSpec(cpu={self.cpu:g}, memory={self.memory_mb}m{gpus}{label})"

    def label(self) -> str:
        """A short name for a worker spec: ``2c-3072m``, ``8c-16384m@highmem``."""
        gpus = f"-{self.gpus}g" if self.gpus else ""
        where = f"@{self.node_label}" if self.node_label else ""
        return f"{self.cpu:g}c-{self.memory_mb}m{gpus}{where}"


def merged_label(a: ResourceSpec, b: ResourceSpec) -> str:
    """The node label of a slot that serves both: the one they name, if any."""
    if a.node_label and b.node_label and a.node_label != b.node_label:
        raise NodeLabelConflict(f"node labels {a.node_label!r} and {b.node_label!r} cannot "
                                "share a slot")
    return a.node_label or b.node_label
